"""Request stages: the faiss thread cap reaches the worker thread that searches."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import faiss
import numpy as np
import pytest

from service import stages
from service.store import LiveIndexStore


def _on_fresh_thread(action: Callable[[], Any]) -> int:
    """Run ``action`` on a new thread; faiss's OpenMP thread count seen there afterwards."""
    seen: list[int] = []

    def body() -> None:
        action()
        seen.append(faiss.omp_get_max_threads())

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    return seen[0]


@pytest.mark.parametrize("threads", [0, 1, 3])
def test_the_search_worker_thread_gets_the_faiss_thread_cap(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LiveIndexStore, "search", staticmethod(lambda *_args: []))
    untouched = _on_fresh_thread(lambda: None)
    query = np.ones(4, dtype=np.float32)
    seen = _on_fresh_thread(
        lambda: stages._search_on_worker(threads, None, query, 10, ())  # type: ignore[arg-type]
    )
    # OpenMP keeps the count per thread: setting it on the main thread would not reach here.
    assert seen == (threads if threads > 0 else untouched)
