"""Search parameters of one search: what kind of index a collection has, the parameters in force
by default, and a request's override checked against the index and turned into faiss's
per-search parameters.

A collection's index is ``flat``, ``hnsw``, ``ivf_flat``, ``ivf_pq`` or ``other``
(:func:`index_kind`). An IVF index takes ``nprobe`` (1..its ``nlist``), an HNSW index
``ef_search``; a flat index takes neither. ``exact`` searches the stored vectors exactly
whatever the index is. :func:`resolve` checks a request's :class:`SearchOverride` against a
collection and raises :class:`~service.exceptions.SearchParamNotApplicableError` when it does
not fit; the search core then passes the values to faiss with each search
(:func:`faiss_parameters`: ``SearchParametersIVF(nprobe=...)``,
``SearchParametersHNSW(efSearch=...)``), never by setting them on the shared index, which
concurrent searches read.

A GPU-placed index (:class:`service.engine.rank.gpu_index.GpuSearchIndex`) is described by its CPU
original; a search with an ``nprobe`` override runs on that CPU original (faiss's GPU indexes
take no per-search parameters), a search without one on the GPU as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import faiss

from service.engine.rank.gpu_index import GpuSearchIndex
from service.exceptions import SearchParamNotApplicableError
from storage.reader import LoadedCollection

IndexKind = Literal["flat", "hnsw", "ivf_flat", "ivf_pq", "other"]
"""What ``/v1/collections`` calls a collection's index."""

_swig: Any = faiss  # the parameter classes are missing from faiss's stubs


@dataclass(frozen=True, slots=True)
class SearchOverride:
    """A request's search parameters: ``nprobe`` (IVF), ``ef_search`` (HNSW), or ``exact``
    (search the stored vectors exactly); None: the collection's defaults."""

    nprobe: int | None = None
    ef_search: int | None = None
    exact: bool = False


@dataclass(frozen=True, slots=True)
class EffectiveParams:
    """The parameters one search runs with: ``exact`` (numpy over the stored vectors), else the
    index's ``nprobe`` / ``ef_search`` (None where the index has none); ``overridden`` says
    whether they differ from what the index does by itself (then they are passed to faiss per
    search)."""

    exact: bool = False
    nprobe: int | None = None
    ef_search: int | None = None
    overridden: bool = False

    def as_dict(self) -> dict[str, int | bool]:
        """What the response reports: ``{"exact": true}``, ``{"nprobe": 16}``,
        ``{"ef_search": 64}``, or ``{}`` for a flat index searched as it is."""
        if self.exact:
            return {"exact": True}
        found: dict[str, int | bool] = {}
        if self.nprobe is not None:
            found["nprobe"] = self.nprobe
        if self.ef_search is not None:
            found["ef_search"] = self.ef_search
        return found


DEFAULT_PARAMS = EffectiveParams()
"""No override, on an index without parameters (and what a fake index gets)."""


def cpu_index(index: Any) -> Any:
    """The CPU index behind ``index`` (a GPU-placed one's original, else itself)."""
    return index.cpu if isinstance(index, GpuSearchIndex) else index


def _ivf_of(index: Any) -> Any | None:
    """The IVF index inside ``index`` (itself, or under a pre-transform), or None."""
    if isinstance(index, (faiss.IndexFlat, faiss.IndexHNSW)):
        # Asked on every search: faiss answers these by raising, which costs 0.1 ms a request.
        return None
    try:
        return faiss.extract_index_ivf(index)
    except (RuntimeError, TypeError, AttributeError):  # not IVF, or not a faiss index (a fake)
        return None


def _hnsw_of(index: Any) -> Any | None:
    """``index`` when it is an HNSW index (it has an ``hnsw`` graph), else None."""
    return index if isinstance(index, faiss.IndexHNSW) else None


_FACTORY_KINDS: tuple[tuple[re.Pattern[str], IndexKind], ...] = (
    (re.compile(r"^Flat$"), "flat"),
    (re.compile(r"^HNSW\d+(,Flat)?$"), "hnsw"),
    (re.compile(r"^IVF\d+,Flat$"), "ivf_flat"),
    (re.compile(r"^IVF\d+,PQ\d+(x\d+)?$"), "ivf_pq"),
)


def index_kind(collection: LoadedCollection) -> IndexKind:
    """``flat``, ``hnsw``, ``ivf_flat``, ``ivf_pq`` or ``other``: from the faiss type of the
    collection's (CPU) index, or — for an index that is not faiss's own — its factory
    string."""
    index = cpu_index(collection.index)
    if isinstance(index, faiss.IndexFlat):
        return "flat"
    if _hnsw_of(index) is not None:
        return "hnsw"
    if isinstance(index, faiss.IndexIVFFlat):
        return "ivf_flat"
    if type(index) is faiss.IndexIVFPQ:
        return "ivf_pq"
    if isinstance(index, faiss.Index):  # another IVF (SQ, pre-transformed), LSH, ...
        return "other"
    factory = collection.factory.replace(" ", "")
    return next((kind for pattern, kind in _FACTORY_KINDS if pattern.match(factory)), "other")


def on_disk(collection: LoadedCollection) -> bool:
    """Whether the collection's IVF index keeps its inverted lists in a file on disk
    (``OnDiskInvertedLists``) rather than in memory."""
    ivf = _ivf_of(cpu_index(collection.index))
    if ivf is None:
        return False
    lists = faiss.downcast_InvertedLists(ivf.invlists)
    return isinstance(lists, faiss.OnDiskInvertedLists)


