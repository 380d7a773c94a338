"""The synthetic data set of one scale: the vectors memmap written chunk by chunk (resumable),
the held-out queries and their exact top-K."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from studies.scale_simulation.cache_layout import Paths
from studies.scale_simulation.config import Config
from studies.scale_simulation.generator import Generator
from studies.scale_simulation.ground_truth import K, exact_topk_blocks
from studies.scale_simulation.json_files import write_json
from studies.scale_simulation.progress import log
from studies.scale_simulation.vectors import DIM

CHUNK_ROWS = 250_000


def ensure_vectors(cfg: Config, gen: Generator, n: int, p: Paths) -> None:
    state: dict[str, Any] = {}
    if p.vectors_state.is_file():
        state = json.loads(p.vectors_state.read_text())
        if state.get("done"):
            return
    done_rows = int(state.get("rows", 0)) if p.vectors.is_file() else 0
    before = float(state.get("seconds", 0.0)) if done_rows else 0.0
    mode = "r+" if done_rows else "w+"
    mm = np.lib.format.open_memmap(p.vectors, mode=mode, dtype=np.float32, shape=(n, DIM))
    t0 = time.perf_counter()
    for chunk, lo in enumerate(range(0, n, CHUNK_ROWS)):
        hi = min(lo + CHUNK_ROWS, n)
        if hi <= done_rows:
            continue
        mm[lo:hi] = gen.sample(hi - lo, np.random.default_rng([cfg.seed, 100, n, chunk]))
        mm.flush()
        spent = before + time.perf_counter() - t0
        write_json(p.vectors_state, {"rows": hi, "done": False, "seconds": spent})
        if chunk % 4 == 3 or hi == n:
            log(f"  generated {hi:,}/{n:,} rows ({time.perf_counter() - t0:.0f} s)")
    del mm
    spent = before + time.perf_counter() - t0
    write_json(p.vectors_state, {"rows": n, "done": True, "seconds": spent})


def ensure_queries_and_gt(cfg: Config, gen: Generator, n: int, p: Paths) -> None:
    if not p.queries.is_file():
        q = gen.sample(cfg.queries, np.random.default_rng([cfg.seed, 200, n]))
        np.save(p.queries, q)
    if p.gt.is_file():
        return
    q = np.load(p.queries)
    vectors = np.load(p.vectors, mmap_mode="r")
    t0 = time.perf_counter()
    scores, ids = exact_topk_blocks(vectors, q)
    seconds = time.perf_counter() - t0
    tmp = p.gt.with_suffix(".tmp.npz")
    np.savez(tmp, scores=scores, ids=ids, seconds=np.float64(seconds))
    tmp.replace(p.gt)
    log(f"  exact top-{K} of {len(q):,} queries over {n:,} rows: {seconds:.0f} s")


def row_chunks(n: int, rows: int = CHUNK_ROWS) -> Iterator[tuple[int, int]]:
    for lo in range(0, n, rows):
        yield lo, min(lo + rows, n)
