"""t2t query selection and positives from a tiny hand-made STS file."""

from __future__ import annotations

import pytest

from benchmarks.datasets import Caption, Rating
from benchmarks.ground_truth import rated_partners, t2t_cocaptions_task, t2t_task


def _caption(key: str, image_id: int, row: int) -> Caption:
    return Caption(key, row, image_id, f"{image_id}.jpg", key, key, row)


# Images: 1 → a, b, c; 2 → d, e, f; 3 → g, h.
CAPTIONS = [
    _caption(key, image, row)
    for row, (key, image) in enumerate(
        [("a", 1), ("b", 1), ("c", 1), ("d", 2), ("e", 2), ("f", 2), ("g", 3), ("h", 3)]
    )
]
STS = [
    Rating("c", "a", 4.5, "c2c_cocaption"),
    Rating("a", "b", 3.0, "c2c_cocaption"),  # exactly the threshold: positive
    Rating("d", "e", 2.99, "c2c_cocaption"),  # just below: not positive
    Rating("f", "f", 5.0, "c2c_isim"),  # self pair: ignored
    Rating("h", "d", 3.01, "c2c_isim"),
]


def test_partners_are_symmetric_and_threshold_inclusive() -> None:
    assert rated_partners(STS, 3.0) == {
        "a": {"b", "c"},
        "b": {"a"},
        "c": {"a"},
        "d": {"h"},
        "h": {"d"},
    }


def test_t2t_queries_in_row_order_with_partner_positives() -> None:
    task = t2t_task(STS, CAPTIONS)
    assert task.name == "t2t"
    assert task.queries == ("a", "b", "c", "d", "h")
    assert task.positives["a"] == {"b", "c"}
    assert task.positives["d"] == {"h"}
    assert task.exclude_query is True
    assert task.query_collection == task.target_collection == "captions"
    assert all(query not in task.positives[query] for query in task.queries)


def test_t2t_cocaptions_adds_the_other_captions_of_the_image() -> None:
    strict = t2t_task(STS, CAPTIONS)
    task = t2t_cocaptions_task(STS, CAPTIONS)
    assert task.name == "t2t_cocaptions"
    assert task.queries == strict.queries
    assert task.positives["a"] == {"b", "c"}
    assert task.positives["b"] == {"a", "c"}
    assert task.positives["d"] == {"e", "f", "h"}
    assert task.positives["h"] == {"d", "g"}
    for query in task.queries:
        assert strict.positives[query] <= task.positives[query]
        assert query not in task.positives[query]


def test_threshold_is_a_parameter() -> None:
    assert t2t_task(STS, CAPTIONS, threshold=2.99).queries == ("a", "b", "c", "d", "e", "h")


def test_unknown_caption_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="not in the captions file"):
        t2t_task([*STS, Rating("a", "zzz", 4.0, "c2c_isim")], CAPTIONS)


def test_limited_keeps_the_first_queries() -> None:
    task = t2t_cocaptions_task(STS, CAPTIONS).limited(2)
    assert task.queries == ("a", "b")
    assert set(task.positives) == {"a", "b"}
    full = t2t_task(STS, CAPTIONS)
    assert full.limited(None) is full
    assert full.limited(100) is full
