"""Simulation at scale (issue 17, part 4): faiss index kinds on 1M and 10M synthetic embeddings.

A seeded generator is fit to the real MiniLM caption embeddings of the ``coco-captions`` bundle
(k-means, then per cluster a low-rank Gaussian: the top ``--rank`` principal components of the
cluster's residuals plus an isotropic remainder carrying the rest of its variance; the cluster
weights are the k-means cluster sizes). Sampling draws a cluster, adds a residual and
L2-normalises. The fit is checked against held-out real vectors (nearest-neighbour cosine,
pairwise cosine, explained-variance spectrum, recall of one IVF configuration).

For each ``--scales`` size the ``build`` phase writes, under ``--cache`` (default
``artifacts/scale``, git-ignored), a float32 ``[n, 384]`` ``.npy`` memmap written chunk by chunk,
``--queries`` held-out queries from the same generator, their exact top-10 (numpy matmul in
blocks), and the indexes: Flat, HNSW32, IVF-Flat, IVF-PQ48, IVF-PQ96 and IVF-PQ48 with on-disk
inverted lists (shards of the add are written and merged with ``faiss.contrib.ondisk``). IVF
kinds share one coarse quantizer (two-level spherical k-means on a sample; database vectors are
assigned two-level, queries probe an exact flat quantizer). Large kinds that would not fit the
memory budget are built on disk (IVF-Flat) or skipped with the reason (HNSW, Flat is then
measured by streaming the memmap).

The ``measure`` phase starts one process per index kind (``--phase measure-one``), which loads
the index, reads ``/proc/self/smaps_rollup`` and the Rss of the index file mappings, then times
single queries with one thread after a warm-up for each parameter value (nprobe, efSearch) and
saves the returned ids; recall@10 is computed tie-aware against the exact top-10. The ``report``
phase writes ``report.md``, ``results.json`` and the plots to ``--report`` (``reports/scale``).

Example::

    .venv/bin/python scripts/scale_simulation.py --scales 1000000            # all phases
    .venv/bin/python scripts/scale_simulation.py --scales 1000000,10000000 --phase measure
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

REPO = Path(__file__).resolve().parent.parent
BUNDLE = REPO / "artifacts" / "bundles" / "coco-captions"
DIM = 384
K = 10
SEED = 20261125
CHUNK_ROWS = 250_000
NPROBES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
EF_SEARCHES = (16, 32, 64, 128, 256, 512)
TIE_EPS = 1e-5
# The re-rank kind asks the PQ index for this many candidates and re-scores them exactly from the
# float32 vectors (a memmap, as the service holds every bundle's vectors.npy).
RERANK = 100
GIB = 1024**3
DISK_MARGIN = 20 * 10**9  # disk left free for the other engineers on the machine


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def write_json(path: Path, payload: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def normalise(x: F32) -> F32:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    x /= norms
    return x


# --------------------------------------------------------------------------------------------
# Real vectors and the generator


def load_real(path: Path | None, seed: int) -> tuple[F32, str]:
    """The real caption embeddings (C-contiguous float32), or a seeded stand-in when missing."""
    if path is None:
        current = BUNDLE / "CURRENT"
        if current.is_file():
            folder = BUNDLE / current.read_text().strip()
            manifest = json.loads((folder / "manifest.json").read_text())
            name = manifest["collections"]["captions"]["vectors_file"]
            path = folder / name
    if path is not None and path.is_file():
        real = np.ascontiguousarray(np.load(path), dtype=np.float32)
        return normalise(real), str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
    # Stand-in: a mixture of 200 random directions with low-rank spread (not the real data), as
    # tight as the captions (neighbour cosine p50 ~0.6-0.7 on a few thousand rows).
    rng = np.random.default_rng([seed, 7])
    centres = normalise(rng.standard_normal((200, DIM), dtype=np.float32))
    basis = rng.standard_normal((200, 16, DIM), dtype=np.float32) * 0.012
    labels = rng.integers(0, 200, size=25_000)
    z = rng.standard_normal((25_000, 16), dtype=np.float32)
    x = centres[labels] + np.einsum("nr,nrd->nd", z, basis[labels])
    x += rng.standard_normal(x.shape, dtype=np.float32) * 0.008
    return normalise(x.astype(np.float32)), "seeded stand-in (bundle missing)"


@dataclass
class Generator:
    """A mixture of low-rank Gaussians fit to real embeddings; samples are L2-normalised."""

    means: F32  # [k, d]
    weights: F64  # [k]
    comps: F32  # [k, r, d], principal directions scaled by sqrt(eigenvalue)
    noise: F32  # [k], isotropic std of the remaining variance

    @classmethod
    def fit(cls, real: F32, clusters: int, rank: int, seed: int, spread: float = 1.0) -> Generator:
        d = real.shape[1]
        km = faiss.Kmeans(d, clusters, niter=25, seed=seed, min_points_per_centroid=1)
        km.train(real)
        _, labels = km.index.search(real, 1)
        labels = labels.ravel()
        means = np.zeros((clusters, d), np.float32)
        comps = np.zeros((clusters, rank, d), np.float32)
        noise = np.zeros(clusters, np.float32)
        counts = np.bincount(labels, minlength=clusters).astype(np.float64)
        for c in range(clusters):
            members = real[labels == c].astype(np.float64)
            if len(members) == 0:
                continue
            means[c] = members.mean(axis=0)
            if len(members) < 2:
                continue
            resid = members - means[c]
            _, s, vt = np.linalg.svd(resid, full_matrices=False)
            eig = s**2 / (len(members) - 1)
            r = min(rank, len(eig))
            comps[c, :r] = vt[:r] * np.sqrt(eig[:r])[:, None]
            noise[c] = math.sqrt(float(eig[r:].sum()) / (d - r))
        single = counts == 1
        if single.any():  # a one-member cluster gets the median isotropic spread
            noise[single] = float(np.median(noise[counts > 1]))
        return cls(means, counts / counts.sum(), comps * spread, noise * spread)

    def sample(self, n: int, rng: np.random.Generator) -> F32:
        k, r, d = self.comps.shape
        labels = rng.choice(k, size=n, p=self.weights)
        order = np.argsort(labels, kind="stable")
        counts = np.bincount(labels, minlength=k)
        out = np.empty((n, d), np.float32)
        start = 0
        for c in np.flatnonzero(counts):
            m = int(counts[c])
            rows = order[start : start + m]
            start += m
            x = rng.standard_normal((m, d), dtype=np.float32)
            x *= self.noise[c]
            x += rng.standard_normal((m, r), dtype=np.float32) @ self.comps[c]
            x += self.means[c]
            out[rows] = x
        return normalise(out)

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, means=self.means, weights=self.weights, comps=self.comps, noise=self.noise)
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Generator:
        with np.load(path) as z:
            return cls(z["means"], z["weights"], z["comps"], z["noise"])


def nn_cosines(x: F32) -> F32:
    """Cosine of each row's nearest other row (exact, inner product on unit vectors)."""
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    scores, _ = index.search(x, 2)
    return np.asarray(scores[:, 1], dtype=np.float32)


def pair_cosines(x: F32, rng: np.random.Generator, pairs: int = 20_000) -> F32:
    a = rng.integers(0, len(x), pairs)
    b = rng.integers(0, len(x), pairs)
    keep = a != b
    return np.asarray(np.einsum("nd,nd->n", x[a[keep]], x[b[keep]]), dtype=np.float32)


