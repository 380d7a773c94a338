"""The run's generator, fit once per configuration on part of the real rows and checked against
the rest; both the generator and its fit check are cached under ``--cache``."""

from __future__ import annotations

import time

import numpy as np

from studies.scale_simulation.cache_layout import fit_check_path, generator_path
from studies.scale_simulation.config import Config
from studies.scale_simulation.fit_check import fit_check
from studies.scale_simulation.generator import Generator
from studies.scale_simulation.json_files import write_json
from studies.scale_simulation.progress import log
from studies.scale_simulation.real_vectors import load_real


def ensure_generator(cfg: Config) -> Generator:
    path = generator_path(cfg)
    fit_json = fit_check_path(cfg)
    if path.is_file() and fit_json.is_file():
        return Generator.load(path)
    real, source = load_real(cfg.real_path, cfg.seed, cfg.bundle)
    rng = np.random.default_rng([cfg.seed, 1])
    order = rng.permutation(len(real))
    if cfg.fit_rows and cfg.fit_rows < len(real):
        real = np.ascontiguousarray(real[order[: cfg.fit_rows]])
        order = rng.permutation(len(real))
    holdout_n = max(500, len(real) // 5)
    fit_rows, holdout = real[order[holdout_n:]], real[order[:holdout_n]]
    log(f"fitting the generator: {len(fit_rows):,} real rows, k={cfg.clusters}, rank={cfg.rank}")
    t0 = time.perf_counter()
    gen = Generator.fit(
        np.ascontiguousarray(fit_rows), cfg.clusters, cfg.rank, cfg.seed, cfg.spread
    )
    fit_s = time.perf_counter() - t0
    gen.save(path)
    log("checking the fit against held-out real vectors")
    check = fit_check(real, gen, np.ascontiguousarray(holdout), cfg.seed)
    check.update(
        source=source,
        real_rows=len(real),
        fit_rows=len(fit_rows),
        holdout_rows=holdout_n,
        clusters=cfg.clusters,
        rank=cfg.rank,
        spread=cfg.spread,
        fit_seconds=fit_s,
    )
    write_json(fit_json, check)
    return gen
