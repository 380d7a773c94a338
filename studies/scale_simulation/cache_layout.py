"""Where a run keeps its files under ``--cache``: the generator, its fit check, and per scale the
vectors, queries, ground truth, coarse quantizer, indexes and measurements."""

from __future__ import annotations

from pathlib import Path

from studies.scale_simulation.config import Config
from studies.scale_simulation.index_kinds import Kind


class Paths:
    def __init__(self, cfg: Config, n: int) -> None:
        self.root = cfg.cache / f"n{n}-{generator_tag(cfg)}"
        self.vectors = self.root / "vectors.npy"
        self.vectors_state = self.root / "vectors.state.json"
        self.queries = self.root / "queries.npy"
        self.gt = self.root / "gt.npz"
        self.coarse = self.root / "coarse.npz"
        self.assign = self.root / "assign.npy"
        self.indexes = self.root / "indexes"
        self.measure = self.root / "measure"

    def index(self, kind: Kind) -> Path:
        return self.indexes / f"{kind.files_slug}.index"

    def ivfdata(self, kind: Kind) -> Path:
        return self.indexes / f"{kind.files_slug}.ivfdata"

    def build_info(self, kind: Kind) -> Path:
        return self.indexes / f"{kind.slug}.build.json"

    def skip_info(self, kind: Kind) -> Path:
        return self.indexes / f"{kind.slug}.skipped.json"

    def result(self, kind: Kind) -> Path:
        return self.measure / f"{kind.slug}.json"

    def ids(self, kind: Kind) -> Path:
        return self.measure / f"{kind.slug}.ids.npz"


def generator_tag(cfg: Config) -> str:
    return f"s{cfg.seed}-k{cfg.clusters}-r{cfg.rank}-x{cfg.spread:g}"


def generator_path(cfg: Config) -> Path:
    return cfg.cache / f"generator-{generator_tag(cfg)}.npz"


def fit_check_path(cfg: Config) -> Path:
    return cfg.cache / f"fit-check-{generator_tag(cfg)}.json"
