"""Retrieval ground truth: t2t from a tiny hand-made STS file; i2t / t2i / *_original / i2i
query and positive selection against brute-force oracles."""

from __future__ import annotations

import random

import pytest

from evaluation.data.ground_truth import (
    RetrievalTask,
    cross_partners,
    i2i_task,
    i2t_original_task,
    i2t_task,
    rated_partners,
    t2i_original_task,
    t2i_task,
    t2t_cocaptions_task,
    t2t_task,
)
from formats.cxc import Rating
from formats.karpathy import CaptionRecord, ImageEntry, images_of_captions


def _caption(key: str, image_id: int, row: int) -> CaptionRecord:
    return CaptionRecord(row, key, image_id, f"{image_id}.jpg", image_id, 0, key, key, row)


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


def _image_caption(key: str, image: str, row: int) -> CaptionRecord:
    return CaptionRecord(row, key, ord(image), f"{image}.jpg", ord(image), 0, key, key, row)


# Images in row order A, B, C, D; captions a1 a2 (A), b1 b2 (B), c1 (C), d1 (D).
IMAGE_CAPTIONS = [
    _image_caption(key, key[0].upper(), row)
    for row, key in enumerate(["a1", "a2", "b1", "b2", "c1", "d1"])
]
SITS = [
    Rating("a1", "A.jpg", 3.0, "c2i_original"),  # exactly the threshold: positive
    Rating("a2", "A.jpg", 2.99, "c2i_original"),  # just below: not positive
    Rating("b1", "A.jpg", 4.0, "c2i_intrasim"),  # a positive across examples
    Rating("b1", "B.jpg", 5.0, "c2i_original"),
    Rating("c1", "C.jpg", 1.0, "c2i_original"),  # C and c1 have no positive: skipped
    Rating("d1", "B.jpg", 3.5, "c2i_intrasim"),
]
SIS = [
    Rating("A.jpg", "B.jpg", 2.5, "i2i_csim"),  # exactly the threshold: positive
    Rating("A.jpg", "D.jpg", 2.49, "i2i_csim"),  # just below
    Rating("C.jpg", "A.jpg", 3.0, "i2i_csim"),
    Rating("D.jpg", "D.jpg", 5.0, "i2i_csim"),  # self pair: ignored, D is no query
]


