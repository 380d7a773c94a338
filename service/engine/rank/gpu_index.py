"""A faiss index served from a GPU, beside its CPU original (made by
:func:`service.lifecycle.index_placement.place_index`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

# faiss's GPU k-selection limit (GPU_MAX_SELECTION_K in faiss/gpu/utils/DeviceDefs.cuh).
GPU_MAX_K: Final = 2048


@dataclass(frozen=True)
class GpuSearchIndex:
    """A faiss index served from a GPU, beside its CPU original.

    ``search`` has the faiss signature: ``x`` float32 ``[n, d]`` C-contiguous → (scores float32
    ``[n, k]``, rows int64 ``[n, k]``). ``k`` above ``max_k`` is searched on ``cpu``; GPU
    searches hold ``lock``.
    """

    gpu: Any
    cpu: Any
    lock: threading.Lock
    max_k: int = GPU_MAX_K

    def search(self, x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows per query (GPU when ``k <= max_k``, else the CPU original)."""
        if k > self.max_k:
            scores, rows = self.cpu.search(x, k)
        else:
            with self.lock:
                scores, rows = self.gpu.search(x, k)
        return scores, rows

    @property
    def ntotal(self) -> int:
        """Number of indexed rows."""
        return int(self.cpu.ntotal)
