"""Settings of the hostile-clients run (``python -m benchmarks hostile``), each field its own
option."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.runs.option_types import at_least_zero, positive_float, positive_int
from benchmarks.runs.options import (
    data_option,
    option,
    out_option,
    ready_timeout_option,
    url_option,
)


@dataclass(frozen=True, kw_only=True)
class HostileRunConfig:
    """Everything ``python -m benchmarks hostile`` can be told (fields in ``--help`` order).

    Attributes:
        url: the service root, ``http://127.0.0.1:PORT``.
        data_dir: data folder holding ``coco-karpathy-captions/captions_<split>.csv`` (the
            honest client's query texts).
        split: split name in the captions file name.
        out_dir: where the command line writes the report (not used by the run itself).
        stalled_bodies: stalled-body connections the crowd holds at once.
        slowloris: slowloris connections the crowd holds at once.
        declared_bytes: the body length a stalled body declares.
        sent_bytes: the body bytes a stalled body sends before it stops.
        line_interval_s: seconds between a slowloris connection's header lines.
        duration_s: seconds the honest client searches alone.
        attack_s: seconds it searches beside the crowd (longer than the service's body deadline
            to see stalled bodies closed).
        warmup_requests: unrecorded honest searches first.
        head_timeout_s: the service's ``head_timeout_s``, to judge the closes against.
        body_timeout_s: the service's ``body_timeout_s``, likewise.
        crowd_ready_s: longest wait for the crowd to be open before the measured phase.
        collection: the searched collection.
        k: results per search.
        timeout_s: the honest client's per-request timeout, seconds.
        seed: caption order.
        ready_timeout_s: longest wait for ``GET /readyz``, seconds.
    """

    url: str = field(metadata=url_option())
    data_dir: Path = field(metadata=data_option("coco-karpathy-captions/"))
    split: str = field(
        default="val", metadata=option("--split", help="captions_<split>.csv to take queries from")
    )
    out_dir: Path | None = field(default=None, metadata=out_option("hostile.json/.md/.png"))
    stalled_bodies: int = field(
        default=200,
        metadata=option(
            "--stalled-bodies",
            parse=int,
            convert=at_least_zero,
            help="stalled-body connections held at once (200)",
        ),
    )
    slowloris: int = field(
        default=1000,
        metadata=option(
            "--slowloris",
            parse=int,
            convert=at_least_zero,
            help="slowloris connections held at once (1000)",
        ),
    )
    declared_bytes: int = field(
        default=100_000,
        metadata=option(
            "--declared-bytes", parse=positive_int, help="body length a stalled body declares"
        ),
    )
    sent_bytes: int = field(
        default=10,
        metadata=option(
            "--sent-bytes", parse=positive_int, help="body bytes sent before stalling (10)"
        ),
    )
    line_interval_s: float = field(
        default=5.0,
        metadata=option(
            "--line-interval-s",
            parse=positive_float,
            help="seconds between a slowloris connection's header lines (5)",
        ),
    )
    duration_s: float = field(
        default=30.0,
        metadata=option(
            "--duration-s", parse=positive_float, help="seconds of honest searches alone (30)"
        ),
    )
    attack_s: float = field(
        default=75.0,
        metadata=option(
            "--attack-s",
            parse=positive_float,
            help="seconds of honest searches beside the crowd (75: past the default body deadline)",
        ),
    )
    warmup_requests: int = field(
        default=50,
        metadata=option(
            "--warmup", parse=int, convert=at_least_zero, help="unrecorded searches first (50)"
        ),
    )
    head_timeout_s: float = field(
        default=10.0,
        metadata=option(
            "--head-timeout-s",
            parse=positive_float,
            help="the service's head_timeout_s, to judge the closes against (10)",
        ),
    )
    body_timeout_s: float = field(
        default=60.0,
        metadata=option(
            "--body-timeout-s",
            parse=positive_float,
            help="the service's body_timeout_s, to judge the closes against (60)",
        ),
    )
    crowd_ready_s: float = field(
        default=30.0,
        metadata=option(
            "--crowd-ready-s",
            parse=positive_float,
            help="longest wait for the crowd to be open (30)",
        ),
    )
    collection: str = field(
        default="captions",
        metadata=option("--collection", help="the searched collection (captions)"),
    )
    k: int = field(default=10, metadata=option("--k", parse=positive_int, help="results (10)"))
    timeout_s: float = field(
        default=30.0,
        metadata=option("--timeout", parse=positive_float, help="per-request timeout, s (30)"),
    )
    seed: int = field(default=0, metadata=option("--seed", parse=int, help="caption order (0)"))
    ready_timeout_s: float = field(default=120.0, metadata=ready_timeout_option())

    def __post_init__(self) -> None:
        if self.stalled_bodies + self.slowloris < 1:
            raise ValueError("the crowd needs at least one connection")
        if self.sent_bytes >= self.declared_bytes:
            raise ValueError("a stalled body must send less than it declares")

    def settings(self) -> dict[str, object]:
        """``hostile.json``'s ``settings``: every setting but the URL and folders."""
        return {
            "split": self.split,
            "stalled_bodies": self.stalled_bodies,
            "slowloris": self.slowloris,
            "declared_bytes": self.declared_bytes,
            "sent_bytes": self.sent_bytes,
            "line_interval_s": self.line_interval_s,
            "duration_s": self.duration_s,
            "attack_s": self.attack_s,
            "warmup_requests": self.warmup_requests,
            "head_timeout_s": self.head_timeout_s,
            "body_timeout_s": self.body_timeout_s,
            "collection": self.collection,
            "k": self.k,
            "seed": self.seed,
        }
