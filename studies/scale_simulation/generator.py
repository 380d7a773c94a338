"""The seeded generator: a mixture of low-rank Gaussians fit to real embeddings, and its file."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from studies.scale_simulation.vectors import F32, F64, normalise


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