def spectrum(x: F32, top: int = 64) -> list[float]:
    centred = x.astype(np.float64) - x.mean(axis=0)
    s = np.linalg.svd(centred, compute_uv=False)
    var = s**2
    return [float(v) for v in (var / var.sum())[:top]]


def ivf_recall_curve(x: F32, queries: int, nlist: int, seed: int) -> dict[int, float]:
    """Recall@10 of IVF<nlist>,Flat (IP) vs exact, for nprobe 1..16, on the last rows as queries."""
    db, q = x[:-queries], x[-queries:]
    gt_scores, gt_ids = exact_topk_inmemory(db, q)
    quantizer = faiss.IndexFlatIP(x.shape[1])
    index = faiss.IndexIVFFlat(quantizer, x.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = seed
    index.train(db)
    index.add(db)
    curve: dict[int, float] = {}
    for nprobe in (1, 2, 4, 8, 16):
        index.nprobe = nprobe
        _, ids = index.search(q, K)
        curve[nprobe] = tie_aware_recall(ids, gt_scores, q, lambda rows: db[rows])
    del gt_ids
    return curve


def fit_check(real: F32, gen: Generator, holdout: F32, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, 3])
    synth = gen.sample(len(holdout), rng)
    uniform = normalise(rng.standard_normal(holdout.shape, dtype=np.float32))
    sets = {"real (held out)": holdout, "synthetic": synth, "uniform noise": uniform}
    out: dict[str, Any] = {"sizes": {name: len(v) for name, v in sets.items()}, "sets": {}}
    synth_full = gen.sample(len(real), np.random.default_rng([seed, 4]))
    uniform_full = normalise(rng.standard_normal(real.shape, dtype=np.float32))
    full = {"real (held out)": real, "synthetic": synth_full, "uniform noise": uniform_full}
    queries = min(1000, len(real) // 10)
    nlist = max(8, min(int(4 * math.sqrt(len(real))), (len(real) - queries) // 40) // 8 * 8)
    for name, x in sets.items():
        nn = nn_cosines(x)
        pc = pair_cosines(x, rng)
        out["sets"][name] = {
            "nn_cos": nn.tolist(),
            "pair_cos": pc.tolist(),
            "nn_cos_quantiles": [float(v) for v in np.quantile(nn, [0.1, 0.25, 0.5, 0.75, 0.9])],
            "pair_cos_quantiles": [float(v) for v in np.quantile(pc, [0.1, 0.5, 0.9])],
            "spectrum": spectrum(x),
            "ivf_recall": ivf_recall_curve(full[name], queries, nlist, seed),
        }
    out["ivf"] = {"nlist": nlist, "database": len(real) - queries, "queries": queries}
    return out


# --------------------------------------------------------------------------------------------
# Exact search and recall


def exact_topk_inmemory(db: F32, q: F32) -> tuple[F32, I64]:
    index = faiss.IndexFlatIP(db.shape[1])
    index.add(db)
    scores, ids = index.search(q, K)
    return np.asarray(scores, np.float32), np.asarray(ids, np.int64)


def exact_topk_blocks(vectors: F32, q: F32, block: int = 200_000) -> tuple[F32, I64]:
    """Exact top-K by numpy matmul over blocks of the (memmapped) database."""
    best_s = np.full((len(q), K), -np.inf, np.float32)
    best_i = np.full((len(q), K), -1, np.int64)
    for lo in range(0, len(vectors), block):
        hi = min(lo + block, len(vectors))
        scores = q @ np.asarray(vectors[lo:hi]).T
        part = np.argpartition(-scores, K - 1, axis=1)[:, :K]
        cand_s = np.concatenate([best_s, np.take_along_axis(scores, part, 1)], axis=1)
        cand_i = np.concatenate([best_i, part + lo], axis=1)
        top = np.argsort(-cand_s, axis=1, kind="stable")[:, :K]
        best_s = np.take_along_axis(cand_s, top, 1)
        best_i = np.take_along_axis(cand_i, top, 1)
        if lo // block % 10 == 0:
            log(f"  exact top-{K}: {hi:,}/{len(vectors):,} rows")
    return best_s, best_i


def tie_aware_recall(ids: I64, gt_scores: F32, q: F32, rows_of: Any) -> float:
    """Fraction of the K slots filled by returned ids whose exact score reaches the K-th exact
    score (minus a float tolerance): a tie with the K-th neighbour counts as a hit."""
    hits = 0
    for i in range(len(ids)):
        found = np.unique(ids[i][ids[i] >= 0])
        if len(found) == 0:
            continue
        scores = np.asarray(rows_of(np.sort(found))) @ q[i]
        hits += min(K, int((scores >= gt_scores[i, K - 1] - TIE_EPS).sum()))
    return hits / (K * len(ids))


# --------------------------------------------------------------------------------------------
# Configuration, kinds and cache layout


@dataclass(frozen=True)
class Kind:
    """One index kind at one scale."""

    name: str
    family: str  # flat | flat-stream | hnsw | ivf
    codes: str = ""  # ivf: "flat", "pq48", "pq96"
    on_disk: bool = False
    params: tuple[int, ...] = ()
    queries: int = 0
    skipped: str = ""
    rerank: int = 0  # > 0: search this many candidates, re-score them exactly from the vectors
    base: str = ""  # the kind whose index files this one reads (a re-rank kind builds nothing)

    @property
    def slug(self) -> str:
        return slug_of(self.name)

    @property
    def files_slug(self) -> str:
        return slug_of(self.base or self.name)


def slug_of(name: str) -> str:
    return (
        name.lower()
        .replace(",", "_")
        .replace(" ", "-")
        .replace("(", "")
        .replace(")", "")
        .replace("+", "")
    )


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
    build_threads: int
    fit_rows: int
    pq: tuple[int, ...]
    machine_gib: float
    cores: int
    target_qps: tuple[int, ...]
    extra: dict[str, Any] = field(default_factory=dict)


def nlist_for(n: int) -> int:
    """A power of four near 4*sqrt(n) (so it splits into sqrt x sqrt for two-level k-means)."""
    target = 4 * math.sqrt(n)
    side = 2 ** round(math.log2(math.sqrt(target)))
    return int(max(4, side) ** 2)


def kinds_for(n: int, cfg: Config) -> list[Kind]:
    nlist = nlist_for(n)
    flat_bytes = n * DIM * 4
    big = flat_bytes > cfg.max_ram_index_gib * GIB
    q = cfg.queries
    kinds: list[Kind] = []
    if n <= cfg.flat_max:
        kinds.append(Kind("Flat", "flat", queries=q))
    else:
        kinds.append(Kind("Flat (streamed memmap)", "flat-stream", queries=cfg.stream_queries))
    hnsw_skip = ""
    if n > cfg.hnsw_max:
        hnsw_skip = (
            f"n={n:,} > --hnsw-max={cfg.hnsw_max:,}: the graph needs "
            f"~{hnsw_bytes(n) / GIB:.1f} GiB in RAM (over the {cfg.max_ram_index_gib:g} GiB "
            "budget on a shared 23 GiB machine) and "
            "the longest build of all kinds on 2 cores; build time extrapolated, memory computed"
        )
    kinds.append(Kind("HNSW32", "hnsw", params=EF_SEARCHES, queries=q, skipped=hnsw_skip))
    if big:
        nprobes = tuple(p for p in NPROBES if p <= cfg.max_nprobe_ondisk_flat)
        kinds.append(
            Kind(f"IVF{nlist},Flat (on disk)", "ivf", "flat", True, nprobes, cfg.ondisk_queries)
        )
    else:
        kinds.append(Kind(f"IVF{nlist},Flat", "ivf", "flat", False, NPROBES, q))
    for m in cfg.pq:
        kinds.append(Kind(f"IVF{nlist},PQ{m}", "ivf", f"pq{m}", False, NPROBES, q))
    m = cfg.pq[-1]
    on_disk_pq = f"IVF{nlist},PQ{m} (on disk)"
    kinds.append(Kind(on_disk_pq, "ivf", f"pq{m}", True, NPROBES, cfg.ondisk_queries))
    kinds.append(
        Kind(
            f"IVF{nlist},PQ{m} (on disk) + re-rank {RERANK}",
            "ivf",
            f"pq{m}",
            True,
            NPROBES,
            cfg.ondisk_queries,
            rerank=RERANK,
            base=on_disk_pq,
        )
    )
    return kinds


def hnsw_bytes(n: int, m: int = 32) -> float:
    """IndexHNSWFlat memory: vectors + level-0 links (2M ids) + upper levels (~M/(M-1) extra)."""
    per = DIM * 4 + 2 * m * 4 + (m * 4) / (m - 1) + 8 + 1
    return float(n * per)


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


# --------------------------------------------------------------------------------------------
# Build phase


def ensure_generator(cfg: Config) -> Generator:
    path = generator_path(cfg)
    fit_json = cfg.cache / f"fit-check-{generator_tag(cfg)}.json"
    if path.is_file() and fit_json.is_file():
        return Generator.load(path)
    real, source = load_real(cfg.real_path, cfg.seed)
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


def empty_ivf(codes: str, sub: F32) -> Any:
    nlist = len(sub)
    quantizer = faiss.IndexFlatIP(DIM)
    quantizer.add(sub)
    if codes == "flat":
        return faiss.IndexIVFFlat(quantizer, DIM, nlist, faiss.METRIC_INNER_PRODUCT)
    m = int(codes.removeprefix("pq"))
    return faiss.IndexIVFPQ(quantizer, DIM, nlist, m, 8, faiss.METRIC_INNER_PRODUCT)


def trained_ivf(cfg: Config, codes: str, p: Paths) -> tuple[Any, float]:
    """An empty IVF index with the shared coarse quantizer and (for PQ) a trained encoder."""
    with np.load(p.coarse) as z:
        sub = np.asarray(z["sub"], np.float32)
    index = empty_ivf(codes, sub)
    t0 = time.perf_counter()
    if codes != "flat":
        vectors = np.load(p.vectors, mmap_mode="r")
        assign = np.load(p.assign, mmap_mode="r")
        rows = min(len(vectors), cfg.train_sample)
        x = np.ascontiguousarray(vectors[:rows])
        a = np.ascontiguousarray(assign[:rows])
        index.train_encoder(rows, faiss.swig_ptr(x), faiss.swig_ptr(a))
    index.is_trained = True
    return index, time.perf_counter() - t0


def build_ivf_group(cfg: Config, n: int, codes: str, members: list[Kind], p: Paths) -> None:
    """Encode the database once into shards, then merge them in memory and/or on disk."""
    from faiss.contrib.ondisk import merge_ondisk

    todo = [k for k in members if not p.build_info(k).is_file()]
    if not todo:
        return
    coarse = ensure_coarse(cfg, n, p)
    template, encoder_s = trained_ivf(cfg, codes, p)
    vectors = np.load(p.vectors, mmap_mode="r")
    assign = np.load(p.assign, mmap_mode="r")
    shard_rows = math.ceil(n / cfg.shards)
    shard_files: list[Path] = []
    t0 = time.perf_counter()
    for s in range(cfg.shards):
        lo, hi = s * shard_rows, min(n, (s + 1) * shard_rows)
        path = p.indexes / f"shard-{codes}-{s}.index"
        shard_files.append(path)
        if path.is_file():
            continue
        shard: Any = faiss.clone_index(template)
        for a, b in row_chunks(hi - lo):
            x = np.ascontiguousarray(vectors[lo + a : lo + b])
            ids = np.arange(lo + a, lo + b, dtype=np.int64)
            a_part = np.ascontiguousarray(assign[lo + a : lo + b])
            shard.add_core(b - a, faiss.swig_ptr(x), faiss.swig_ptr(ids), faiss.swig_ptr(a_part))
        faiss.write_index(shard, str(path) + ".tmp")
        os.replace(str(path) + ".tmp", path)
        del shard
        log(f"  {codes}: shard {s + 1}/{cfg.shards} encoded ({time.perf_counter() - t0:.0f} s)")
    encode_s = time.perf_counter() - t0
    for kind in todo:
        t1 = time.perf_counter()
        index = faiss.clone_index(template)
        if kind.on_disk:
            if p.ivfdata(kind).exists():
                p.ivfdata(kind).unlink()
            merge_ondisk(index, [str(f) for f in shard_files], str(p.ivfdata(kind).resolve()))
        else:
            for f in shard_files:
                part = faiss.read_index(str(f))
                index.merge_from(part, 0)
                del part
        faiss.write_index(index, str(p.index(kind)))
        merge_s = time.perf_counter() - t1
        del index
        size = p.index(kind).stat().st_size
        if kind.on_disk:
            size += p.ivfdata(kind).stat().st_size
        info = {
            "coarse_train_s": coarse["train_s"],
            "encoder_train_s": encoder_s,
            "assign_s": coarse["assign_s"],
            "encode_s": encode_s,
            "merge_write_s": merge_s,
            "train_s": coarse["train_s"] + encoder_s,
            "add_s": coarse["assign_s"] + encode_s + merge_s,
            "size_bytes": size,
            "shards": cfg.shards,
        }
        write_json(p.build_info(kind), info)
        log(f"  built {kind.name}: {size / GIB:.2f} GiB, merge+write {merge_s:.0f} s")
    for f in shard_files:
        f.unlink(missing_ok=True)


def build_simple(n: int, kind: Kind, p: Paths) -> None:
    if p.build_info(kind).is_file():
        return
    vectors = np.load(p.vectors, mmap_mode="r")
    if kind.family == "flat-stream":
        info = {"train_s": 0.0, "add_s": 0.0, "size_bytes": p.vectors.stat().st_size}
        write_json(p.build_info(kind), info)
        return
    index = (
        faiss.IndexFlatIP(DIM)
        if kind.family == "flat"
        else faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
    )
    t0 = time.perf_counter()
    for lo, hi in row_chunks(n):
        index.add(np.ascontiguousarray(vectors[lo:hi]))
        if kind.family == "hnsw":
            log(f"  HNSW32: {hi:,}/{n:,} added ({time.perf_counter() - t0:.0f} s)")
    add_s = time.perf_counter() - t0
    faiss.write_index(index, str(p.index(kind)))
    del index
    info = {"train_s": 0.0, "add_s": add_s, "size_bytes": p.index(kind).stat().st_size}
    if kind.family == "hnsw":
        info["ef_construction"] = 40
    write_json(p.build_info(kind), info)
    log(f"  built {kind.name} in {add_s:.0f} s")


def phase_build(cfg: Config, scales: Sequence[int]) -> None:
    # OpenMP and BLAS threads spin-wait: on this shared, overloaded 2 vCPU machine one thread
    # is faster
    faiss.omp_set_num_threads(cfg.build_threads)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(cfg.build_threads):
        build_scales(cfg, scales)


def build_scales(cfg: Config, scales: Sequence[int]) -> None:
    cfg.cache.mkdir(parents=True, exist_ok=True)
    gen = ensure_generator(cfg)
    for n in scales:
        p = Paths(cfg, n)
        p.root.mkdir(parents=True, exist_ok=True)
        p.indexes.mkdir(exist_ok=True)
        log(f"scale {n:,}: generating vectors into {p.vectors}")
        ensure_vectors(cfg, gen, n, p)
        ensure_queries_and_gt(cfg, gen, n, p)
        kinds = kinds_for(n, cfg)
        groups: dict[str, list[Kind]] = {}
        for kind in kinds:
            if kind.skipped:
                continue
            if kind.family == "ivf" and not kind.base:
                groups.setdefault(kind.codes, []).append(kind)
        # cheapest first: PQ groups, then IVF-Flat, Flat and HNSW last
        for codes in sorted(groups, key=lambda c: (c == "flat", c)):
            if all(p.build_info(kind).is_file() for kind in groups[codes]):
                continue  # built by an earlier run
            need = sum(n * (DIM * 4 if codes == "flat" else int(codes[2:])) for _ in range(2))
            free = shutil.disk_usage(p.root).free
            if need > free - DISK_MARGIN:
                reason = (
                    f"not built: needs {need / 1e9:.0f} GB of disk for shards + merged lists, "
                    f"{free / 1e9:.0f} GB free and {DISK_MARGIN / 1e9:.0f} GB kept for others"
                )
                for kind in groups[codes]:
                    write_json(p.skip_info(kind), {"reason": reason})
                log(
                    f"  skipping IVF {codes}: needs {need / 1e9:.0f} GB of disk, "
                    f"{free / 1e9:.0f} free"
                )
                continue
            log(f"scale {n:,}: building IVF {codes} ({', '.join(k.name for k in groups[codes])})")
            build_ivf_group(cfg, n, codes, groups[codes], p)
        for kind in kinds:
            if kind.family in ("flat", "flat-stream", "hnsw") and not kind.skipped:
                log(f"scale {n:,}: building {kind.name}")
                build_simple(n, kind, p)
        for kind in kinds:
            if kind.base:
                note_rerank_build(kind, kinds, p)


def note_rerank_build(kind: Kind, kinds: Sequence[Kind], p: Paths) -> None:
    """A re-rank kind builds nothing: its build is its base index's, its size adds the vectors
    it re-scores from."""
    base = next(k for k in kinds if k.name == kind.base)
    if not p.build_info(base).is_file():
        return
    info = json.loads(p.build_info(base).read_text())
    info["size_bytes"] += p.vectors.stat().st_size
    info["rerank_candidates"] = kind.rerank
    info["base"] = base.name
    write_json(p.build_info(kind), info)


# --------------------------------------------------------------------------------------------
# Measure phase


def smaps_rollup() -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        text = Path("/proc/self/smaps_rollup").read_text()
    except OSError:
        return out
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            out[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return out


def mapped_rss(paths: Sequence[Path]) -> int:
    """Rss of this process's mappings of the given files (page cache pages it touches)."""
    names = {str(x.resolve()) for x in paths}
    total, current = 0, False
    try:
        lines = Path("/proc/self/smaps").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:
            current = len(head) >= 6 and head[5] in names
        elif current and head and head[0] == "Rss:":
            total += int(head[1]) * 1024
    return total


def memory_snapshot(files: Sequence[Path]) -> dict[str, int]:
    r = smaps_rollup()
    return {
        "rss": r.get("Rss", 0),
        "anon": r.get("Anonymous", 0),
        "pss_file": r.get("Pss_File", 0),
        "index_file_rss": mapped_rss(files),
    }


def stream_search(vectors: F32, q: F32, block: int = 1_000_000) -> I64:
    best_s = np.full(K, -np.inf, np.float32)
    best_i = np.full(K, -1, np.int64)
    for lo in range(0, len(vectors), block):
        scores = np.asarray(vectors[lo : lo + block]) @ q
        part = np.argpartition(-scores, K - 1)[:K]
        cand_s = np.concatenate([best_s, scores[part]])
        cand_i = np.concatenate([best_i, part + lo])
        top = np.argsort(-cand_s, kind="stable")[:K]
        best_s, best_i = cand_s[top], cand_i[top]
    return best_i


def search_one(index: Any, vectors: F32 | None, query: F32, rerank: int) -> I64:
    """The top-K ids of one query: streamed over the vectors (no index), from the index, or
    ``rerank`` candidates from the index re-scored exactly from the vectors (read in row order)."""
    if index is None:
        assert vectors is not None
        return stream_search(vectors, query)
    if not rerank:
        _, found = index.search(query[None, :], K)
        return np.asarray(found[0], np.int64)
    assert vectors is not None
    _, found = index.search(query[None, :], rerank)
    candidates = np.sort(found[0][found[0] >= 0])
    scores = np.asarray(vectors[candidates]) @ query
    order = np.lexsort((candidates, -scores))[:K]  # score, then row: the tie rule
    out = np.full(K, -1, np.int64)
    out[: len(order)] = candidates[order]
    return out


def measure_one(cfg: Config, n: int, kind: Kind, warmup: int) -> None:
    """Runs in its own process: load, memory, single-query latency per parameter, ids."""
    faiss.omp_set_num_threads(1)
    p = Paths(cfg, n)
    queries = np.load(p.queries)[: kind.queries]
    files = [p.index(kind), p.ivfdata(kind), p.vectors]
    baseline = memory_snapshot(files)
    t0 = time.perf_counter()
    vectors: F32 | None = None
    index: Any = None
    if kind.family == "flat-stream" or kind.rerank:
        vectors = np.load(p.vectors, mmap_mode="r")
    if kind.family != "flat-stream":
        index = faiss.read_index(str(p.index(kind)))
    load_s = time.perf_counter() - t0
    after_load = memory_snapshot(files)
    params: tuple[int, ...] = kind.params or (0,)
    latencies: dict[str, list[float]] = {}
    ids_out: dict[str, I64] = {}
    for param in params:
        if kind.family == "ivf":
            index.nprobe = param
        elif kind.family == "hnsw":
            index.hnsw.efSearch = param
        ids = np.empty((len(queries), K), np.int64)
        lat = np.empty(len(queries), np.float64)
        for i in range(min(warmup, len(queries))):
            search_one(index, vectors, queries[i], kind.rerank)
        for i in range(len(queries)):
            t1 = time.perf_counter_ns()
            ids[i] = search_one(index, vectors, queries[i], kind.rerank)
            lat[i] = (time.perf_counter_ns() - t1) / 1e6
        latencies[str(param)] = lat.tolist()
        ids_out[str(param)] = ids
        print(
            f"    {kind.name} param={param}: p50 {np.median(lat):.3f} ms, "
            f"p99 {np.quantile(lat, 0.99):.3f} ms",
            flush=True,
        )
    after_queries = memory_snapshot(files)
    np.savez(p.ids(kind), **ids_out)  # type: ignore[arg-type]
    write_json(
        p.result(kind),
        {
            "load_s": load_s,
            "memory": {
                "baseline": baseline,
                "after_load": after_load,
                "after_queries": after_queries,
            },
            "latency_ms": latencies,
            "queries": len(queries),
            "warmup": warmup,
            "loadavg": os.getloadavg(),
        },
    )


def phase_measure(cfg: Config, scales: Sequence[int], args: argparse.Namespace) -> None:
    for n in scales:
        p = Paths(cfg, n)
        p.measure.mkdir(parents=True, exist_ok=True)
        for kind in kinds_for(n, cfg):
            if kind.skipped or not p.build_info(kind).is_file():
                log(f"scale {n:,}: {kind.name}: not built, not measured")
                continue
            if p.result(kind).is_file() and not args.remeasure:
                continue
            log(f"scale {n:,}: measuring {kind.name} ({kind.queries} queries per parameter)")
            env = dict(os.environ)
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                env[var] = "1"
            command = [sys.executable, str(Path(__file__).resolve()), *cli_common(args)]
            command += ["--phase", "measure-one", "--scales", str(n), "--kind", kind.name]
            subprocess.run(command, check=True, env=env)


def cli_common(args: argparse.Namespace) -> list[str]:
    out: list[str] = []
    for name in COMMON_OPTIONS:
        value = getattr(args, name)
        if value is not None:
            out += [f"--{name.replace('_', '-')}", str(value)]
    return out


# --------------------------------------------------------------------------------------------
# Report phase


def collect(cfg: Config, scales: Sequence[int]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for n in scales:
        p = Paths(cfg, n)
        if not p.gt.is_file():
            continue
        with np.load(p.gt) as z:
            gt_scores = np.asarray(z["scores"], np.float32)
            gt_seconds = float(z["seconds"])
        queries = np.load(p.queries)
        vectors = np.load(p.vectors, mmap_mode="r")
        state = json.loads(p.vectors_state.read_text())
        scale: dict[str, Any] = {
            "n": n,
            "nlist": nlist_for(n),
            "generate_s": state.get("seconds"),
            "ground_truth_s": gt_seconds,
            "vectors_bytes": p.vectors.stat().st_size,
            "kinds": {},
        }
        for kind in kinds_for(n, cfg):
            entry: dict[str, Any] = {"family": kind.family, "on_disk": kind.on_disk}
            if kind.skipped:
                entry["skipped"] = kind.skipped
            if p.build_info(kind).is_file():
                entry["build"] = json.loads(p.build_info(kind).read_text())
            if p.result(kind).is_file():
                res = json.loads(p.result(kind).read_text())
                entry["memory"] = res["memory"]
                entry["load_s"] = res["load_s"]
                entry["queries"] = res["queries"]
                entry["loadavg"] = res["loadavg"]
                rows = []
                with np.load(p.ids(kind)) as ids_z:
                    for param, lat in res["latency_ms"].items():
                        ids = np.asarray(ids_z[param], np.int64)
                        q = queries[: len(ids)]
                        rows_of = vectors.__getitem__
                        recall = tie_aware_recall(ids, gt_scores[: len(ids)], q, rows_of)
                        arr = np.asarray(lat)
                        rows.append(
                            {
                                "param": int(param),
                                "p50_ms": float(np.median(arr)),
                                "p99_ms": float(np.quantile(arr, 0.99)),
                                "mean_ms": float(arr.mean()),
                                "recall_at_10": recall,
                            }
                        )
                entry["points"] = sorted(rows, key=lambda r: int(r["param"]))
            elif p.skip_info(kind).is_file():
                entry["skipped"] = json.loads(p.skip_info(kind).read_text())["reason"]
            elif not kind.skipped:
                entry["missing"] = "not built or not measured yet"
            scale["kinds"][kind.name] = entry
        results[str(n)] = scale
    estimate_skipped_hnsw(results)
    return results


def estimate_skipped_hnsw(results: dict[str, Any]) -> None:
    """Build time of a skipped HNSW from the largest built one: n log n scaling; memory computed."""
    built = [
        (sc["n"], e["build"]["add_s"])
        for sc in results.values()
        for e in sc["kinds"].values()
        if e["family"] == "hnsw" and "build" in e
    ]
    if not built:
        return
    n0, add0 = max(built)
    for sc in results.values():
        for e in sc["kinds"].values():
            if e["family"] == "hnsw" and "skipped" in e:
                n = sc["n"]
                e["estimate"] = {
                    "from_n": n0,
                    "add_s": add0 * n / n0 * math.log(n) / math.log(n0),
                    "memory_bytes": hnsw_bytes(n),
                    "formula": "add_s(n0) * (n/n0) * ln(n)/ln(n0); bytes = n*(4d + 2M*4 + ...)",
                }


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "faiss": faiss.__version__,
        "numpy": np.__version__,
        "loadavg_at_report": os.getloadavg(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["mem_total_gib"] = int(line.split()[1]) * 1024 / GIB
    except OSError:
        pass
    return info


def operating_point(points: list[dict[str, Any]], target: float) -> dict[str, Any]:
    """The cheapest parameter reaching ``target`` recall, else the most accurate one."""
    ok = [pt for pt in points if pt["recall_at_10"] >= target]
    if ok:
        return min(ok, key=lambda pt: pt["p50_ms"])
    return max(points, key=lambda pt: pt["recall_at_10"])


def extrapolate(results: dict[str, Any], cfg: Config) -> dict[str, Any]:
    """Bytes per vector at the largest measured scale and machines needed at 100M and 1B."""
    if not results:
        return {}
    largest = results[max(results, key=int)]
    n0 = largest["n"]
    targets = (100_000_000, 1_000_000_000)
    machine_bytes = cfg.machine_gib * GIB
    rows: list[dict[str, Any]] = []
    for name, entry in largest["kinds"].items():
        size = entry.get("build", {}).get("size_bytes")
        family = entry["family"]
        per_vec = size / n0 if size else (hnsw_bytes(n0) / n0 if family == "hnsw" else None)
        if per_vec is None:
            continue
        # single-thread query cost at the operating point, from this or a smaller scale
        src_n, point = n0, None
        for key in sorted(results, key=int, reverse=True):
            e = results[key]["kinds"]
            match = next(
                (
                    v
                    for k2, v in e.items()
                    if v["family"] == family
                    and "points" in v
                    and k2.split(",")[-1] == name.split(",")[-1]
                ),
                None,
            )
            if match is not None:
                src_n, point = results[key]["n"], operating_point(match["points"], 0.9)
                break
        for n in targets:
            mem = n * per_vec
            row: dict[str, Any] = {
                "kind": name,
                "n": n,
                "bytes_per_vector": per_vec,
                "total_gib": mem / GIB,
                "machines_for_memory": math.ceil(mem / machine_bytes),
            }
            if point is not None:
                # every query fans out to every shard: shards x the cost on one shard's rows
                shards = row["machines_for_memory"]
                shard_n = n / shards
                ratio = shard_n / src_n
                hnsw = math.log(shard_n) / math.log(src_n)
                scale = {"flat": ratio, "flat-stream": ratio, "hnsw": hnsw}
                factor = scale.get(family, math.sqrt(ratio))
                t_ms = shards * point["p50_ms"] * factor
                row.update(
                    query_ms_measured=point["p50_ms"],
                    measured_at=src_n,
                    param=point["param"],
                    recall_at_10=point["recall_at_10"],
                    query_cpu_ms=t_ms,
                )
                for qps in cfg.target_qps:
                    row[f"machines_for_{qps}_qps"] = math.ceil(qps * t_ms / 1000 / cfg.cores)
            rows.append(row)
    return {
        "from_n": n0,
        "machine_gib": cfg.machine_gib,
        "cores": cfg.cores,
        "target_qps": list(cfg.target_qps),
        "rows": rows,
    }


def plot_all(results: dict[str, Any], fit: dict[str, Any], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made: list[str] = []
    for key, scale in results.items():
        fig, ax = plt.subplots(figsize=(8, 5.5))
        for name, entry in scale["kinds"].items():
            pts = entry.get("points")
            if not pts:
                continue
            xs = [pt["p50_ms"] for pt in pts]
            ys = [pt["recall_at_10"] for pt in pts]
            ax.plot(xs, ys, marker="o", markersize=4, label=name)
            if len(pts) > 1:
                for pt, x, y in zip(
                    (pts[0], pts[-1]), (xs[0], xs[-1]), (ys[0], ys[-1]), strict=True
                ):
                    ax.annotate(
                        str(pt["param"]),
                        (x, y),
                        textcoords="offset points",
                        xytext=(4, -10),
                        fontsize=7,
                        color="0.3",
                    )
        ax.set_xscale("log")
        ax.set_xlabel("p50 single-query latency, 1 thread (ms, log scale)")
        ax.set_ylabel("recall@10 (tie-aware)")
        ax.set_ylim(0, 1.03)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(
            f"n = {int(key):,}, dim 384, inner product (labels: first/last nprobe/efSearch)"
        )
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        name = f"recall_vs_latency_{human(int(key))}.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made.append(name)

    # memory by kind
    bars: list[tuple[str, float, float, float]] = []
    for key, scale in results.items():
        for name, entry in scale["kinds"].items():
            mem = entry.get("memory")
            size = entry.get("build", {}).get("size_bytes", 0) / GIB
            if mem is None:
                continue
            base = mem["baseline"]["anon"]
            anon = max(0, mem["after_queries"]["anon"] - base) / GIB
            file_rss = mem["after_queries"]["index_file_rss"] / GIB
            bars.append((f"{human(int(key))} {name}", anon, file_rss, size))
    if bars:
        fig, ax = plt.subplots(figsize=(10, 0.42 * len(bars) + 2.4))
        y = np.arange(len(bars))
        anon = [b[1] for b in bars]
        filed = [b[2] for b in bars]
        ax.barh(y, anon, color="tab:blue", label="anonymous RSS (index in process memory)")
        ax.barh(
            y, filed, left=anon, color="tab:orange", label="file-backed RSS (mmap / page cache)"
        )
        ax.scatter(
            [b[3] for b in bars], y, marker="|", s=200, color="k", label="index size on disk"
        )
        ax.set_yticks(y, [b[0] for b in bars], fontsize=8)
        ax.invert_yaxis()
        right = max(max(b[1] + b[2] for b in bars), max(b[3] for b in bars))
        ax.set_xlim(0, right * 1.08 if right > 0 else 1)
        ax.set_xlabel("GiB (after the queries, baseline process subtracted)")
        ax.set_title("Resident memory of the serving process by index kind")
        ax.legend(
            fontsize=8,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.12 - 1.2 / len(bars)),
            ncol=3,
            frameon=False,
        )
        ax.grid(True, axis="x", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "memory_by_kind.png", dpi=110)
        plt.close(fig)
        made.append("memory_by_kind.png")

    if fit:
        fig, axes = plt.subplots(2, 2, figsize=(11, 8))
        colours = {"real (held out)": "tab:blue", "synthetic": "tab:orange", "uniform noise": "0.5"}
        for name, s in fit["sets"].items():
            c = colours.get(name)
            axes[0, 0].hist(
                s["nn_cos"],
                bins=60,
                range=(-0.1, 1.0),
                histtype="step",
                density=True,
                color=c,
                label=name,
                linewidth=1.5,
            )
            axes[0, 1].hist(
                s["pair_cos"],
                bins=60,
                range=(-0.3, 1.0),
                histtype="step",
                density=True,
                color=c,
                label=name,
                linewidth=1.5,
            )
            spec = s["spectrum"]
            axes[1, 0].plot(range(1, len(spec) + 1), np.cumsum(spec), color=c, label=name)
            curve = s["ivf_recall"]
            axes[1, 1].plot(
                [int(k2) for k2 in curve], list(curve.values()), marker="o", color=c, label=name
            )
        axes[0, 0].set(
            title=f"nearest-neighbour cosine ({fit['holdout_rows']:,} rows each)",
            xlabel="cosine",
            ylabel="density",
        )
        axes[0, 1].set(title="cosine of random pairs", xlabel="cosine", ylabel="density")
        axes[1, 0].set(
            title="explained variance (cumulative, top 64 PCs)",
            xlabel="principal component",
            ylabel="fraction of variance",
        )
        axes[1, 1].set(
            title=f"IVF{fit['ivf']['nlist']},Flat recall@10 "
            f"({fit['ivf']['database']:,} db, {fit['ivf']['queries']:,} queries)",
            xlabel="nprobe",
            ylabel="recall@10",
            xscale="log",
            ylim=(0, 1.02),
        )
        axes[1, 1].set_xticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
        for ax in axes.ravel():
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(
            f"Generator fit check: k={fit['clusters']} clusters, rank {fit['rank']}, "
            f"residual spread x{fit.get('spread', 1.0):g}"
        )
        fig.tight_layout()
        fig.savefig(out / "fit_check.png", dpi=100)
        plt.close(fig)
        made.append("fit_check.png")
    return made


def human(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def fmt_gib(b: float | None) -> str:
    return "–" if b is None else f"{b / GIB:.2f}"


def table_rows(results: dict[str, Any]) -> list[str]:
    lines = [
        "| n | kind | train s | add s | size GiB | anon RSS GiB | file RSS GiB | param "
        "| p50 ms | p99 ms | recall@10 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, scale in results.items():
        for name, entry in scale["kinds"].items():
            build = entry.get("build", {})
            mem = entry.get("memory")
            anon = file_rss = None
            if mem:
                anon = max(0, mem["after_queries"]["anon"] - mem["baseline"]["anon"])
                file_rss = mem["after_queries"]["index_file_rss"]
            head = (
                f"| {human(int(key))} | {name} | {build.get('train_s', float('nan')):.0f} | "
                f"{build.get('add_s', float('nan')):.0f} | {fmt_gib(build.get('size_bytes'))} | "
                f"{fmt_gib(anon)} | {fmt_gib(file_rss)} |"
            )
            if "skipped" in entry:
                lines.append(
                    f"| {human(int(key))} | {name} | – | – | – | – | – | skipped | – | – | – |"
                )
                continue
            pts = entry.get("points")
            if not pts:
                lines.append(head + " – | – | – | not measured |")
                continue
            for pt in pts:
                lines.append(
                    f"{head} {pt['param'] or '–'} | {pt['p50_ms']:.3f} | {pt['p99_ms']:.3f} | "
                    f"{pt['recall_at_10']:.3f} |"
                )
                head = "| | | | | | | |"
    return lines


def reproducing(argv: Sequence[str]) -> list[str]:
    """The arguments that reproduce a report: ``argv`` without ``--phase`` (all phases)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--phase":
            skip = True
        elif not arg.startswith("--phase="):
            out.append(arg)
    return out


def write_report(cfg: Config, scales: Sequence[int], argv: Sequence[str]) -> dict[str, Any]:
    cfg.report.mkdir(parents=True, exist_ok=True)
    fit_json = cfg.cache / f"fit-check-{generator_tag(cfg)}.json"
    fit = json.loads(fit_json.read_text()) if fit_json.is_file() else {}
    results = collect(cfg, scales)
    extra = extrapolate(results, cfg)
    plots = plot_all(results, fit, cfg.report)
    fit_summary = {
        name: {
            "nn_cos_quantiles_10_25_50_75_90": s["nn_cos_quantiles"],
            "pair_cos_quantiles_10_50_90": s["pair_cos_quantiles"],
            "variance_top10": float(sum(s["spectrum"][:10])),
            "ivf_recall": s["ivf_recall"],
        }
        for name, s in fit.get("sets", {}).items()
    }
    payload = {
        "machine": machine_info(),
        "command": "scripts/scale_simulation.py " + " ".join(reproducing(argv)),
        "seed": cfg.seed,
        "generator": {"clusters": cfg.clusters, "rank": cfg.rank, "source": fit.get("source")},
        "fit_check": fit_summary,
        "fit_ivf": fit.get("ivf"),
        "scales": results,
        "extrapolation": extra,
        "plots": plots,
    }
    write_json(cfg.report / "results.json", payload)
    (cfg.report / "report.md").write_text(render_markdown(cfg, payload, argv))
    log(f"report written to {cfg.report}")
    return payload


def render_markdown(cfg: Config, payload: dict[str, Any], argv: Sequence[str]) -> str:
    m = payload["machine"]
    lines = [
        "# Simulation at scale (issue 17, part 4)",
        "",
        "Generated by `scripts/scale_simulation.py`; numbers in `results.json`. "
        "Do not edit by hand.",
        "",
        "## Machine and method",
        "",
        f"- Machine: {m.get('cpu', '?')}, {m.get('cpus')} vCPU, "
        f"{m.get('mem_total_gib', 0):.0f} GiB RAM, "
        f"{m['platform']}; faiss {m['faiss']}, numpy {m['numpy']}, Python {m['python']}.",
        "- A shared, noisy VM: the 1-minute load average after each kind's measurement "
        f"was {loadavg_range(payload)} (per kind in `results.json`). The table quotes medians "
        "(p50) and p99 over all timed queries; build times include any contention.",
        "- Command (all phases; each phase is cached under `--cache`, so a rerun redoes only "
        "what is missing): "
        f"`.venv/bin/python scripts/scale_simulation.py {' '.join(reproducing(argv))}` "
        "(or `make scale-report SCALES=...`).",
        f"- Seed {cfg.seed}; chunks of the database use `default_rng([seed, 100, n, chunk])`, the "
        f"queries `default_rng([seed, 200, n])`.",
        "- Latency: one process per index kind, `faiss.omp_set_num_threads(1)` and BLAS at "
        "1 thread, "
        "one query per `search` call, after a warm-up of 20 queries per parameter value.",
        "- Recall@10 is tie-aware: a returned id is a hit when its exact score reaches the exact "
        f"10th score minus {TIE_EPS:g}. Ground truth: exact inner product of the held-out queries "
        "(drawn from the generator, not in the index) over the whole memmap in blocks.",
        "- Memory: `/proc/self/smaps_rollup` of the serving process after loading and after the "
        "queries. *anon RSS* is anonymous memory above the process baseline (numpy+faiss imported, "
        "nothing loaded): the index held in process memory. *file RSS* is the Rss of the process's "
        "mappings of the index files (on-disk inverted lists, the streamed vectors): page-cache "
        "pages the queries touched, shared and reclaimable, not private memory.",
        "- IVF kinds share one coarse quantizer: two-level spherical k-means "
        "(sqrt(nlist) top cells x sqrt(nlist) sub-centroids) on the first "
        f"{cfg.train_sample:,} rows (rows are i.i.d. draws); database vectors are assigned to the "
        "best sub-centroid of their best top cell (approximate, far cheaper than an exact "
        "n x nlist search on 2 cores), queries probe with an exact flat quantizer. Train time = "
        "coarse k-means + PQ training; add time = assignment + encoding + merge/write.",
        f"- On-disk kinds: the add is split into {cfg.shards} shards written as IVF indexes, "
        "merged "
        "with `faiss.contrib.ondisk.merge_ondisk` into an `OnDiskInvertedLists` `.ivfdata` file "
        "that the serving process mmaps. In-memory IVF kinds merge the same shards in RAM.",
        "",
        "## Results",
        "",
        *table_rows(payload["scales"]),
        "",
    ]
    for key, scale in payload["scales"].items():
        lines.append(
            f"- n={int(key):,}: nlist {scale['nlist']}, vectors file "
            f"{scale['vectors_bytes'] / GIB:.2f} GiB, "
            f"generated in {scale['generate_s'] or 0:.0f} s, exact ground truth in "
            f"{scale['ground_truth_s']:.0f} s."
        )
        for name, entry in scale["kinds"].items():
            if "skipped" in entry:
                lines.append(f"  - {name} skipped: {entry['skipped']}.")
                est = entry.get("estimate")
                if est:
                    lines.append(
                        f"    Estimate from the {human(est['from_n'])} build: add "
                        f"~{est['add_s'] / 3600:.1f} h on this machine "
                        f"({cfg.build_threads} build thread(s), "
                        f"`{est['formula']}`), memory {est['memory_bytes'] / GIB:.1f} GiB."
                    )
            elif "missing" in entry:
                lines.append(f"  - {name}: {entry['missing']}.")
    lines += [
        "",
        *[f"![{p}]({p})" for p in payload["plots"] if p.startswith("recall")],
        "",
        "![memory_by_kind.png](memory_by_kind.png)",
        "",
    ]
    lines += render_fit(payload)
    lines += render_extrapolation(payload["extrapolation"], cfg)
    return "\n".join(lines) + "\n"


def loadavg_range(payload: dict[str, Any]) -> str:
    """The smallest and largest 1-minute load average recorded after a kind's measurement."""
    loads = [
        entry["loadavg"][0]
        for scale in payload["scales"].values()
        for entry in scale["kinds"].values()
        if entry.get("loadavg")
    ]
    return f"{min(loads):.2f}-{max(loads):.2f}" if loads else "not recorded"


def render_fit(payload: dict[str, Any]) -> list[str]:
    fit = payload["fit_check"]
    if not fit:
        return []
    g = payload["generator"]
    lines = [
        "## Generator and fit check",
        "",
        f"Fit on {g['source']}: k-means with k={g['clusters']} (faiss, 25 iterations) on 80 % of "
        f"the real rows; per cluster the mean, the top {g['rank']} principal components of the "
        "residuals (scaled by the square root of their eigenvalue) and an isotropic remainder with "
        "the rest of the cluster's residual variance; cluster weights = cluster sizes. A sample is "
        "cluster ~ weights, mean + N(0, low-rank + isotropic), L2-normalised.",
        "The other 20 % of the real rows are held out and compared with the same number of "
        "synthetic rows and of uniform-noise unit vectors; IVF recall uses the whole real set vs "
        "equally many synthetic / noise rows (last 1,000 rows as queries).",
        "",
        "| set | NN cosine p10 / p50 / p90 | random-pair cosine p10 / p50 / p90 "
        "| variance in top 10 PCs | IVF recall@10 nprobe 1 / 4 / 16 |",
        "|---|---|---|---:|---|",
    ]
    for name, s in fit.items():
        nn = s["nn_cos_quantiles_10_25_50_75_90"]
        pc = s["pair_cos_quantiles_10_50_90"]
        r = s["ivf_recall"]
        lines.append(
            f"| {name} | {nn[0]:.3f} / {nn[2]:.3f} / {nn[4]:.3f} | {pc[0]:.3f} / {pc[1]:.3f} / "
            f"{pc[2]:.3f} | {s['variance_top10']:.3f} | "
            f"{r['1']:.3f} / {r['4']:.3f} / {r['16']:.3f} |"
        )
    lines += ["", "![fit_check.png](fit_check.png)", ""]
    return lines


def render_extrapolation(ex: dict[str, Any], cfg: Config) -> list[str]:
    if not ex:
        return []
    qps = ex["target_qps"]
    lines = [
        "## Extrapolation to 100M and 1B",
        "",
        f"Bytes per vector measured at n={ex['from_n']:,} (index size on disk / n; for HNSW the "
        "computed `4*d + 2*M*4 + ~M*4/(M-1) + 9` bytes when it was not built at that scale).",
        "",
        "Assumptions:",
        "",
        f"- one machine = {cfg.cores} cores and {cfg.machine_gib:g} GiB of RAM usable for the "
        "index "
        "(e.g. a 64-core, 384 GiB server leaving room for the OS, the service and page cache); the "
        "whole index is memory-resident (on-disk kinds counted at their full size too: served "
        "from page cache at this QPS, their working set is most of the file);",
        "- machines for memory = ceil(n x bytes/vector / usable RAM) = shards S; vectors sharded "
        "evenly, each query fans out to every shard, so its CPU cost is S x t(n/S);",
        "- t(m), the cost of one query on m rows = measured single-thread p50 at the cheapest "
        "parameter reaching recall@10 >= 0.9 (else the most accurate), scaled from n0 to m: Flat "
        "linearly (m/n0), IVF by sqrt(m/n0) (nlist ~ 4 sqrt(m), so list length ~ sqrt(m) at a "
        "constant nprobe), HNSW by log(m)/log(n0); keeping the recall at the same parameter is an "
        "assumption: recall at a fixed nprobe or efSearch tends to drop as m grows;",
        "- machines for a QPS = ceil(QPS x query CPU-seconds / cores): perfect use of every core, "
        "no network or merge overhead, no replication for availability: a lower bound;",
        "- the synthetic data keep the cluster structure of 25k captions; real 1B collections "
        "have more, finer structure, so real recall at a given nprobe may differ.",
        "",
        "| kind | n | bytes/vector | total GiB | machines (memory) "
        "| query CPU ms (param, recall) | "
        + " | ".join(f"machines @ {q:,} QPS" for q in qps)
        + " |",
        "|---|---|---:|---:|---:|---|" + "---:|" * len(qps),
    ]
    for row in ex["rows"]:
        cpu = "–"
        if "query_cpu_ms" in row:
            cpu = (
                f"{row['query_cpu_ms']:.2f} (from {row['query_ms_measured']:.3f} at "
                f"{human(row['measured_at'])}, param {row['param'] or 'exact'}, "
                f"recall {row['recall_at_10']:.2f})"
            )
        machines = " | ".join(str(row.get(f"machines_for_{q}_qps", "–")) for q in qps)
        lines.append(
            f"| {row['kind']} | {human(row['n'])} | {row['bytes_per_vector']:.0f} | "
            f"{row['total_gib']:,.0f} | {row['machines_for_memory']} | {cpu} | {machines} |"
        )
    lines += [
        "",
        "Machines needed = max(machines for memory, machines for the QPS). Formula: "
        "`S = ceil(n*B/RAM)`, `machines = max(S, ceil(QPS*S*t(n/S)/cores))`, `t(m)` as above.",
        "",
    ]
    return lines


# --------------------------------------------------------------------------------------------
# CLI

COMMON_OPTIONS = (
    "cache",
    "report",
    "seed",
    "clusters",
    "rank",
    "spread",
    "queries",
    "train_sample",
    "shards",
    "max_ram_index_gib",
    "hnsw_max",
    "flat_max",
    "stream_queries",
    "ondisk_queries",
    "max_nprobe_ondisk_flat",
    "real",
    "build_threads",
    "fit_rows",
    "pq",
)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scales", default="1000000", help="comma-separated database sizes")
    ap.add_argument(
        "--phase", default="all", choices=("all", "build", "measure", "report", "measure-one")
    )
    ap.add_argument("--cache", type=Path, default=REPO / "artifacts" / "scale")
    ap.add_argument("--report", type=Path, default=REPO / "reports" / "scale")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--clusters", type=int, default=512, help="k-means clusters of the generator")
    ap.add_argument("--rank", type=int, default=16, help="principal components per cluster")
    ap.add_argument(
        "--spread",
        type=float,
        default=1.5,
        help="residual scale: > 1 widens clusters so IVF is not easier than on real data",
    )
    ap.add_argument("--queries", type=int, default=1000, help="held-out queries per scale")
    ap.add_argument("--train-sample", type=int, default=300_000)
    ap.add_argument("--shards", type=int, default=4, help="shards of the add merged on disk")
    ap.add_argument(
        "--max-ram-index-gib",
        type=float,
        default=6.0,
        help="IVF-Flat larger than this is built with on-disk lists",
    )
    ap.add_argument("--hnsw-max", type=int, default=2_000_000)
    ap.add_argument(
        "--flat-max",
        type=int,
        default=2_000_000,
        help="above this, Flat is measured by streaming the vectors memmap",
    )
    ap.add_argument("--stream-queries", type=int, default=20)
    ap.add_argument("--ondisk-queries", type=int, default=300)
    ap.add_argument("--max-nprobe-ondisk-flat", type=int, default=128)
    ap.add_argument("--real", type=Path, default=None, help="real vectors .npy (default: bundle)")
    ap.add_argument("--pq", default="32,48", help="PQ sub-quantizers (8-bit); last one on disk")
    ap.add_argument("--fit-rows", type=int, default=0, help="use this many real rows (0: all)")
    ap.add_argument("--build-threads", type=int, default=1, help="faiss OpenMP threads to build")
    ap.add_argument("--machine-gib", type=float, default=256.0)
    ap.add_argument("--cores", type=int, default=64)
    ap.add_argument("--target-qps", default="1000,10000")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--remeasure", action="store_true", help="measure kinds already measured")
    ap.add_argument("--kind", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def config_from(args: argparse.Namespace) -> Config:
    return Config(
        cache=args.cache.resolve(),
        report=args.report.resolve(),
        seed=args.seed,
        clusters=args.clusters,
        rank=args.rank,
        spread=args.spread,
        queries=args.queries,
        train_sample=args.train_sample,
        shards=args.shards,
        max_ram_index_gib=args.max_ram_index_gib,
        hnsw_max=args.hnsw_max,
        flat_max=args.flat_max,
        stream_queries=args.stream_queries,
        ondisk_queries=args.ondisk_queries,
        max_nprobe_ondisk_flat=args.max_nprobe_ondisk_flat,
        real_path=args.real,
        build_threads=args.build_threads,
        fit_rows=args.fit_rows,
        pq=tuple(int(v) for v in args.pq.split(",")),
        machine_gib=args.machine_gib,
        cores=args.cores,
        target_qps=tuple(int(v) for v in args.target_qps.split(",")),
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    cfg = config_from(args)
    scales = [int(s) for s in args.scales.split(",")]
    if args.phase == "measure-one":
        kind = next(k for k in kinds_for(scales[0], cfg) if k.name == args.kind)
        measure_one(cfg, scales[0], kind, args.warmup)
        return 0
    if args.phase in ("all", "build"):
        phase_build(cfg, scales)
    if args.phase in ("all", "measure"):
        phase_measure(cfg, scales, args)
    if args.phase in ("all", "report"):
        write_report(cfg, scales, argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
