"""The false-negative view on hand-made labelled results."""

from __future__ import annotations

import pytest

from evaluation.metrics.false_negatives import LabelledResult, false_negative_view


def _result(
    query: str,
    target: str,
    rank: int,
    coco: bool = False,
    cxc: float | None = None,
    cider: float = 0.0,
    cider_relevant: bool = False,
) -> LabelledResult:
    return LabelledResult(query, target, rank, coco, cxc, cider, cider_relevant)


RESULTS = [
    # query q1: a COCO positive first, then a CxC-relevant miss, then a CIDEr-only miss
    _result("q1", "a", 1, coco=True, cxc=4.5, cider=3.0),
    _result("q1", "b", 2, cxc=3.0, cider=0.2),
    _result("q1", "c", 3, cider=1.5, cider_relevant=True),
    # query q2: a CxC-rated but irrelevant miss, then a miss relevant to both
    _result("q2", "d", 1, cxc=2.9, cider=0.1),
    _result("q2", "e", 2, cxc=3.0, cider=2.0, cider_relevant=True),
    _result("q2", "f", 3),
]


def test_shares_count_every_top_k_result() -> None:
    view = false_negative_view(RESULTS, 2, cxc_threshold=3.0, cider_m=5, ks=(1, 2, 3))
    assert view["results@1"] == 2
    assert view["wrong@1"] == pytest.approx(1 / 2)  # d
    assert view["wrong_cxc@1"] == 0.0  # 2.9 < 3
    assert view["wrong_cxc_rated@1"] == pytest.approx(1 / 2)
    assert view["results@2"] == 4
    assert view["wrong@2"] == pytest.approx(3 / 4)  # b, d, e
    assert view["wrong_cxc@2"] == pytest.approx(2 / 4)  # b, e (threshold inclusive)
    assert view["wrong_cider@2"] == pytest.approx(1 / 4)  # e
    assert view["wrong_either@2"] == pytest.approx(2 / 4)
    assert view["results@3"] == 6
    assert view["wrong@3"] == pytest.approx(5 / 6)
    assert view["wrong_cider@3"] == pytest.approx(2 / 6)  # c, e
    assert view["wrong_either@3"] == pytest.approx(3 / 6)  # b, c, e
    assert view["queries"] == 2
    assert view["cider_m"] == 5


def test_examples_are_the_strongest_misses_one_per_query() -> None:
    texts = {"b": "caption b", "q2": "caption q2"}
    view = false_negative_view(
        RESULTS, 2, cxc_threshold=3.0, cider_m=5, ks=(3,), examples=5, texts=texts
    )
    examples = view["examples"]
    assert isinstance(examples, list)
    # b and e tie on CxC 3.0: e has the larger CIDEr-D; q1's best is then b (CxC beats
    # the CIDEr-only c); the COCO positive a is never an example
    assert [(e["query"], e["retrieved"]) for e in examples] == [("q2", "e"), ("q1", "b")]
    assert examples[0] == {
        "query": "q2",
        "retrieved": "e",
        "rank": 2,
        "cxc_score": 3.0,
        "cider_d": 2.0,
        "coco_label": "wrong",
        "caption": "caption q2",
    }
    assert examples[1]["caption"] == "caption b"
    tied = [_result("q1", "x", 2, cxc=4.0), _result("q2", "y", 1, cxc=4.0)]
    ordered = false_negative_view(tied, 2, cxc_threshold=3.0, cider_m=1, ks=(2,))["examples"]
    assert isinstance(ordered, list)
    assert [e["query"] for e in ordered] == ["q1", "q2"]  # full tie: query order


def test_no_results_gives_no_shares() -> None:
    view = false_negative_view([], 0, cxc_threshold=3.0, cider_m=1, ks=(1,))
    assert view["results@1"] == 0
    assert view["wrong@1"] is None
    assert view["examples"] == []
