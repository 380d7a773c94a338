"""The readers and the task ground truth on the real validation files (a few seconds)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from evaluation.data.bison_rows import plan_bison
from evaluation.data.corpus import load_cxc_data
from evaluation.data.ground_truth import t2t_cocaptions_task, t2t_task
from evaluation.data.task_groups import build_retrieval_task
from formats.cxc import RatingKind, read_ratings
from formats.karpathy import read_captions
from formats.layout import captions_path


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


def test_real_image_tasks_sis_sits_and_bison(data_dir: Path) -> None:
    data = load_cxc_data(data_dir, "val")
    assert len(data.images) == 5_000
    assert data.images[0].row == 0
    assert all(len(image.captions) == 5 for image in data.images)
    assert len(data.ratings[RatingKind.SIS]) == 42_767
    assert len(data.ratings[RatingKind.SITS]) == 44_722
    assert data.bison_file == data_dir / "bison" / "bison_shared.csv"
    assert data.bison is not None
    assert len(data.bison) == 41_674
    assert data.missing == {}

    sits = data.ratings[RatingKind.SITS]
    i2t = build_retrieval_task(data, "i2t")
    t2i = build_retrieval_task(data, "t2i")
    positive_pairs = sum(1 for rating in sits if rating.agg_score >= 3.0)
    assert positive_pairs == 37_254
    assert sum(len(positives) for positives in i2t.positives.values()) == positive_pairs
    assert sum(len(positives) for positives in t2i.positives.values()) == positive_pairs
    assert len(i2t.queries) == 5_000
    assert len(t2i.queries) == 24_963
    assert len(build_retrieval_task(data, "i2i").queries) == 4_927
    i2t_original = build_retrieval_task(data, "i2t_original")
    t2i_original = build_retrieval_task(data, "t2i_original")
    assert len(i2t_original.queries) == 5_000
    assert len(t2i_original.queries) == 25_000
    # CxC rates every original pair; almost all of them are CxC positives too.
    covered = sum(
        1
        for caption, images in t2i_original.positives.items()
        if images <= t2i.positives.get(caption, frozenset())
    )
    assert covered == 24_962

    # BISON: every id is named with the COCO val2014 pattern read from the captions file; with
    # only the split's images served, the rows whose two images are both in it remain.
    namer = data.image_namer()
    assert namer.pattern == ("COCO_val2014_", ".jpg")
    assert namer(143961) == "COCO_val2014_000000143961.jpg"
    served = {image.filename for image in data.images}
    plan = plan_bison(data.bison, namer, lambda name: name if name in served else None)
    assert len(plan.rows) == 795
    assert plan.skipped == {"image_unavailable": 41_674 - 795}
    karpathy_val = [row for row in data.bison if row.caption_id_source == "karpathy-val"]
    assert len(karpathy_val) == 5_900
    sentids = {caption.sentid for caption in data.captions}
    assert all(row.caption_id in sentids for row in karpathy_val)
