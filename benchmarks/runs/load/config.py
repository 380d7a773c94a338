"""Settings of the load run (``python -m benchmarks load``), each field its own option."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.runs.option_types import (
    at_least_zero,
    float_list,
    int_list,
    open_rates,
    positive_float,
    positive_int,
)
from benchmarks.runs.options import (
    data_option,
    option,
    out_option,
    ready_timeout_option,
    url_option,
)

DEFAULT_FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.25, 1.5, 2.0)
"""Open-loop offered rates as fractions of the closed-loop saturation throughput."""


@dataclass(frozen=True, kw_only=True)
class LoadRunConfig:
    """Everything ``python -m benchmarks load`` can be told (fields in ``--help`` order).

    Attributes:
        url: the service root, ``http://127.0.0.1:PORT``.
        data_dir: data folder holding ``coco-karpathy-captions/captions_<split>.csv``.
        split: split name in the captions file name.
        out_dir: where the command line writes the report (not used by the run itself).
        closed_levels: closed-loop concurrencies (workers = connections).
        open_rates: open-loop offered rates, requests/s; ``None`` = ``open_fractions`` of the
            saturation throughput; ``()`` = no open loop.
        open_fractions: multiples of saturation used when ``open_rates`` is ``None``.
        duration_s: longest a level sends, seconds (closed: no start after it; open: the
            measured schedule's length, after the warm-up).
        max_requests: most requests per level.
        warmup_requests: unrecorded requests before each closed level.
        open_warmup_s: open loop: seconds of each level's arrivals sent before the measured
            ``duration_s`` (the service adapts to a new load meanwhile); reported apart as the
            level's ``onset``.
        max_connections: open loop: most connections at once.
        drain_s: open loop: how long answers are awaited after the last intended send, seconds.
        settle_s: longest wait for the service to drain between open levels, seconds.
        timeout_s: per-request timeout on the wire, seconds.
        k: results per search.
        collection: the searched collection.
        variant: encoder variant; the service default when ``None``.
        include_metadata: ask for each hit's metadata (what an app does).
        seed: caption order and Poisson schedules.
        inprocess_json: ``scripts/bench_inprocess.py`` output, for the efficiency ratio.
        ready_timeout_s: longest wait for ``GET /readyz``, seconds.
    """

    url: str = field(metadata=url_option())
    data_dir: Path = field(metadata=data_option("coco-karpathy-captions/"))
    split: str = field(
        default="val", metadata=option("--split", help="captions_<split>.csv to take queries from")
    )
    out_dir: Path | None = field(default=None, metadata=out_option("load.json/.md/.png"))
    closed_levels: tuple[int, ...] = field(
        default=(1, 8, 32),
        metadata=option("--closed", parse=int_list, help="closed-loop clients (1,8,32)"),
    )
    open_rates: tuple[float, ...] | None = field(
        default=None,
        metadata=option(
            "--open-rates",
            parse=open_rates,
            help="open-loop offered rates in requests/s (r1,r2,...), 'auto' = --open-fractions of "
            "the closed-loop saturation throughput, or 'none' (auto)",
        ),
    )
    open_fractions: tuple[float, ...] = field(
        default=DEFAULT_FRACTIONS,
        metadata=option(
            "--open-fractions",
            parse=float_list,
            help="multiples of saturation for --open-rates auto "
            f"({','.join(f'{value:g}' for value in DEFAULT_FRACTIONS)})",
        ),
    )
    duration_s: float = field(
        default=20.0,
        metadata=option("--duration-s", parse=positive_float, help="seconds per level (20)"),
    )
    max_requests: int = field(
        default=20_000,
        metadata=option("--requests", parse=positive_int, help="most requests per level (20000)"),
    )
    warmup_requests: int = field(
        default=50,
        metadata=option(
            "--warmup",
            parse=int,
            convert=at_least_zero,
            help="unrecorded requests before a closed level (50)",
        ),
    )
    open_warmup_s: float = field(
        default=2.0,
        metadata=option(
            "--open-warmup-s",
            parse=float,
            convert=at_least_zero,
            help="open loop: seconds at each level's rate before the measured ones, reported apart "
            "as the level's warm-up (2)",
        ),
    )
    max_connections: int = field(
        default=256,
        metadata=option(
            "--max-connections",
            parse=positive_int,
            help="open loop: most connections at once; more requests wait in the client (256)",
        ),
    )
    drain_s: float = field(
        default=10.0,
        metadata=option(
            "--drain-s",
            parse=float,
            convert=at_least_zero,
            help="open loop: seconds answers are awaited after the last intended send (10)",
        ),
    )
    settle_s: float = field(
        default=30.0,
        metadata=option(
            "--settle-s",
            parse=float,
            convert=at_least_zero,
            help="longest wait for the service to drain between open levels, seconds (30)",
        ),
    )
    timeout_s: float = field(
        default=10.0, metadata=option("--timeout", parse=positive_float, help="per request, s (10)")
    )
    k: int = field(
        default=10, metadata=option("--k", parse=positive_int, help="results per search (10)")
    )
    collection: str = field(
        default="captions", metadata=option("--collection", help="searched collection (captions)")
    )
    variant: str | None = field(
        default=None, metadata=option("--variant", help="encoder variant (service default)")
    )
    include_metadata: bool = field(
        default=True,
        metadata=option(
            "--no-metadata",
            switch=True,
            negate=True,
            help="send include_metadata=false (default: true)",
        ),
    )
    seed: int = field(
        default=0, metadata=option("--seed", parse=int, help="query order and schedules (0)")
    )
    inprocess_json: Path | None = field(
        default=None,
        metadata=option(
            "--inprocess-json",
            parse=Path,
            help="scripts/bench_inprocess.py output, for the efficiency ratio",
        ),
    )
    ready_timeout_s: float = field(default=120.0, metadata=ready_timeout_option())

    def __post_init__(self) -> None:
        if not self.closed_levels or min(self.closed_levels) < 1:
            raise ValueError("closed_levels must hold concurrencies ≥ 1")
        if self.open_rates is not None and any(rate <= 0 for rate in self.open_rates):
            raise ValueError("open rates must be > 0")
        if not self.open_fractions or min(self.open_fractions) <= 0:
            raise ValueError("open fractions must be > 0")
        if self.duration_s <= 0 or self.drain_s < 0 or self.timeout_s <= 0:
            raise ValueError("need duration_s > 0, drain_s ≥ 0, timeout_s > 0")
        if self.open_warmup_s < 0:
            raise ValueError("open_warmup_s must be ≥ 0")
        if self.max_requests < 1 or self.warmup_requests < 0 or self.max_connections < 1:
            raise ValueError("need max_requests ≥ 1, warmup_requests ≥ 0, max_connections ≥ 1")
        if self.k < 1:
            raise ValueError("k must be ≥ 1")
