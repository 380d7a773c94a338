"""Which faiss index a collection gets: from its size, a memory budget and a target recall.

The one index planning, used by the index builder (``index_builder.index_writer``) and by a
live collection's compaction (:mod:`storage.live.base`). Both are pure and return an
:class:`IndexPlan` — the factory string, the one search parameter to tune and the values to
sweep:

- :func:`plan_index` plans from the row count, the dimension and an :class:`IndexSpec` (the
  builder's ``--index`` options), or refuses an impossible combination with
  :class:`IndexPlanError`;
- :func:`plan_factory` takes a faiss factory string as given (a live collection's ``index``):
  an IVF one with fewer than :data:`MIN_POINTS_PER_CENTROID` rows a list is ``Flat`` instead,
  and an IVF one is tuned over the same ``nprobe`` values as :func:`plan_index` sweeps.

Memory of the index (RAM when served; the bundle's ``vectors.npy`` is mapped beside it for every
kind), ``n`` rows of dimension ``d``:

=========== ======================================================== ==========================
kind        bytes                                                    tuned parameter
=========== ======================================================== ==========================
flat        ``n·4d``                                                 none (exact)
hnsw        ``n·(4d + 2·M·4)`` (vectors + level-0 graph of 2M links) ``efSearch`` 16 … 1024
ivf-flat    ``n·(4d + 8) + nlist·4d`` (vectors, ids, centroids)      ``nprobe`` 1 … nlist
ivf-pq      ``n·(M + 8) + nlist·4d + 256·4d`` (codes, ids, ...)      ``nprobe`` 1 … nlist
=========== ======================================================== ==========================

The ``auto`` rule (docs/indexes.md):

1. **flat** below :data:`FLAT_MAX_ROWS` rows when no budget is given or flat fits it — exact
   search is fast enough there and needs no tuning;
2. else **hnsw** (M = :data:`DEFAULT_HNSW_M`) when n ≤ :data:`HNSW_MAX_ROWS` and its memory fits
   the budget (or there is none);
3. else **ivf-flat** when its memory fits the budget (or there is none);
4. else **ivf-pq** with the largest code (M sub-quantizers dividing d, 8 bits each) that fits;
5. else refused: the budget is below even the smallest IVF-PQ code.

``nlist`` is ≈ 4·√n rounded to a power of two, lowered until each list trains on at least
:data:`MIN_POINTS_PER_CENTROID` points (faiss warns below that).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final, Literal

from storage.manifest import TuningParameter

IndexKind = Literal["flat", "hnsw", "ivf-flat", "ivf-pq", "auto"]
INDEX_KINDS: Final[tuple[IndexKind, ...]] = ("flat", "hnsw", "ivf-flat", "ivf-pq", "auto")
PlanKind = Literal["flat", "hnsw", "ivf-flat", "ivf-pq", "factory"]
"""What a plan builds: one of the planned kinds, or ``factory``, a faiss factory string taken as
given (:func:`plan_factory`) that is none of them."""

FLAT_MAX_ROWS: Final = 100_000
"""Below this many rows ``auto`` keeps exact search (unless the budget says otherwise)."""
HNSW_MAX_ROWS: Final = 5_000_000
"""Above this many rows ``auto`` does not choose HNSW (build time and graph memory grow)."""
DEFAULT_HNSW_M: Final = 32
MIN_POINTS_PER_CENTROID: Final = 39
"""faiss's k-means warns with fewer training points per centroid than this."""
PQ_BITS: Final = 8
PQ_CENTROIDS: Final = 1 << PQ_BITS
PQ_MIN_TRAIN_ROWS: Final = MIN_POINTS_PER_CENTROID * PQ_CENTROIDS
"""9984: each 8-bit sub-quantizer is a k-means of 256 centroids."""
PQ_MAX_SUBVECTOR_DIM: Final = 32
"""``auto`` never splits d into sub-vectors longer than this (codes that coarse lose too much)."""
IVF_TRAIN_ROWS: Final = 50_000
"""The IVF training sample: max(39·nlist, min(n, this)) rows (all rows when n is smaller)."""
EF_SEARCH_VALUES: Final = (16, 32, 64, 128, 256, 512, 1024)
ID_BYTES: Final = 8

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?\s*$", re.IGNORECASE)
_UNITS: Final = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


