"""Fake faiss for the service tests: modules for the GPU placement logic (a GPU build with a
number of visible GPUs, and faiss-cpu; no GPU is needed: a "GPU clone" searches its CPU original
and records calls), and an exact index that breaks ties the wrong way, for the tie rule."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from service.engine.collection.catalog import ServedCollection
from service.engine.rank.exact_scan import ExactScan
from storage.id_table import IdTable
from storage.reader import LoadedCollection


class FakeResources:
    """Stands for ``faiss.StandardGpuResources``."""


@dataclass
class FakeGpuIndex:
    """A "GPU clone": searches its CPU original and records each call and its parameters."""

    cpu: Any
    params: dict[str, float] = field(default_factory=dict)
    searches: list[int] = field(default_factory=list)

    def search(self, x: npt.NDArray[np.float32], k: int) -> Any:
        self.searches.append(k)
        return self.cpu.search(x, k)


class FakeGpuParameterSpace:
    def set_index_parameter(self, index: FakeGpuIndex, key: str, value: float) -> None:
        if key != "nprobe":
            raise RuntimeError(f"unknown parameter {key}")
        index.params[key] = value


class FakeGpuFaiss:
    """The parts of a faiss GPU build that placement uses; ``gpus`` GPUs visible. Like faiss,
    cloning an index kind that has no GPU implementation (HNSW) raises RuntimeError."""

    StandardGpuResources = FakeResources
    GpuParameterSpace = FakeGpuParameterSpace

    def __init__(self, gpus: int) -> None:
        self.gpus = gpus
        self.clones: list[tuple[Any, int, Any]] = []

    def get_num_gpus(self) -> int:
        return self.gpus

    def index_cpu_to_gpu(self, resources: Any, device: int, index: Any) -> FakeGpuIndex:
        if isinstance(index, faiss.IndexHNSW):
            raise RuntimeError("This index type is not implemented on GPU")
        self.clones.append((resources, device, index))
        return FakeGpuIndex(index)


class FakeCpuFaiss:
    """faiss-cpu: ``get_num_gpus`` exists (and answers 0) but nothing GPU does."""

    def get_num_gpus(self) -> int:
        return 0


class AdversarialTieIndex:
    """Exact inner-product search that breaks ties by *highest* row first and so cuts runs of
    equal scores the wrong way — what an approximate or multi-threaded faiss index may do.

    Records each search's ``k`` in ``fetches``, and the searching thread's name and faiss
    OpenMP thread count in ``threads``.
    """

    def __init__(self, vectors: npt.NDArray[np.float32]) -> None:
        self.vectors = vectors
        self.ntotal = len(vectors)
        self.fetches: list[int] = []
        self.threads: list[tuple[str, int]] = []

    def search(
        self, queries: npt.NDArray[np.float32], k: int, params: Any = None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """Like faiss: ``params.sel`` (an ID selector), when given, restricts the rows."""
        self.fetches.append(k)
        self.threads.append((threading.current_thread().name, faiss.omp_get_max_threads()))
        found = [self._one(query, k, params) for query in queries]
        return np.stack([s for s, _ in found]), np.stack([r for _, r in found])

    def _one(
        self, query: npt.NDArray[np.float32], k: int, params: Any
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        scores = self.vectors @ query
        rows = np.arange(self.ntotal)
        if params is not None:
            member = [bool(params.sel.is_member(int(row))) for row in rows]
            scores, rows = scores[member], rows[member]
        order = np.lexsort((-rows, -scores))[:k]
        # Like faiss, fewer rows than k are padded with -1.
        pad = k - len(order)
        top_scores = np.concatenate([scores[order], np.full(pad, -np.inf, dtype=np.float32)])
        top_rows = np.concatenate([rows[order], np.full(pad, -1)]).astype(np.int64)
        return top_scores.astype(np.float32), top_rows


def tie_corpus() -> npt.NDArray[np.float32]:
    """12 unit rows of dimension 8: rows 2..9 equal (the direction of :data:`TIE_QUERY`), the
    rest orthogonal to it and so lower."""
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((12, 8)).astype(np.float32)
    vectors[:, 0] = 0.0
    vectors[2:10] = 0.0
    vectors[2:10, 0] = 1.0
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


TIE_QUERY = np.eye(8, dtype=np.float32)[0]
"""The query that ties rows 2..9 of :func:`tie_corpus` at score 1."""


def served_with(
    vectors: npt.NDArray[np.float32],
    index: object,
    variant: str = "v",
    factory: str = "Flat",
    scan: ExactScan | None = None,
) -> ServedCollection:
    """A served ``captions`` collection of ``variant`` searching ``index`` over ``vectors``
    (scanned by ``scan`` where it is a flat index; None: numpy); row ``n`` has id ``item-n`` and
    metadata ``{"row": n}``."""
    ids = [f"item-{row}" for row in range(len(vectors))]
    collection = LoadedCollection(
        name="captions",
        index=index,
        ids=IdTable(ids),
        row_of={item: row for row, item in enumerate(ids)},
        metadata=[{"row": row} for row in range(len(vectors))],
        vectors=vectors,
        factory=factory,
        metric="ip",
    )
    return ServedCollection(
        variant=variant, bundle="b", bundle_version="1", collection=collection, scan=scan
    )
