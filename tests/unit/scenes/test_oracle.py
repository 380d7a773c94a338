"""The oracle against the corpus's own benchmark files: perfect R@1 and BISON, exact scores.

The metric code here is deliberately plain (full rankings, CxC positives from the CSVs read by
the project's readers, ties broken by row order) and shares nothing with the generator's
vectorised search, so a wrong search or a wrong sampling shows up as a missed query.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from formats.cxc import read_ratings
from formats.karpathy import read_captions
from formats.layout import bison_path, captions_path, cxc_path
from scenes.oracle import SceneOracle

STS_THRESHOLD = 3.0
SIS_THRESHOLD = 2.5
SITS_THRESHOLD = 3.0


def _top1(
    query: str, targets: Sequence[str], score: Callable[[str, str], float], exclude_query: bool
) -> str:
    """The first target in row order among those with the highest score."""
    best, best_score = "", float("-inf")
    for target in targets:
        if exclude_query and target == query:
            continue
        value = score(query, target)
        if value > best_score:
            best, best_score = target, value
    return best


def _recall_at_1(
    positives: dict[str, set[str]],
    queries: Sequence[str],
    targets: Sequence[str],
    score: Callable[[str, str], float],
    exclude_query: bool,
) -> tuple[float, int, list[str]]:
    """(R@1, number of queries with a positive, missed queries)."""
    asked = [query for query in queries if positives.get(query)]
    missed = [
        query
        for query in asked
        if _top1(query, targets, score, exclude_query) not in positives[query]
    ]
    return 1.0 - len(missed) / max(len(asked), 1), len(asked), missed


def _symmetric(path: Path, threshold: float) -> dict[str, set[str]]:
    partners: dict[str, set[str]] = defaultdict(set)
    for rating in read_ratings(path):
        if rating.agg_score >= threshold:
            partners[rating.item1].add(rating.item2)
            partners[rating.item2].add(rating.item1)
    return partners


@pytest.fixture(scope="module")
def oracle(small_corpus: Path) -> SceneOracle:
    return SceneOracle.load(small_corpus)


@pytest.mark.slow  # exhaustive rankings in four directions: 5-15 s a split on 2 cores
@pytest.mark.parametrize("split", ["val", "test"])
def test_oracle_has_perfect_recall_at_1_in_all_four_directions(
    small_corpus: Path, oracle: SceneOracle, split: str
) -> None:
    captions = read_captions(captions_path(small_corpus, split))
    caption_keys = [record.key for record in captions]
    image_keys = list(dict.fromkeys(record.filename for record in captions))

    sts = _symmetric(cxc_path(small_corpus, "sts", split), STS_THRESHOLD)
    sis = _symmetric(cxc_path(small_corpus, "sis", split), SIS_THRESHOLD)
    caption_to_images: dict[str, set[str]] = defaultdict(set)
    image_to_captions: dict[str, set[str]] = defaultdict(set)
    for rating in read_ratings(cxc_path(small_corpus, "sits", split)):
        if rating.agg_score >= SITS_THRESHOLD:
            caption_to_images[rating.item1].add(rating.item2)
            image_to_captions[rating.item2].add(rating.item1)

    def image_caption_score(image: str, caption: str) -> float:
        return oracle.score(caption, image)

    results = {
        "t2t": _recall_at_1(sts, caption_keys, caption_keys, oracle.score_captions, True),
        "i2i": _recall_at_1(sis, image_keys, image_keys, oracle.score_images, True),
        "t2i": _recall_at_1(caption_to_images, caption_keys, image_keys, oracle.score, False),
        "i2t": _recall_at_1(
            image_to_captions, image_keys, caption_keys, image_caption_score, False
        ),
    }
    for task, (recall, queries, missed) in results.items():
        assert queries > 0, f"{task}: no queries with a positive"
        assert recall == 1.0, f"{task}: missed {len(missed)} of {queries}, e.g. {missed[:3]}"
    # Every original pair is a positive, so every caption and image is a t2i / i2t query.
    assert results["t2i"][1] == len(caption_keys)
    assert results["i2t"][1] == len(image_keys)


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_oracle_is_right_on_every_bison_row(
    small_corpus: Path, oracle: SceneOracle, split: str
) -> None:
    captions = read_captions(captions_path(small_corpus, split))
    filename_of = {record.image_id: record.filename for record in captions}
    with bison_path(small_corpus, split).open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(filename_of)
    wins = 0
    for row in rows:
        key = f"scenes_{split}:sentid:{row['caption_id']}"
        true_id = int(row["true_image_id"])
        other_id = int(
            row["image_id_1"] if row["image_id_0"] == row["true_image_id"] else row["image_id_0"]
        )
        true_score = oracle.score(key, filename_of[true_id])
        other_score = oracle.score(key, filename_of[other_id])
        wins += true_score > other_score
    assert wins == len(rows)


@pytest.mark.parametrize(
    ("task", "split"), [(t, s) for t in ("sts", "sis", "sits") for s in ("val", "test")]
)
def test_oracle_reproduces_every_rated_score(
    small_corpus: Path, oracle: SceneOracle, task: str, split: str
) -> None:
    score = {"sts": oracle.score_captions, "sis": oracle.score_images, "sits": oracle.score}[task]
    for rating in read_ratings(cxc_path(small_corpus, task, split)):
        assert score(rating.item1, rating.item2) == rating.agg_score, rating


def test_oracle_refuses_unknown_keys(oracle: SceneOracle) -> None:
    with pytest.raises(KeyError, match="unknown caption key"):
        oracle.score("COCO_val2014:sentid:1", "scenes_val_000020000001.png")
    with pytest.raises(KeyError, match="unknown image"):
        oracle.score_images("scenes_val_000020000001.png", "COCO_val2014_000000000001.jpg")
