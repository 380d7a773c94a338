"""The generated files: real-data formats, id conventions, counts, scores, BISON, manifest."""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from formats.bison import BISON_COLUMNS
from formats.cxc import read_ratings
from formats.hashing import sha256_file
from formats.karpathy import CAPTION_COLUMNS, read_captions
from formats.layout import bison_path, captions_path, cxc_path, images_dir
from scenes.facts import fact_from_json, holds
from scenes.scene import Scene
from scenes.writer import ground_truth_path

from .conftest import SMALL_SIZES

SPLITS = ("train", "val", "test")
METHODS = {
    "sts": {"c2c_cocaption", "c2c_isim"},
    "sis": {"i2i_csim"},
    "sits": {"c2i_original", "c2i_intrasim"},
}
HEADERS = {
    "sts": "caption1,caption2,agg_score,sampling_method",
    "sis": "image1,image2,agg_score,sampling_method",
    "sits": "caption,image,agg_score,sampling_method",
}
THRESHOLDS = {"sts": 3.0, "sis": 2.5, "sits": 3.0}


def _ground_truth(root: Path, split: str) -> dict[str, dict[str, Any]]:
    with ground_truth_path(root, split).open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    return {str(record["filename"]): record for record in records}


@pytest.mark.parametrize("split", SPLITS)
def test_captions_file_follows_the_karpathy_format(small_corpus: Path, split: str) -> None:
    path = captions_path(small_corpus, split)
    with path.open(newline="", encoding="utf-8") as handle:
        assert tuple(next(csv.reader(handle))) == CAPTION_COLUMNS
    records = read_captions(path)
    images = SMALL_SIZES[split]
    assert len(records) == 5 * images
    assert len({record.image_id for record in records}) == images
    by_image: dict[int, list[int]] = defaultdict(list)
    for row, record in enumerate(records):
        assert record.key == f"scenes_{split}:sentid:{record.sentid}"
        assert record.filename == f"scenes_{split}_{record.image_id:012d}.png"
        assert record.image_index == row // 5
        assert record.caption_index == row % 5
        assert record.text == " ".join(record.raw.split())
        assert "\n" not in record.text
        assert (images_dir(small_corpus, split) / record.filename).is_file()
        by_image[record.image_id].append(record.sentid)
    assert all(sentids == sorted(sentids) for sentids in by_image.values())
    assert len(list(images_dir(small_corpus, split).iterdir())) == images


def test_ids_are_unique_across_splits(small_corpus: Path) -> None:
    sentids: list[int] = []
    image_ids: list[int] = []
    for split in SPLITS:
        records = read_captions(captions_path(small_corpus, split))
        sentids += [record.sentid for record in records]
        image_ids += list({record.image_id for record in records})
    assert len(set(sentids)) == len(sentids)
    assert len(set(image_ids)) == len(image_ids)


@pytest.mark.parametrize("task", ["sts", "sis", "sits"])
@pytest.mark.parametrize("split", SPLITS)
def test_cxc_files_follow_the_cxc_format(small_corpus: Path, task: str, split: str) -> None:
    path = cxc_path(small_corpus, task, split)
    assert path.read_text(encoding="utf-8").split("\n", 1)[0] == HEADERS[task]
    ratings = read_ratings(path)
    assert {rating.sampling_method for rating in ratings} == METHODS[task]
    assert all(0.0 <= rating.agg_score <= 5.0 for rating in ratings)
    assert all(round(rating.agg_score, 2) == rating.agg_score for rating in ratings)
    assert any(rating.agg_score >= THRESHOLDS[task] for rating in ratings)
    assert any(rating.agg_score < THRESHOLDS[task] for rating in ratings)
    captions = read_captions(captions_path(small_corpus, split))
    known = {record.key for record in captions} | {record.filename for record in captions}
    assert all(rating.item1 in known and rating.item2 in known for rating in ratings)
    assert all(rating.item1 != rating.item2 for rating in ratings)


@pytest.mark.parametrize("split", SPLITS)
def test_every_original_pair_is_rated_and_positive(small_corpus: Path, split: str) -> None:
    captions = read_captions(captions_path(small_corpus, split))
    originals = {
        (rating.item1, rating.item2): rating.agg_score
        for rating in read_ratings(cxc_path(small_corpus, "sits", split))
        if rating.sampling_method == "c2i_original"
    }
    assert set(originals) == {(record.key, record.filename) for record in captions}
    assert min(originals.values()) >= 3.0


