"""A collection's faiss index files: built from a factory string (always inner product), read
back memory-mapped, and their search parameters.

A flat index's codes are memory-mapped read-only (``IO_FLAG_MMAP_IFC``), so every process that
serves a version shares one copy in the page cache; an IVF index with on-disk inverted lists
reads them from the ``.ivfdata`` file beside it (``IO_FLAG_ONDISK_SAME_DIR``: the lists are
found next to the index file whatever folder it was written in).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import faiss
import numpy as np

from storage.manifest import TuningParameter


def build_index(vectors: np.ndarray, factory: str = "Flat") -> Any:
    """Build and fill a faiss index over ``vectors`` (float32 ``[n, d]``, L2-normalised).

    The metric is inner product, which equals cosine similarity on normalised rows. Indexes
    that need training (IVF, PQ) are trained on the same vectors.
    """
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    if data.ndim != 2:
        raise ValueError(f"vectors must be [n, d], got shape {data.shape}")
    index = trained_empty_index(factory, data)
    index.add(data)
    return index


def trained_empty_index(factory: str, sample: np.ndarray) -> Any:
    """An empty inner-product index of ``factory`` for ``sample``'s dimension (``ValueError``
    for a factory string faiss refuses), trained on ``sample`` when it needs training."""
    data = np.ascontiguousarray(sample, dtype=np.float32)
    if data.ndim != 2 or data.shape[0] == 0:
        raise ValueError(f"a training sample must be a non-empty [n, d] matrix, got {data.shape}")
    try:
        index = faiss.index_factory(int(data.shape[1]), factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise ValueError(f"faiss cannot build factory string {factory!r}: {exc}") from exc
    if not index.is_trained:
        index.train(data)
    return index


def write_index(index: Any, path: Path) -> None:
    """Write ``index`` to ``path`` (faiss's own format)."""
    faiss.write_index(index, str(path))


def read_index(path: Path) -> Any:
    """Read an index whose codes are memory-mapped where faiss can (flat indexes)."""
    return faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)


def read_on_disk_index(index_path: Path) -> Any:
    """Read an index whose inverted lists are an ``.ivfdata`` file beside it (after a rename)."""
    return faiss.read_index(str(index_path), faiss.IO_FLAG_ONDISK_SAME_DIR)


def set_search_parameter(index: Any, parameter: str, value: float) -> None:
    """Set a faiss search parameter (``nprobe``, ``efSearch``) by its ParameterSpace name."""
    faiss.ParameterSpace().set_index_parameter(index, parameter, float(value))


def search_parameter(index: Any, parameter: TuningParameter) -> int:
    """The value of ``nprobe`` (an IVF index) or ``efSearch`` (an HNSW index) set on ``index``."""
    if parameter == "nprobe":
        return int(faiss.extract_index_ivf(index).nprobe)
    hnsw: Any = faiss.downcast_index(index)
    return int(hnsw.hnsw.efSearch)
