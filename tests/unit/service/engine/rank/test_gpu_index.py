"""GpuSearchIndex: the GPU clone answers while k fits its selection, the CPU original beyond,
and GPU searches hold the process's lock (the selection against faiss: test_index_placement)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from service.engine.rank.gpu_index import GpuSearchIndex


def test_gpu_searches_hold_the_lock() -> None:
    seen: list[bool] = []

    class Probe:
        def search(self, _x: Any, k: int) -> Any:
            seen.append(lock.locked())
            return np.zeros((1, k), np.float32), np.zeros((1, k), np.int64)

    lock = threading.Lock()
    wrapped = GpuSearchIndex(gpu=Probe(), cpu=Probe(), lock=lock, max_k=4)
    wrapped.search(np.zeros((1, 2), np.float32), 4)
    wrapped.search(np.zeros((1, 2), np.float32), 5)
    assert seen == [True, False]


def test_its_size_is_the_cpu_original_s() -> None:
    class Sized:
        ntotal = 7

    assert GpuSearchIndex(gpu=object(), cpu=Sized(), lock=threading.Lock()).ntotal == 7