class IndexPlanError(ValueError):
    """An index specification that cannot be built for this collection."""


@dataclass(frozen=True)
class IndexSpec:
    """What the caller asks for: a kind (or ``auto``), a recall target and optional limits.

    ``m`` is HNSW's M (links per node) for ``hnsw`` and the number of PQ sub-quantizers for
    ``ivf-pq``; ``held_out_queries`` is how many stored rows the tuning queries with;
    ``on_disk`` keeps IVF inverted lists in a ``.ivfdata`` file (IVF kinds only).
    :class:`IndexPlanError` for values out of range and options the kind does not use.
    """

    kind: IndexKind = "auto"
    target_recall: float = 0.95
    memory_budget_bytes: int | None = None
    nlist: int | None = None
    m: int | None = None
    held_out_queries: int = 1000
    seed: int = 0
    on_disk: bool = False

    def __post_init__(self) -> None:
        if self.kind not in INDEX_KINDS:
            raise IndexPlanError(f"index kind {self.kind!r} is not one of {', '.join(INDEX_KINDS)}")
        if not 0.0 < self.target_recall <= 1.0:
            raise IndexPlanError(f"target recall {self.target_recall} is not in (0, 1]")
        if self.memory_budget_bytes is not None and self.memory_budget_bytes < 1:
            raise IndexPlanError(f"memory budget {self.memory_budget_bytes} is not positive")
        if self.nlist is not None and self.nlist < 1:
            raise IndexPlanError(f"nlist {self.nlist} is not positive")
        if self.m is not None and self.m < 1:
            raise IndexPlanError(f"m {self.m} is not positive")
        if self.held_out_queries < 1:
            raise IndexPlanError(f"held_out_queries {self.held_out_queries} is not positive")
        if self.on_disk and self.kind not in ("ivf-flat", "ivf-pq"):
            raise IndexPlanError(
                f"on-disk inverted lists need an IVF index (ivf-flat or ivf-pq), not {self.kind}"
            )
        if self.nlist is not None and self.kind in ("flat", "hnsw"):
            raise IndexPlanError(f"nlist applies to IVF indexes, not {self.kind}")
        if self.m is not None and self.kind in ("flat", "ivf-flat"):
            raise IndexPlanError(
                f"m (HNSW links or PQ sub-quantizers) does not apply to {self.kind}"
            )


@dataclass(frozen=True)
class IndexPlan:
    """The index to build: ``factory`` for faiss, the ``parameter`` to tune over ``candidates``
    (None and () when untuned: flat, or a ``factory`` that is not IVF), the estimated
    ``memory_bytes`` (0 when not estimated: a ``factory`` kind), and a one-line ``reason``."""

    kind: PlanKind
    factory: str
    parameter: TuningParameter | None
    candidates: tuple[int, ...]
    reason: str
    memory_bytes: int
    nlist: int | None = None
    m: int | None = None
    train_rows: int = 0
    """How many rows (a seeded sample) train the index; 0 for kinds that need no training."""
    on_disk: bool = False


def parse_byte_size(text: str) -> int:
    """``512MiB``, ``2GiB``, ``1.5GB``, ``1000000`` → bytes; :class:`IndexPlanError` otherwise."""
    match = _SIZE.match(text)
    if match is None:
        raise IndexPlanError(f"{text!r} is not a size (e.g. 512MiB, 2GiB, 1000000)")
    value = float(match.group(1)) * _UNITS[(match.group(2) or "b").lower()]
    if value < 1:
        raise IndexPlanError(f"{text!r} is not a positive size")
    return int(value)