@pytest.mark.parametrize("split", SPLITS)
def test_cocaption_pairs_form_a_cycle_per_image(small_corpus: Path, split: str) -> None:
    records = read_captions(captions_path(small_corpus, split))
    image_of = {record.key: record.image_id for record in records}
    cocaptions = [
        rating
        for rating in read_ratings(cxc_path(small_corpus, "sts", split))
        if rating.sampling_method == "c2c_cocaption"
    ]
    assert all(image_of[rating.item1] == image_of[rating.item2] for rating in cocaptions)
    firsts = Counter(rating.item1 for rating in cocaptions)
    assert set(firsts) == set(image_of)
    isim = [
        rating
        for rating in read_ratings(cxc_path(small_corpus, "sts", split))
        if rating.sampling_method == "c2c_isim"
    ]
    assert all(image_of[rating.item1] != image_of[rating.item2] for rating in isim)


@pytest.mark.parametrize("split", SPLITS)
def test_bison_rows_are_minimal_pairs(small_corpus: Path, split: str) -> None:
    path = bison_path(small_corpus, split)
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames or ()) == BISON_COLUMNS
        rows = list(reader)
    captions = {
        record.sentid: record for record in read_captions(captions_path(small_corpus, split))
    }
    filename_of = {record.image_id: record.filename for record in captions.values()}
    truth = _ground_truth(small_corpus, split)
    assert len(rows) == SMALL_SIZES[split]
    assert len({row["bison_id"] for row in rows}) == len(rows)
    positions: Counter[int] = Counter()
    for row in rows:
        pair = (int(row["image_id_0"]), int(row["image_id_1"]))
        true_id = int(row["true_image_id"])
        assert true_id in pair
        assert pair[0] != pair[1]
        positions[pair.index(true_id)] += 1
        assert row["true_image_karpathy_split"] == split
        assert row["caption_id_source"] == f"scenes-{split}"
        caption = captions[int(row["caption_id"])]
        assert caption.image_id == true_id
        assert caption.text == row["caption"]
        facts = next(
            [fact_from_json(fact) for fact in item["facts"]]
            for item in truth[filename_of[true_id]]["captions"]
            if item["key"] == caption.key
        )
        other_id = pair[1 - pair.index(true_id)]
        true_scene = Scene.from_json(truth[filename_of[true_id]]["scene"])
        other_scene = Scene.from_json(truth[filename_of[other_id]]["scene"])
        assert all(holds(fact, true_scene) for fact in facts)
        assert not all(holds(fact, other_scene) for fact in facts), row
    assert positions[0] > 0
    assert positions[1] > 0


@pytest.mark.parametrize("split", SPLITS)
def test_ground_truth_describes_every_image_and_caption(small_corpus: Path, split: str) -> None:
    truth = _ground_truth(small_corpus, split)
    captions = read_captions(captions_path(small_corpus, split))
    assert set(truth) == {record.filename for record in captions}
    texts = {record.key: record.text for record in captions}
    for record in truth.values():
        scene = Scene.from_json(record["scene"])
        assert 2 <= len(scene.objects) <= 4
        for caption in record["captions"]:
            assert texts[caption["key"]] == caption["text"]
            facts = [fact_from_json(fact) for fact in caption["facts"]]
            assert facts
            assert all(holds(fact, scene) for fact in facts)


def test_manifest_hashes_every_file(small_corpus: Path) -> None:
    manifest = json.loads((small_corpus / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["seed"] == 7
    assert manifest["generator"] == "crisscross-scenes"
    assert manifest["splits"]["val"]["images"] == SMALL_SIZES["val"]
    on_disk = {
        path.relative_to(small_corpus).as_posix()
        for path in small_corpus.rglob("*")
        if path.is_file() and path.name != "manifest.json"
    }
    assert set(manifest["files"]) == on_disk
    for name in sorted(on_disk)[:: max(1, len(on_disk) // 40)]:
        assert manifest["files"][name] == sha256_file(small_corpus / name)
