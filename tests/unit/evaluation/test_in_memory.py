"""evaluate_with_scorer against independent brute-force oracles on the tiny dataset."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from evaluation.data.corpus import CxcData, load_cxc_data
from evaluation.data.ground_truth import RetrievalTask
from evaluation.data.task_groups import build_retrieval_task
from evaluation.data.task_plan import QUALITY_TASKS, RETRIEVAL_TASKS
from evaluation.in_memory import ScoreFn, Side, evaluate_with_scorer
from evaluation.metrics.correlation import bootstrap_spearman
from formats.cxc import RatingKind
from tests.fakes.fake_service import toy_similarity
from tests.fakes.tiny_data import NO_SIS_PARTNER, TinyDataset
from tests.unit.evaluation.metrics.test_correlation import _oracle_bootstrap

SAMPLES = 40


def toy_scorer(tiny: TinyDataset) -> ScoreFn:
    """The fake service's similarity as an in-memory scorer (images are their descriptions)."""

    def content(side: Side) -> str:
        if side.collection == "images":
            assert side.id is not None
            return tiny.descriptions[side.id]
        assert side.text is not None
        return side.text

    def score(left: Sequence[Side], right: Sequence[Side]) -> np.ndarray:
        return np.array([[toy_similarity(content(a), content(b)) for b in right] for a in left])

    return score


def _content(tiny: TinyDataset, collection: str, item: str) -> str:
    if collection == "images":
        return tiny.descriptions[item]
    return next(caption.text for caption in tiny.captions if caption.key == item)


def _oracle_retrieval(tiny: TinyDataset, task: RetrievalTask, k: int) -> dict[str, object]:
    """Sort every target by (-score, row) in plain Python; R@K and median by definition."""
    if task.target_collection == "images":
        targets = tiny.filenames
    else:
        targets = [caption.key for caption in tiny.captions]
    depth = min(k, len(targets))
    ranks: list[float] = []
    for query in task.queries:
        text = _content(tiny, task.query_collection, query)
        rows = [
            row for row, item in enumerate(targets) if not (task.exclude_query and item == query)
        ]
        rows.sort(
            key=lambda row: (
                -toy_similarity(text, _content(tiny, task.target_collection, targets[row])),
                row,
            )
        )
        ranked = [targets[row] for row in rows[:depth]]
        first = next(
            (rank for rank, item in enumerate(ranked, 1) if item in task.positives[query]),
            None,
        )
        ranks.append(np.inf if first is None else float(first))
    median = float(np.median(ranks))
    return {
        "R@1": sum(rank <= 1 for rank in ranks) / len(ranks),
        "R@5": sum(rank <= 5 for rank in ranks) / len(ranks),
        "R@10": sum(rank <= 10 for rank in ranks) / len(ranks),
        "median_rank": None if np.isinf(median) else median,
        "median_rank_censored": bool(np.isinf(median)),
        "queries": len(task.queries),
        "k": depth,
    }


@pytest.fixture
def data(tiny: TinyDataset) -> CxcData:
    return load_cxc_data(tiny.data_dir, tiny.split)