def default_nlist(count: int) -> int:
    """≈ 4·√n rounded to a power of two, at most n / 39 (≥ 1)."""
    nlist = 1 << max(0, round(math.log2(max(1.0, 4.0 * math.sqrt(count)))))
    while nlist > 1 and nlist * MIN_POINTS_PER_CENTROID > count:
        nlist //= 2
    return nlist


def flat_bytes(count: int, dim: int) -> int:
    """Memory of a flat index."""
    return count * 4 * dim


def hnsw_bytes(count: int, dim: int, m: int) -> int:
    """Memory of an HNSW index: vectors + the level-0 graph (2·M int32 links a node)."""
    return count * (4 * dim + 2 * m * 4)


def ivf_flat_bytes(count: int, dim: int, nlist: int) -> int:
    """Memory of an IVF-Flat index: vectors and ids in the lists, plus the centroids."""
    return count * (4 * dim + ID_BYTES) + nlist * 4 * dim


def ivf_pq_bytes(count: int, dim: int, nlist: int, m: int) -> int:
    """Memory of an IVF-PQ index: M-byte codes and ids, centroids, PQ codebooks."""
    return count * (m + ID_BYTES) + nlist * 4 * dim + PQ_CENTROIDS * 4 * dim


def _ivf_train_rows(count: int, nlist: int, pq: bool) -> int:
    wanted = max(MIN_POINTS_PER_CENTROID * nlist, IVF_TRAIN_ROWS, PQ_MIN_TRAIN_ROWS if pq else 0)
    return min(count, wanted)


def _nprobe_values(nlist: int) -> tuple[int, ...]:
    values = []
    value = 1
    while value < nlist:
        values.append(value)
        value *= 2
    values.append(nlist)
    return tuple(values)


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _fits(size: int, budget: int | None) -> bool:
    return budget is None or size <= budget


def _ivf_nlist(count: int, spec: IndexSpec) -> int:
    if spec.nlist is None:
        nlist = default_nlist(count)
        if nlist * MIN_POINTS_PER_CENTROID > count:
            raise IndexPlanError(
                f"an IVF index needs at least {MIN_POINTS_PER_CENTROID} rows to train; "
                f"the collection has {count} (use flat)"
            )
        return nlist
    if spec.nlist * MIN_POINTS_PER_CENTROID > count:
        raise IndexPlanError(
            f"nlist={spec.nlist} needs at least {MIN_POINTS_PER_CENTROID}·{spec.nlist} = "
            f"{MIN_POINTS_PER_CENTROID * spec.nlist} rows to train; the collection has {count} "
            f"(at most nlist={max(1, count // MIN_POINTS_PER_CENTROID)})"
        )
    return spec.nlist


