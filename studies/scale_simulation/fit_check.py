"""How far synthetic rows look like held-out real ones: neighbour and pair cosines, the spectrum
and the recall of one IVF configuration, beside uniform noise as the control."""

from __future__ import annotations

import math
from typing import Any

import faiss
import numpy as np

from studies.scale_simulation.generator import Generator
from studies.scale_simulation.ground_truth import K, exact_topk_inmemory, tie_aware_recall
from studies.scale_simulation.vectors import F32, normalise


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
