"""Settings of the sweep run (``python -m benchmarks sweep``), each field its own option."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.runs.option_types import at_least_zero, int_list, positive_int
from benchmarks.runs.options import option, out_option, ready_timeout_option, url_option


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    """Everything ``python -m benchmarks sweep`` can be told (fields in ``--help`` order).

    Attributes:
        url: the service root, ``http://127.0.0.1:PORT``.
        collection: the collection to sweep (bare or ``<bundle>:<collection>``); its index must
            take ``nprobe`` (IVF) or ``ef_search`` (HNSW).
        out_dir: where the command line writes the report (not used by the run itself).
        queries: stored items sampled (seeded) as queries.
        values: the parameter values to measure; ``None``: the values of the build's tuning
            sweep (``GET /v1/collections``), else the default value alone.
        warmup_requests: unrecorded searches before each value's measured ones.
        seed: the sample of query items.
        variant: encoder variant; the service default when ``None``.
        ready_timeout_s: longest wait for ``GET /readyz``, seconds.
        request_timeout_s: per-request timeout, seconds.
    """

    url: str = field(metadata=url_option())
    collection: str = field(
        metadata=option("--collection", required=True, help="collection with an IVF or HNSW index")
    )
    out_dir: Path | None = field(default=None, metadata=out_option("sweep.json/.md/.png"))
    queries: int = field(
        default=200,
        metadata=option("--queries", parse=positive_int, help="stored items as queries (200)"),
    )
    values: tuple[int, ...] | None = field(
        default=None,
        metadata=option(
            "--values",
            parse=int_list,
            help="parameter values to measure (default: the build's tuning sweep, then two "
            "doublings past its chosen value)",
        ),
    )
    warmup_requests: int = field(
        default=20,
        metadata=option(
            "--warmup", parse=int, convert=at_least_zero, help="warm-up searches per value (20)"
        ),
    )
    seed: int = field(default=0, metadata=option("--seed", parse=int, help="query sample (0)"))
    variant: str | None = field(
        default=None, metadata=option("--variant", help="encoder variant (service default)")
    )
    ready_timeout_s: float = field(default=120.0, metadata=ready_timeout_option())
    request_timeout_s: float = field(
        default=60.0, metadata=option("--timeout", parse=float, help="per-request timeout, s")
    )

    def __post_init__(self) -> None:
        if self.queries < 1:
            raise ValueError("queries must be ≥ 1")
        if self.values is not None and (not self.values or min(self.values) < 1):
            raise ValueError("values must be positive integers")
        if self.warmup_requests < 0:
            raise ValueError("warmup_requests must be ≥ 0")

    def settings(self) -> dict[str, object]:
        """``sweep.json``'s ``settings``: every setting but the URL and folder."""
        return {
            "collection": self.collection,
            "queries": self.queries,
            "values": None if self.values is None else list(self.values),
            "warmup_requests": self.warmup_requests,
            "seed": self.seed,
            "variant": self.variant,
            "ready_timeout_s": self.ready_timeout_s,
            "request_timeout_s": self.request_timeout_s,
        }
