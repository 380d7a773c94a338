"""The cider run (``python -m benchmarks cider``, ``make cider``): build or reuse a split's
CIDEr-D matrix, then check it against the per-pair reference implementation.

Phases: ``matrix`` (:func:`evaluation.data.cider_cache.load_or_build_cider`) and ``parity``
(:func:`evaluation.metrics.cider_parity.parity_check` on random pairs plus their own-image pairs,
float64 and stored values, tolerance 1e-6; skipped with ``parity_pairs`` = 0). The command prints
the :class:`CiderSummary` as JSON and exits 1 on a parity failure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, NotRequired, TypedDict, cast

from benchmarks.runs.options import data_option, no_progress_option, option
from benchmarks.runs.phases import Phase, run_phases
from evaluation.data.cider_cache import CachedCider, load_or_build_cider
from evaluation.metrics.cider_parity import parity_check
from formats.karpathy import read_captions
from formats.layout import captions_path


@dataclass(frozen=True, kw_only=True)
class CiderRunConfig:
    """Settings of the cider run (fields in ``--help`` order).

    Attributes:
        data_dir: the data folder (``coco-karpathy-captions/captions_<split>.csv``).
        split: the split name.
        cache_dir: the cache folder (as the quality run's ``--cider-cache``).
        parity_pairs: random (caption, image) pairs checked (own-image pairs come on top);
            0 skips the check.
        seed: the pair sampling seed.
        rebuild: compute the matrix even when a matching cache exists.
        show_progress: tqdm bar while computing.
    """

    data_dir: Path = field(metadata=data_option("coco-karpathy-captions/"))
    split: str = field(default="val", metadata=option("--split", help="captions_<split>.csv (val)"))
    cache_dir: Path | None = field(
        default=None, metadata=option("--cache", parse=Path, help="cache folder (as cxc)")
    )
    parity_pairs: int = field(
        default=2000, metadata=option("--parity-pairs", parse=int, help="random pairs (2000)")
    )
    seed: int = field(
        default=0, metadata=option("--seed", parse=int, help="pair sampling seed (0)")
    )
    rebuild: bool = field(
        default=False, metadata=option("--rebuild", switch=True, help="ignore a matching cache")
    )
    show_progress: bool = field(default=True, metadata=no_progress_option("no progress bar"))


class CiderSummary(TypedDict):
    """What ``python -m benchmarks cider`` prints: the cache facts
    (:meth:`evaluation.data.cider_cache.CachedCider.as_report`) and, with a parity check,
    ``parity`` (:class:`evaluation.metrics.cider_parity.ParityResult`), ``parity_seconds`` and
    ``parity_ok``."""

    cache_file: str
    captions_sha256: str
    built: bool
    build_seconds: float
    shape: list[int]
    dtype: str
    settings: dict[str, object]
    parity: NotRequired[dict[str, object]]
    parity_seconds: NotRequired[float]
    parity_ok: NotRequired[bool]


@dataclass
class CiderContext:
    """The run's settings, and the matrix and its summary once built."""

    config: CiderRunConfig
    cached: CachedCider | None = None
    summary: CiderSummary | None = None


async def matrix_phase(context: CiderContext) -> None:
    """Build the split's matrix, or reuse a matching cache."""
    config = context.config
    context.cached = load_or_build_cider(
        config.data_dir,
        config.split,
        config.cache_dir,
        show_progress=config.show_progress,
        rebuild=config.rebuild,
    )
    context.summary = cast(CiderSummary, context.cached.as_report())


async def parity_phase(context: CiderContext) -> None:
    """The stored and float64 matrices against the per-pair reference on random pairs."""
    config, cached, summary = context.config, context.cached, context.summary
    if config.parity_pairs <= 0 or cached is None or summary is None:
        return
    started = time.perf_counter()
    parity = parity_check(
        read_captions(captions_path(config.data_dir, config.split)),
        config.parity_pairs,
        config.seed,
        cached.scores,
    )
    summary["parity"] = parity.as_report()
    summary["parity_seconds"] = round(time.perf_counter() - started, 1)
    summary["parity_ok"] = parity.ok


PHASES: Final[tuple[Phase[CiderContext], ...]] = (
    Phase("matrix", matrix_phase),
    Phase("parity", parity_phase),
)


async def run_cider(config: CiderRunConfig) -> CiderSummary:
    """Run :data:`PHASES` and return the summary.

    Raises:
        FormatError / ValueError / OSError: the captions file is missing or malformed.
    """
    context = CiderContext(config)
    await run_phases(PHASES, context)
    if context.summary is None:
        raise ValueError("the CIDEr-D matrix was not built")
    return context.summary
