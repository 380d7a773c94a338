"""The readers and t2t ground truth on the real validation files (small and fast)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from benchmarks.datasets import RatingKind, captions_path, read_captions, read_ratings
from benchmarks.ground_truth import t2t_cocaptions_task, t2t_task


def test_real_captions_and_sts(data_dir: Path) -> None:
    captions = read_captions(captions_path(data_dir, "val"))
    assert len(captions) == 25_000
    per_image = Counter(caption.image_id for caption in captions)
    assert len(per_image) == 5_000
    assert set(per_image.values()) == {5}
    assert any("\n" in caption.raw for caption in captions)
    assert all(caption.key == f"COCO_val2014:sentid:{caption.sentid}" for caption in captions)

    sts = read_ratings(RatingKind.STS.path(data_dir, "val"), RatingKind.STS)
    assert len(sts) == 44_009
    assert all(0.0 <= rating.agg_score <= 5.0 for rating in sts)
    assert len({rating.item1 for rating in sts}) == 25_000

    task = t2t_task(sts, captions)
    cocaptions = t2t_cocaptions_task(sts, captions)
    positive_pairs = sum(1 for rating in sts if rating.agg_score >= 3.0)
    assert positive_pairs == 14_783
    assert sum(len(positives) for positives in task.positives.values()) == 2 * positive_pairs
    assert len(task.queries) == 18_781
    assert cocaptions.queries == task.queries
    for query in task.queries:
        assert task.positives[query] <= cocaptions.positives[query]
        assert len(cocaptions.positives[query]) >= 4


def test_real_sis_and_sits_headers(data_dir: Path) -> None:
    assert len(read_ratings(RatingKind.SIS.path(data_dir, "val"), RatingKind.SIS)) == 42_767
    sits = read_ratings(RatingKind.SITS.path(data_dir, "val"), RatingKind.SITS)
    assert len(sits) == 44_722
    assert sits[0].item1.startswith("COCO_val2014:sentid:")
    assert sits[0].item2.endswith(".jpg")
