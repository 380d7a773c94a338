"""Process-wide thread settings of a server process."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import faiss  # noqa: F401  (loads faiss's own BLAS, which is capped too)
import numpy  # noqa: F401
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from service.runtime.process_threads import TOKENIZERS_PARALLELISM, tune_process_threads


@pytest.fixture
def restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    interval = sys.getswitchinterval()
    # monkeypatch puts the variable back (or removes it) after the test.
    monkeypatch.setenv(TOKENIZERS_PARALLELISM, "unset by the test")
    with threadpool_limits(limits=None):  # puts the pools back as they were on exit
        yield
    sys.setswitchinterval(interval)


@pytest.mark.usefixtures("restored")
def test_blas_pools_are_capped_and_the_switch_interval_set() -> None:
    pools = tune_process_threads(1, 0.5, tokenizer_parallelism=False)
    assert pools
    assert set(pools.values()) == {1}
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas
    assert all(pool["num_threads"] == 1 for pool in blas)
    assert sys.getswitchinterval() == pytest.approx(0.0005)


@pytest.mark.usefixtures("restored")
def test_zero_leaves_the_blas_pools_alone() -> None:
    before = {pool["filepath"]: pool["num_threads"] for pool in threadpool_info()}
    tune_process_threads(0, 5.0, tokenizer_parallelism=True)
    after = {pool["filepath"]: pool["num_threads"] for pool in threadpool_info()}
    assert after == before


@pytest.mark.usefixtures("restored")
@pytest.mark.parametrize(("parallel", "value"), [(False, "false"), (True, "true")])
def test_the_tokenizers_pool_follows_the_setting(parallel: bool, value: str) -> None:
    tune_process_threads(0, 5.0, tokenizer_parallelism=parallel)
    assert os.environ[TOKENIZERS_PARALLELISM] == value