def _oracle_i2t(sits: list[Rating], images: list[ImageEntry]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for image in images:
        positives = {r.item1 for r in sits if r.item2 == image.filename and r.agg_score >= 3}
        if positives:
            found[image.filename] = positives
    return found


def _oracle_t2i(sits: list[Rating], captions: list[CaptionRecord]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for caption in captions:
        positives = {r.item2 for r in sits if r.item1 == caption.key and r.agg_score >= 3}
        if positives:
            found[caption.key] = positives
    return found


def _oracle_i2i(sis: list[Rating], images: list[ImageEntry]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for image in images:
        name = image.filename
        positives = {
            (r.item2 if r.item1 == name else r.item1)
            for r in sis
            if name in (r.item1, r.item2) and r.item1 != r.item2 and r.agg_score >= 2.5
        }
        if positives:
            found[name] = positives
    return found


def _as_dict(task: RetrievalTask) -> dict[str, set[str]]:
    assert list(task.positives) == list(task.queries)
    return {query: set(task.positives[query]) for query in task.queries}


def test_images_of_captions_in_first_appearance_order() -> None:
    images = images_of_captions(IMAGE_CAPTIONS)
    assert [image.filename for image in images] == ["A.jpg", "B.jpg", "C.jpg", "D.jpg"]
    assert [image.row for image in images] == [0, 1, 2, 3]
    assert images[0].captions == ("a1", "a2")
    assert images[0].image_id == ord("A")


def test_i2t_threshold_inclusive_and_imageless_queries_skipped() -> None:
    task = i2t_task(SITS, IMAGE_CAPTIONS)
    assert task.name == "i2t"
    assert (task.query_collection, task.target_collection) == ("images", "captions")
    assert task.exclude_query is False
    assert task.queries == ("A.jpg", "B.jpg")
    assert task.positives["A.jpg"] == {"a1", "b1"}
    assert task.positives["B.jpg"] == {"b1", "d1"}


def test_t2i_threshold_inclusive_and_captions_without_positive_skipped() -> None:
    task = t2i_task(SITS, IMAGE_CAPTIONS)
    assert (task.query_collection, task.target_collection) == ("captions", "images")
    assert task.queries == ("a1", "b1", "d1")
    assert task.positives["b1"] == {"A.jpg", "B.jpg"}
    assert task.positives["d1"] == {"B.jpg"}
    assert cross_partners(SITS, 3.0) == {"a1": {"A.jpg"}, "b1": {"A.jpg", "B.jpg"}, "d1": {"B.jpg"}}


def test_original_protocol_keeps_every_query() -> None:
    i2t = i2t_original_task(IMAGE_CAPTIONS)
    assert i2t.queries == ("A.jpg", "B.jpg", "C.jpg", "D.jpg")
    assert i2t.positives["A.jpg"] == {"a1", "a2"}
    assert i2t.positives["C.jpg"] == {"c1"}
    t2i = t2i_original_task(IMAGE_CAPTIONS)
    assert t2i.queries == tuple(caption.key for caption in IMAGE_CAPTIONS)
    assert t2i.positives["c1"] == {"C.jpg"}
    assert all(len(t2i.positives[query]) == 1 for query in t2i.queries)
    assert (t2i.exclude_query, i2t.exclude_query) == (False, False)


def test_i2i_threshold_self_exclusion_and_symmetry() -> None:
    task = i2i_task(SIS, IMAGE_CAPTIONS)
    assert (task.query_collection, task.target_collection) == ("images", "images")
    assert task.exclude_query is True
    assert task.queries == ("A.jpg", "B.jpg", "C.jpg")
    assert task.positives["A.jpg"] == {"B.jpg", "C.jpg"}
    assert task.positives["B.jpg"] == {"A.jpg"}
    assert task.positives["C.jpg"] == {"A.jpg"}
    assert all(query not in task.positives[query] for query in task.queries)


def test_thresholds_are_parameters() -> None:
    assert i2i_task(SIS, IMAGE_CAPTIONS, threshold=2.49).queries == (
        "A.jpg",
        "B.jpg",
        "C.jpg",
        "D.jpg",
    )
    assert i2t_task(SITS, IMAGE_CAPTIONS, threshold=1.0).queries == ("A.jpg", "B.jpg", "C.jpg")


def test_unknown_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="SITS image"):
        i2t_task([*SITS, Rating("a1", "Z.jpg", 4.0, "x")], IMAGE_CAPTIONS)
    with pytest.raises(ValueError, match="SITS image"):
        t2i_task([*SITS, Rating("a1", "Z.jpg", 4.0, "x")], IMAGE_CAPTIONS)
    with pytest.raises(ValueError, match="SITS caption"):
        t2i_task([*SITS, Rating("zz", "A.jpg", 4.0, "x")], IMAGE_CAPTIONS)
    with pytest.raises(ValueError, match="SIS image"):
        i2i_task([*SIS, Rating("A.jpg", "Z.jpg", 4.0, "x")], IMAGE_CAPTIONS)


def _random_corpus(rng: random.Random) -> tuple[list[CaptionRecord], list[Rating], list[Rating]]:
    images = [f"img{index}.jpg" for index in range(rng.randint(3, 9))]
    rng.shuffle(images)  # row order is not alphabetical
    captions: list[CaptionRecord] = []
    for image_index, image in enumerate(images):
        for number in range(rng.randint(1, 4)):
            key = f"{image}:{number}"
            captions.append(
                CaptionRecord(
                    len(captions),
                    key,
                    image_index,
                    image,
                    image_index,
                    number,
                    key,
                    key,
                    len(captions),
                )
            )
    scores = (0.0, 2.49, 2.5, 2.99, 3.0, 4.5)
    sits = [
        Rating(rng.choice(captions).key, rng.choice(images), rng.choice(scores), "m")
        for _ in range(rng.randint(0, 25))
    ]
    sis = [
        Rating(rng.choice(images), rng.choice(images), rng.choice(scores), "m")
        for _ in range(rng.randint(0, 15))
    ]
    return captions, sits, sis


def test_builders_match_brute_force_on_random_corpora() -> None:
    rng = random.Random(11)
    for _ in range(150):
        captions, sits, sis = _random_corpus(rng)
        images = images_of_captions(captions)
        assert _as_dict(i2t_task(sits, captions)) == _oracle_i2t(sits, images)
        assert _as_dict(t2i_task(sits, captions)) == _oracle_t2i(sits, captions)
        assert _as_dict(i2i_task(sis, captions)) == _oracle_i2i(sis, images)
        # Queries in row order.
        image_row = {image.filename: image.row for image in images}
        for task in (i2t_task(sits, captions), i2i_task(sis, captions)):
            rows = [image_row[query] for query in task.queries]
            assert rows == sorted(rows)
        original = i2t_original_task(captions, images)
        assert original.queries == tuple(image.filename for image in images)
        for image in images:
            assert set(original.positives[image.filename]) == {
                caption.key for caption in captions if caption.filename == image.filename
            }
