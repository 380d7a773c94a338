"""The query-embedding cache: least recently used out first, keyed by fingerprint and text."""

from __future__ import annotations

import numpy as np
import pytest

from service.engine.encode.query_cache import QueryCache


def row(value: float) -> np.ndarray:
    return np.full(4, value, dtype=np.float32)


def test_a_kept_row_is_a_read_only_copy() -> None:
    cache = QueryCache(2)
    given = row(1.0)
    cache.put("f", "a cat", given)
    given[:] = 9.0
    kept = cache.get("f", "a cat")
    assert kept is not None
    np.testing.assert_array_equal(kept, row(1.0))
    with pytest.raises(ValueError, match="read-only"):
        kept[0] = 2.0


def test_the_least_recently_used_goes_first() -> None:
    cache = QueryCache(2)
    cache.put("f", "a", row(1.0))
    cache.put("f", "b", row(2.0))
    assert cache.get("f", "a") is not None  # a is now the most recent
    cache.put("f", "c", row(3.0))
    assert cache.get("f", "b") is None
    assert cache.get("f", "a") is not None
    assert cache.get("f", "c") is not None
    assert len(cache) == 2


def test_another_fingerprint_never_answers() -> None:
    cache = QueryCache(4)
    cache.put("old", "a cat", row(1.0))
    assert cache.get("new", "a cat") is None


def test_clear_and_bad_sizes() -> None:
    cache = QueryCache(1)
    cache.put("f", "a", row(1.0))
    cache.clear()
    assert len(cache) == 0
    with pytest.raises(ValueError, match="positive"):
        QueryCache(0)