def test_every_task_matches_brute_force(tiny: TinyDataset, data: CxcData) -> None:
    result = evaluate_with_scorer(
        data, toy_scorer(tiny), k=20, bootstrap_samples=SAMPLES, seed=3, query_chunk=7
    )
    assert result.skipped == {}
    assert list(result.tasks) == list(QUALITY_TASKS)
    for name in RETRIEVAL_TASKS:
        task = build_retrieval_task(data, name)
        assert result.tasks[name] == _oracle_retrieval(tiny, task, 20), name
        assert len(result.recall_curves[name]) == 12 if task.target_collection == "images" else 20

    # Strict vs original protocols: the skipped queries are really skipped.
    assert result.tasks["i2t"]["queries"] == 11  # image 3 has no SITS caption ≥ 3
    assert result.tasks["i2t_original"]["queries"] == 12
    assert result.tasks["t2i_original"]["queries"] == 60
    i2i = build_retrieval_task(data, "i2i")
    assert tiny.filenames[NO_SIS_PARTNER] not in i2i.queries
    assert result.tasks["i2i"]["queries"] == len(i2i.queries) < 12

    # Correlations through the generic bootstrap, checked against scipy in a plain loop.
    for kind, ratings in ((RatingKind.SIS, tiny.sis), (RatingKind.SITS, tiny.sits)):
        left, right = kind.collections
        model = np.array(
            [
                toy_similarity(_content(tiny, left, r.item1), _content(tiny, right, r.item2))
                for r in ratings
            ]
        )
        human = np.array([r.agg_score for r in ratings])
        items = [r.item1 for r in ratings]
        generic = bootstrap_spearman(items, model, human, n_samples=SAMPLES, seed=3)
        entry = result.tasks[kind.value]
        assert entry == {**generic.as_report(), "pairs_skipped": 0}
        mean, std = _oracle_bootstrap(items, model, human, SAMPLES, 3)
        assert entry["spearman_mean"] == pytest.approx(mean, abs=1e-9)
        assert entry["spearman_std"] == pytest.approx(std, abs=1e-9)
    assert "pairs_skipped" not in result.tasks["sts"]

    # BISON: rows whose images are outside the split are skipped; ties count one half.
    points = 0.0
    scored = 0
    split_images = set(tiny.filenames)
    for row in tiny.bison:
        true_name = f"COCO_val2014_{row.true_image_id:012d}.jpg"
        other_name = f"COCO_val2014_{row.other_image_id:012d}.jpg"
        if true_name not in split_images or other_name not in split_images:
            continue
        true = toy_similarity(row.caption, tiny.descriptions[true_name])
        other = toy_similarity(row.caption, tiny.descriptions[other_name])
        points += 1.0 if true > other else 0.5 if true == other else 0.0
        scored += 1
    bison = result.tasks["bison"]
    assert bison["rows"] == scored == 12
    assert bison["accuracy"] == pytest.approx(points / scored)
    assert bison["skipped"] == 2
    assert bison["skipped_reasons"] == {"image_unavailable": 2}


def test_perfect_scorer_on_the_original_protocol(data: CxcData) -> None:
    image_of = {caption.key: caption.filename for caption in data.captions}

    def own_pairs(left: Sequence[Side], right: Sequence[Side]) -> np.ndarray:
        def match(a: Side, b: Side) -> float:
            if a.collection == b.collection:
                return 1.0 if a.id == b.id else 0.0
            caption, image = (a, b) if a.collection == "captions" else (b, a)
            return 1.0 if image_of.get(caption.id or "") == image.id else 0.0

        return np.array([[match(a, b) for b in right] for a in left])

    result = evaluate_with_scorer(
        data, own_pairs, tasks=("i2t_original", "t2i_original", "i2i"), bootstrap_samples=5
    )
    for name in ("i2t_original", "t2i_original"):
        assert result.tasks[name]["R@1"] == 1.0
        assert result.tasks[name]["median_rank"] == 1.0
    # i2i: the query (the only score-1 item) is excluded, so ranks follow row order only.
    assert result.tasks["i2i"]["R@1"] < 1.0


def test_limit_and_bad_scorer_shape(tiny: TinyDataset, data: CxcData) -> None:
    result = evaluate_with_scorer(data, toy_scorer(tiny), tasks=("t2i", "sts"), limit_queries=4)
    assert set(result.tasks) == {"t2i", "sts"}
    assert result.tasks["t2i"]["queries"] == 4

    def wrong(left: Sequence[Side], right: Sequence[Side]) -> np.ndarray:
        return np.zeros((len(left), len(right) + 1))

    with pytest.raises(ValueError, match="score_fn returned shape"):
        evaluate_with_scorer(data, wrong, tasks=("i2t",))