def _pq_m_choices(dim: int) -> list[int]:
    """Sub-quantizer counts ``auto`` may use: divisors of d, sub-vectors ≤ 32 long, ascending."""
    return [m for m in range(1, dim + 1) if dim % m == 0 and dim // m <= PQ_MAX_SUBVECTOR_DIM]


def _default_pq_m(count: int, dim: int, spec: IndexSpec) -> int:
    """ivf-pq without m: the largest code within the budget, else d/4 bytes (4-dim sub-vectors,
    16x smaller than the floats) or the nearest divisor of d below that."""
    choices = _pq_m_choices(dim) or [dim]
    budget = spec.memory_budget_bytes
    if budget is not None:
        nlist = spec.nlist or default_nlist(count)
        fitting = [m for m in choices if ivf_pq_bytes(count, dim, nlist, m) <= budget]
        if fitting:
            return max(fitting)
    return max([m for m in choices if m <= max(1, dim // 4)] or [min(choices)])


def _plan_flat(count: int, dim: int, reason: str) -> IndexPlan:
    return IndexPlan("flat", "Flat", None, (), reason, flat_bytes(count, dim))


def _plan_hnsw(count: int, dim: int, spec: IndexSpec, reason: str) -> IndexPlan:
    m = spec.m or DEFAULT_HNSW_M
    memory = hnsw_bytes(count, dim, m)
    return IndexPlan("hnsw", f"HNSW{m},Flat", "efSearch", EF_SEARCH_VALUES, reason, memory, m=m)


def _plan_ivf_flat(count: int, dim: int, spec: IndexSpec, reason: str) -> IndexPlan:
    nlist = _ivf_nlist(count, spec)
    return IndexPlan(
        "ivf-flat",
        f"IVF{nlist},Flat",
        "nprobe",
        _nprobe_values(nlist),
        reason,
        ivf_flat_bytes(count, dim, nlist),
        nlist=nlist,
        train_rows=_ivf_train_rows(count, nlist, pq=False),
        on_disk=spec.on_disk,
    )


def _plan_ivf_pq(count: int, dim: int, spec: IndexSpec, m: int, reason: str) -> IndexPlan:
    if dim % m:
        raise IndexPlanError(f"ivf-pq: m={m} sub-quantizers do not divide the dimension {dim}")
    if count < PQ_MIN_TRAIN_ROWS:
        raise IndexPlanError(
            f"ivf-pq needs at least {PQ_MIN_TRAIN_ROWS} rows to train {PQ_BITS}-bit codes "
            f"({MIN_POINTS_PER_CENTROID}·{PQ_CENTROIDS}); the collection has {count} "
            "(use flat or ivf-flat)"
        )
    nlist = _ivf_nlist(count, spec)
    return IndexPlan(
        "ivf-pq",
        f"IVF{nlist},PQ{m}x{PQ_BITS}",
        "nprobe",
        _nprobe_values(nlist),
        reason,
        ivf_pq_bytes(count, dim, nlist, m),
        nlist=nlist,
        m=m,
        train_rows=_ivf_train_rows(count, nlist, pq=True),
        on_disk=spec.on_disk,
    )


def ivf_lists(factory: str) -> int | None:
    """The inverted lists of an IVF factory string (``IVF<nlist>,...``); None for any other."""
    head = factory.split(",")[0]
    if head.startswith("IVF") and head[3:].isdigit():
        return int(head[3:])
    return None


def plan_factory(count: int, dim: int, factory: str) -> IndexPlan:
    """The plan for the faiss ``factory`` string taken as given, over ``count`` rows of
    dimension ``dim`` (a live collection's base, trained on every row; see the module doc).

    An IVF factory whose lists cannot each train on :data:`MIN_POINTS_PER_CENTROID` rows is
    ``Flat`` instead; an IVF factory is tuned by ``nprobe`` over the values :func:`plan_index`
    sweeps; any other factory is built as it is, untuned.
    """
    nlist = ivf_lists(factory)
    if factory == "Flat":
        return _plan_flat(count, dim, "Flat: given (exact search)")
    if nlist is not None and nlist * MIN_POINTS_PER_CENTROID > count:
        return _plan_flat(
            count,
            dim,
            f"{factory}: given, but {count} rows are fewer than {MIN_POINTS_PER_CENTROID} a list "
            f"for {nlist} lists: exact search instead",
        )
    if nlist is None:
        return IndexPlan("factory", factory, None, (), f"{factory}: given, untuned", 0)
    ivf_flat = factory == f"IVF{nlist},Flat"
    return IndexPlan(
        "ivf-flat" if ivf_flat else "factory",
        factory,
        "nprobe",
        _nprobe_values(nlist),
        f"{factory}: given, nprobe tuned",
        ivf_flat_bytes(count, dim, nlist) if ivf_flat else 0,
        nlist=nlist,
        train_rows=count,
    )


def _plan_auto(count: int, dim: int, spec: IndexSpec) -> IndexPlan:
    budget = spec.memory_budget_bytes
    said = "no budget" if budget is None else f"budget {_mib(budget)}"
    flat = flat_bytes(count, dim)
    if count < FLAT_MAX_ROWS and _fits(flat, budget):
        return _plan_flat(
            count,
            dim,
            f"auto: {count} rows < {FLAT_MAX_ROWS} and flat ({_mib(flat)}) fits ({said}): "
            "exact search is fast enough",
        )
    hnsw = hnsw_bytes(count, dim, spec.m or DEFAULT_HNSW_M)
    if count <= HNSW_MAX_ROWS and _fits(hnsw, budget):
        return _plan_hnsw(count, dim, spec, f"auto: {count} rows, HNSW needs {_mib(hnsw)} ({said})")
    nlist = spec.nlist or default_nlist(count)
    ivf = ivf_flat_bytes(count, dim, nlist)
    if _fits(ivf, budget):
        why = "over the HNSW row limit" if count > HNSW_MAX_ROWS else f"HNSW {_mib(hnsw)} does not"
        return _plan_ivf_flat(
            count, dim, spec, f"auto: {count} rows, {why}; IVF-Flat needs {_mib(ivf)} ({said})"
        )
    assert budget is not None
    choices = [spec.m] if spec.m is not None else _pq_m_choices(dim)
    fitting = [m for m in choices if ivf_pq_bytes(count, dim, nlist, m) <= budget]
    if not fitting:
        smallest = min(choices)
        raise IndexPlanError(
            f"memory budget {_mib(budget)} is below even IVF-PQ with {smallest} byte codes "
            f"({_mib(ivf_pq_bytes(count, dim, nlist, smallest))} for {count} rows of dim {dim})"
        )
    m = max(fitting)
    return _plan_ivf_pq(
        count,
        dim,
        spec,
        m,
        f"auto: {count} rows, IVF-Flat {_mib(ivf)} over {said}; IVF-PQ with {m}-byte codes "
        f"needs {_mib(ivf_pq_bytes(count, dim, nlist, m))}",
    )


def plan_index(count: int, dim: int, spec: IndexSpec) -> IndexPlan:
    """The index for ``count`` rows of dimension ``dim`` under ``spec`` (see the module doc).

    Raises :class:`IndexPlanError` for combinations that cannot be built (those independent of
    the collection are refused already by :class:`IndexSpec`): ``m`` not dividing ``dim`` for
    ivf-pq, more lists than the rows can train, too few rows for 8-bit PQ, an explicit kind over
    the budget, a budget below the smallest IVF-PQ code.
    """
    if count < 1 or dim < 1:
        raise IndexPlanError(f"cannot plan an index for {count} rows of dimension {dim}")
    if spec.kind == "auto":
        plan = _plan_auto(count, dim, spec)
    elif spec.kind == "flat":
        plan = _plan_flat(count, dim, "flat: requested (exact search)")
    elif spec.kind == "hnsw":
        plan = _plan_hnsw(count, dim, spec, "hnsw: requested")
    elif spec.kind == "ivf-flat":
        plan = _plan_ivf_flat(count, dim, spec, "ivf-flat: requested")
    else:
        m = spec.m if spec.m is not None else _default_pq_m(count, dim, spec)
        plan = _plan_ivf_pq(count, dim, spec, m, f"ivf-pq: requested, {m}-byte codes")
    budget = spec.memory_budget_bytes
    if spec.kind != "auto" and budget is not None and plan.memory_bytes > budget:
        raise IndexPlanError(
            f"{plan.kind} ({plan.factory}) needs about {_mib(plan.memory_bytes)} for {count} rows "
            f"of dim {dim}, over the memory budget of {_mib(budget)} (try --index auto)"
        )
    if plan.kind in ("hnsw", "ivf-flat", "ivf-pq") and count < 2:
        raise IndexPlanError("an approximate index needs at least 2 rows to tune")
    return plan
