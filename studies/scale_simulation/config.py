"""The settings of one run, from the command line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Config:
    cache: Path
    report: Path
    seed: int
    clusters: int
    rank: int
    spread: float
    queries: int
    train_sample: int
    shards: int
    max_ram_index_gib: float
    hnsw_max: int
    flat_max: int
    stream_queries: int
    ondisk_queries: int
    max_nprobe_ondisk_flat: int
    real_path: Path | None
    bundle: Path
    build_threads: int
    fit_rows: int
    pq: tuple[int, ...]
    machine_gib: float
    cores: int
    target_qps: tuple[int, ...]
    extra: dict[str, Any] = field(default_factory=dict)