def default_params(collection: LoadedCollection) -> EffectiveParams:
    """The parameters a search without an override runs with: the index's own ``nprobe`` or
    ``efSearch`` (the manifest's, set when the bundle was loaded)."""
    index = cpu_index(collection.index)
    ivf = _ivf_of(index)
    if ivf is not None:
        return EffectiveParams(nprobe=int(ivf.nprobe))
    hnsw = _hnsw_of(index)
    if hnsw is not None:
        return EffectiveParams(ef_search=int(hnsw.hnsw.efSearch))
    return DEFAULT_PARAMS


@dataclass(frozen=True, slots=True)
class IndexFacts:
    """What checking a search's parameters reads of an index: its kind, its factory string (for
    messages), the parameters in force by default and an IVF index's ``nlist``. Plain data: a
    shard on another process sends its own (:func:`index_facts`) to the view that plans over
    it."""

    kind: IndexKind
    factory: str
    defaults: EffectiveParams
    nlist: int | None = None
    """An IVF index's number of lists (None: not IVF; ``nprobe`` does not apply)."""
    hnsw: bool = False
    """Whether the index is HNSW (``ef_search`` applies)."""


def index_facts(collection: LoadedCollection) -> IndexFacts:
    """The :class:`IndexFacts` of ``collection``'s index."""
    index = cpu_index(collection.index)
    ivf = _ivf_of(index)
    return IndexFacts(
        kind=index_kind(collection),
        factory=collection.factory,
        defaults=default_params(collection),
        nlist=None if ivf is None else int(ivf.nlist),
        hnsw=_hnsw_of(index) is not None,
    )


def resolve(
    collection: LoadedCollection, override: SearchOverride | None, where: str
) -> EffectiveParams:
    """The parameters a search of ``collection`` runs with under ``override`` (None: the
    defaults): :func:`resolve_facts` of its :func:`index_facts`."""
    if override is None:
        return default_params(collection)
    return resolve_facts(index_facts(collection), override, where)


def resolve_facts(
    facts: IndexFacts, override: SearchOverride | None, where: str
) -> EffectiveParams:
    """The parameters a search of an index described by ``facts`` runs with under ``override``
    (None: the defaults).

    Raises :class:`SearchParamNotApplicableError` when the override does not fit the index:
    ``nprobe`` on an index that is not IVF or above its ``nlist``, ``ef_search`` on an index
    that is not HNSW. ``where`` locates the parameters in the request (``search_params``).
    """
    defaults = facts.defaults
    if override is None:
        return defaults
    if override.exact:
        return EffectiveParams(exact=True, overridden=True)
    kind, factory = facts.kind, facts.factory
    nprobe, ef_search = defaults.nprobe, defaults.ef_search
    if override.nprobe is not None:
        if facts.nlist is None:
            raise SearchParamNotApplicableError(
                f"{where}.nprobe: the collection's index is {kind} ({factory}); "
                "nprobe applies to IVF indexes only",
                param=f"{where}.nprobe",
            )
        if override.nprobe > facts.nlist:
            raise SearchParamNotApplicableError(
                f"{where}.nprobe: {override.nprobe} is more than the index's nlist="
                f"{facts.nlist} (its number of inverted lists); at most {facts.nlist}",
                param=f"{where}.nprobe",
            )
        nprobe = override.nprobe
    if override.ef_search is not None:
        if not facts.hnsw:
            raise SearchParamNotApplicableError(
                f"{where}.ef_search: the collection's index is {kind} ({factory}); "
                "ef_search applies to HNSW indexes only",
                param=f"{where}.ef_search",
            )
        ef_search = override.ef_search
    overridden = (nprobe, ef_search) != (defaults.nprobe, defaults.ef_search)
    return EffectiveParams(nprobe=nprobe, ef_search=ef_search, overridden=overridden)


def faiss_parameters(index: Any, params: EffectiveParams, selector: Any | None) -> Any | None:
    """faiss's per-search parameters for ``index`` (a CPU faiss index): the ID ``selector``
    (None: every row) and, when ``params`` override them, ``nprobe`` / ``efSearch`` (else the
    index's own values, so a selector search keeps them). None when there is nothing to pass
    (no selector, no override): the index is searched as it is."""
    if selector is None and not params.overridden:
        return None
    ivf = _ivf_of(index)
    inner: Any
    if ivf is not None:
        nprobe = params.nprobe if params.nprobe is not None else int(ivf.nprobe)
        inner = _swig.SearchParametersIVF(sel=selector, nprobe=nprobe)
    elif _hnsw_of(index) is not None:
        ef = params.ef_search if params.ef_search is not None else int(index.hnsw.efSearch)
        inner = _swig.SearchParametersHNSW(sel=selector, efSearch=ef)
    else:
        inner = _swig.SearchParameters(sel=selector)
    if selector is not None:
        inner.referenced_selector = selector  # the parameters must keep the selector alive
    if ivf is not None and ivf is not index and isinstance(index, faiss.IndexPreTransform):
        # A pre-transformed IVF index (OPQ, PCA) passes its inner index's parameters on.
        outer = _swig.SearchParametersPreTransform(index_params=inner)
        outer.referenced_inner = inner
        return outer
    return inner
