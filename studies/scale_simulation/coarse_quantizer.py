"""The coarse quantizer the IVF kinds share: two-level spherical k-means on a sample, and every
database row assigned to the best sub-centroid of its best top cell."""

from __future__ import annotations

import math
import time

import faiss
import numpy as np

from studies.scale_simulation.cache_layout import Paths
from studies.scale_simulation.config import Config
from studies.scale_simulation.dataset import row_chunks
from studies.scale_simulation.index_kinds import nlist_for
from studies.scale_simulation.progress import log
from studies.scale_simulation.vectors import DIM, F32, I64, normalise


def spherical_kmeans(x: F32, k: int, seed: int, niter: int) -> F32:
    if len(x) <= k:  # too few points: the points themselves, padded with jittered copies
        rng = np.random.default_rng([seed, k])
        picks = x[rng.integers(0, len(x), k)] + rng.normal(0, 0.01, (k, x.shape[1]))
        picks[: len(x)] = x
        return normalise(picks.astype(np.float32))
    km = faiss.Kmeans(
        x.shape[1], k, niter=niter, seed=seed, spherical=True, min_points_per_centroid=1
    )
    km.train(np.ascontiguousarray(x))
    return np.asarray(km.centroids, np.float32)


def assign_two_level(x: F32, top: F32, sub: F32) -> I64:
    """Nearest sub-centroid (max inner product) inside the nearest top cell."""
    per = len(sub) // len(top)
    cell = np.argmax(x @ top.T, axis=1)
    out = np.empty(len(x), np.int64)
    for t in np.unique(cell):
        rows = np.flatnonzero(cell == t)
        block = sub[t * per : (t + 1) * per]
        out[rows] = t * per + np.argmax(x[rows] @ block.T, axis=1)
    return out


def ensure_coarse(cfg: Config, n: int, p: Paths) -> dict[str, float]:
    if p.coarse.is_file() and p.assign.is_file():
        with np.load(p.coarse) as z:
            return {"train_s": float(z["train_s"]), "assign_s": float(z["assign_s"])}
    nlist = nlist_for(n)
    side = math.isqrt(nlist)
    vectors = np.load(p.vectors, mmap_mode="r")
    # rows are i.i.d. draws, so the first rows are a random sample
    sample = np.ascontiguousarray(vectors[: min(n, cfg.train_sample)])
    log(f"  two-level k-means: {side} x {side} = {nlist} lists on {len(sample):,} rows")
    t0 = time.perf_counter()
    top = spherical_kmeans(sample, side, cfg.seed, 20)
    cell = np.argmax(sample @ top.T, axis=1)
    sub = np.zeros((nlist, DIM), np.float32)
    for t in range(side):
        sub[t * side : (t + 1) * side] = spherical_kmeans(sample[cell == t], side, cfg.seed + t, 12)
    train_s = time.perf_counter() - t0
    log(f"  coarse quantizer trained in {train_s:.0f} s; assigning {n:,} rows")
    t0 = time.perf_counter()
    assign = np.lib.format.open_memmap(
        p.assign.with_suffix(".tmp.npy"), mode="w+", dtype=np.int64, shape=(n,)
    )
    for lo, hi in row_chunks(n):
        assign[lo:hi] = assign_two_level(np.asarray(vectors[lo:hi]), top, sub)
    assign.flush()
    del assign
    assign_s = time.perf_counter() - t0
    p.assign.with_suffix(".tmp.npy").replace(p.assign)
    tmp = p.coarse.with_suffix(".tmp.npz")
    np.savez(tmp, top=top, sub=sub, train_s=np.float64(train_s), assign_s=np.float64(assign_s))
    tmp.replace(p.coarse)
    log(f"  assigned in {assign_s:.0f} s")
    return {"train_s": train_s, "assign_s": assign_s}
