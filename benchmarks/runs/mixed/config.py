"""Settings of the mixed run (``python -m benchmarks mixed``), each field its own option."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from benchmarks.runs.option_types import at_least_zero, positive_float, positive_int
from benchmarks.runs.options import (
    DATA_DIR_ENV,
    no_progress_option,
    option,
    out_option,
    ready_timeout_option,
    url_option,
)

VECTOR_FORMATS: Final = ("base64", "json")
"""How an upserted vector is written: ``vector_base64`` (little-endian float32) or ``vector``."""
COLLECTION_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""A live collection's name, as the service accepts it (``docs/live-collections.md``)."""


def share(text: str) -> float:
    """A share in [0, 1) (argparse type): the command line refuses others at once."""
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected a number: {text!r}") from error
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a share in [0, 1): {text!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class MixedRunConfig:
    """Everything ``python -m benchmarks mixed`` can be told (fields in ``--help`` order).

    Attributes:
        url: the service root, ``http://127.0.0.1:PORT`` (started with a collections folder).
        data_dir: the data folder every run takes; not read (the vectors are seeded random).
        out_dir: where the command line writes the report (not used by the run itself).
        collection: the live collection the run creates (dropped first if it exists).
        dim: the dimension of its client vectors.
        vector_format: ``base64`` (``vector_base64``) or ``json`` (``vector``, a list).
        preload: items written before the measured phases.
        preload_batch: items per preload request.
        searchers: closed-loop search clients, in both phases.
        writers: closed-loop writers in the ``writing`` phase.
        batch: items per upsert, and ids per delete.
        delete_share: the share of a writer's requests that delete its earlier ids.
        phase_s: seconds of each phase.
        k: results per measured search.
        warmup_requests: unrecorded searches before the ``idle`` phase.
        visibility_timeout_s: how long a write not visible at its first read is polled for.
        seed: vectors, queries and the writers' choices.
        keep: leave the collection in place at the end.
        timeout_s: per-request timeout, seconds.
        ready_timeout_s: longest wait for ``GET /readyz``, seconds.
        show_progress: a progress bar of the preload and a line every few seconds on stderr.
    """

    url: str = field(metadata=url_option())
    data_dir: Path | None = field(
        default=None,
        metadata=option(
            "--data",
            parse=Path,
            cli_default_factory=lambda: Path(os.environ.get(DATA_DIR_ENV, "../shared/data")),
            help=f"data folder (${DATA_DIR_ENV} or ../shared/data), taken as by every run; "
            "not read: the vectors are seeded random",
        ),
    )
    out_dir: Path | None = field(default=None, metadata=out_option("mixed.json/.md/.png"))
    collection: str = field(
        default="mixed-bench",
        metadata=option(
            "--collection",
            help="the live collection to create, dropped first if it exists (mixed-bench)",
        ),
    )
    dim: int = field(
        default=384,
        metadata=option("--dim", parse=positive_int, help="dimension of the vectors (384)"),
    )
    vector_format: str = field(
        default="base64",
        metadata=option(
            "--vector-format",
            choices=VECTOR_FORMATS,
            help="upserted vectors as vector_base64 (float32) or a JSON list (base64)",
        ),
    )
    preload: int = field(
        default=20_000,
        metadata=option(
            "--preload",
            parse=int,
            convert=at_least_zero,
            help="items written before the measured phases (20000)",
        ),
    )
    preload_batch: int = field(
        default=1000,
        metadata=option(
            "--preload-batch", parse=positive_int, help="items per preload request (1000)"
        ),
    )
    searchers: int = field(
        default=4,
        metadata=option("--searchers", parse=positive_int, help="closed-loop search clients (4)"),
    )
    writers: int = field(
        default=2,
        metadata=option(
            "--writers", parse=positive_int, help="closed-loop writers while writing (2)"
        ),
    )
    batch: int = field(
        default=100,
        metadata=option(
            "--batch", parse=positive_int, help="items per upsert and ids per delete (100)"
        ),
    )
    delete_share: float = field(
        default=0.1,
        metadata=option(
            "--delete-share",
            parse=share,
            help="share of a writer's requests that delete its earlier ids (0.1)",
        ),
    )
    phase_s: float = field(
        default=20.0,
        metadata=option(
            "--phase-s", parse=positive_float, help="seconds of each phase, idle and writing (20)"
        ),
    )
    k: int = field(
        default=10, metadata=option("--k", parse=positive_int, help="results per search (10)")
    )
    warmup_requests: int = field(
        default=20,
        metadata=option(
            "--warmup", parse=int, convert=at_least_zero, help="unrecorded searches first (20)"
        ),
    )
    visibility_timeout_s: float = field(
        default=5.0,
        metadata=option(
            "--visibility-timeout-s",
            parse=positive_float,
            help="how long a write not seen at its first read is polled for (5)",
        ),
    )
    seed: int = field(
        default=0, metadata=option("--seed", parse=int, help="vectors, queries, choices (0)")
    )
    keep: bool = field(
        default=False,
        metadata=option("--keep", switch=True, help="keep the collection at the end"),
    )
    timeout_s: float = field(
        default=30.0,
        metadata=option("--timeout", parse=positive_float, help="per-request timeout, s (30)"),
    )
    ready_timeout_s: float = field(default=120.0, metadata=ready_timeout_option())
    show_progress: bool = field(
        default=True, metadata=no_progress_option("no progress bar or progress lines")
    )

    def __post_init__(self) -> None:
        if not COLLECTION_NAME.match(self.collection):
            raise ValueError(
                f"collection {self.collection!r}: 1-64 letters, digits, '_', '.' or '-', "
                "starting with a letter or digit"
            )
        counts = {
            "dim": self.dim,
            "preload_batch": self.preload_batch,
            "searchers": self.searchers,
            "writers": self.writers,
            "batch": self.batch,
            "k": self.k,
        }
        for name, value in counts.items():
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if self.preload < 0 or self.warmup_requests < 0:
            raise ValueError("preload and warmup cannot be negative")
        if not 0.0 <= self.delete_share < 1.0:
            raise ValueError(f"delete_share must be in [0, 1), got {self.delete_share}")
        if self.vector_format not in VECTOR_FORMATS:
            raise ValueError(f"vector_format must be one of {VECTOR_FORMATS}")
        for name, seconds in (
            ("phase_s", self.phase_s),
            ("visibility_timeout_s", self.visibility_timeout_s),
            ("timeout_s", self.timeout_s),
        ):
            if not seconds > 0:
                raise ValueError(f"{name} must be positive, got {seconds}")

    def settings(self) -> dict[str, object]:
        """``mixed.json``'s ``settings``: every setting but the URL, the folders and the
        progress switch."""
        return {
            "collection": self.collection,
            "dim": self.dim,
            "vector_format": self.vector_format,
            "preload": self.preload,
            "preload_batch": self.preload_batch,
            "searchers": self.searchers,
            "writers": self.writers,
            "batch": self.batch,
            "delete_share": self.delete_share,
            "phase_s": self.phase_s,
            "k": self.k,
            "warmup_requests": self.warmup_requests,
            "visibility_timeout_s": self.visibility_timeout_s,
            "seed": self.seed,
            "keep": self.keep,
            "timeout_s": self.timeout_s,
        }
