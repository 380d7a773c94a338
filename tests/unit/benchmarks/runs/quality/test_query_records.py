"""The HTML report's per-query sample: from a full run against the fake dual-tower service
(labels checked against the data files), and the sample's bound and priority order."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from benchmarks.runs.quality.query_records import (
    RECORD_DEPTH,
    Labeller,
    Stream,
    query_records,
    sample_queries,
)
from benchmarks.runs.quality.run import run_quality
from evaluation.data.corpus import CxcData
from evaluation.data.ground_truth import RetrievalTask
from formats.cxc import Rating, RatingKind
from formats.karpathy import CaptionRecord, images_of_captions
from tests.fakes.fake_service import dual_tower_service
from tests.fakes.tiny_data import TinyDataset
from tests.unit.benchmarks.runs.quality.test_run import images_config

RESULT_FIELDS = {"rank", "id", "score", "human", "coco", "cider"}


def sampled_run(tiny: TinyDataset, tmp_path: Path, html_queries: int) -> dict[str, Any]:
    """The ``queries`` of a run of every task with the CIDEr-D matrix."""
    config = images_config(
        tiny, cider="auto", cider_cache_dir=tmp_path / "cache", html_queries=html_queries
    )
    run = asyncio.run(run_quality(config, transport=dual_tower_service(tiny).transport()))
    assert run.queries is not None
    return run.queries


def human_scores(tiny: TinyDataset) -> dict[str, dict[tuple[str, str], float]]:
    """The oracle: stream → (query, result) → CxC score, both orders for STS / SIS."""

    def pairs(ratings: list[Rating], both: bool) -> dict[tuple[str, str], float]:
        found: dict[tuple[str, str], float] = {}
        for rating in ratings:
            keys = [(rating.item1, rating.item2)] + ([(rating.item2, rating.item1)] if both else [])
            for key in keys:
                found[key] = max(rating.agg_score, found.get(key, rating.agg_score))
        return found

    sits = pairs(tiny.sits, both=False)
    return {
        "t2t": pairs(tiny.sts, both=True),
        "i2i": pairs(tiny.sis, both=True),
        "t2i": sits,
        "i2t": {(image, caption): score for (caption, image), score in sits.items()},
    }


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_records_of_a_full_run_carry_the_labels(tiny: TinyDataset, tmp_path: Path) -> None:
    queries = sampled_run(tiny, tmp_path, html_queries=40)
    streams = {stream["name"]: stream for stream in queries["streams"]}
    assert set(streams) == {"t2t", "i2t", "t2i", "i2i"}
    assert queries["bound"] == {
        "max_queries": 40,
        "per_stream": 10,
        "depth": RECORD_DEPTH,
        "seed": 0,
        "max_false_negatives": 60,
        "pinned": False,
    }
    assert all(stream["shown"] <= 10 for stream in streams.values())
    assert len(queries["records"]) == sum(stream["shown"] for stream in streams.values())
    assert streams["t2i"]["cider"]
    assert streams["i2t"]["cider"]
    assert not streams["t2t"]["cider"]
    assert not streams["i2i"]["coco_labels"]

    image_of = {caption.key: caption.filename for caption in tiny.captions}
    oracle = human_scores(tiny)
    for record in queries["records"]:
        stream, query, results = record["stream"], record["query"], record["results"]
        assert record["query_kind"] == ("image" if stream[0] == "i" else "caption")
        assert [result["rank"] for result in results] == list(range(1, len(results) + 1))
        assert 0 < len(results) <= RECORD_DEPTH
        scores = [result["score"] for result in results]
        assert scores == sorted(scores, reverse=True)
        for result in results:
            assert set(result) == RESULT_FIELDS
            item = result["id"]
            assert result["human"] == oracle[stream].get((query, item))
            expected_coco = {
                "t2t": image_of.get(item) == image_of.get(query),
                "i2t": image_of.get(item) == query,
                "t2i": image_of.get(query) == item,
                "i2i": None,
            }[stream]
            assert result["coco"] == expected_coco
            assert (result["cider"] is not None) == (stream in ("i2t", "t2i"))
        if record["query_kind"] == "caption":
            assert query in queries["captions"]

    gallery = queries["false_negatives"]
    keys = [(-entry["human"], entry["rank"]) for entry in gallery]
    assert keys == sorted(keys)
    for entry in gallery:
        assert entry["coco"] is False
        assert entry["human"] >= (2.5 if entry["stream"] == "i2i" else 3.0)


def caption(key: str, image: str, row: int) -> CaptionRecord:
    """A caption row of its own image."""
    return CaptionRecord(
        sentid=row,
        key=key,
        image_id=row,
        filename=image,
        image_index=row,
        caption_index=0,
        text=f"caption {key}",
        raw=f"caption {key}",
        row=row,
    )


def toy_data(count: int) -> tuple[CxcData, RetrievalTask, dict[str, tuple[str, ...]]]:
    """``count`` images with one caption each; caption i retrieves captions i+1, i+2; STS rates
    (c0, c2) 4.5 and (c5, c7) 1.0."""
    captions = [caption(f"c{row}", f"im{row}.png", row) for row in range(count)]
    data = CxcData(
        dataset="scenes",
        split="test",
        captions=captions,
        images=images_of_captions(captions),
        ratings={
            RatingKind.STS: [
                Rating("c0", "c2", 4.5, "c2c_isim"),
                Rating("c5", "c7", 1.0, "c2c_isim"),
            ]
        },
    )
    keys = [record.key for record in captions]
    task = RetrievalTask(
        name="t2t",
        query_collection="captions",
        target_collection="captions",
        queries=tuple(keys),
        positives={key: frozenset({"c0"}) for key in keys},
        exclude_query=True,
    )
    top = {
        key: tuple(keys[(row + step) % count] for step in (1, 2)) for row, key in enumerate(keys)
    }
    return data, task, top


def test_sample_is_bounded_seeded_and_puts_judged_queries_first() -> None:
    data, task, top = toy_data(50)
    labeller = Labeller(data, None)
    stream = Stream(name="t2t", tasks=[task], top_ids=top, top_scores={})
    chosen = sample_queries(stream, labeller, 5, seed=3, index=0, first={"c40"})
    assert len(chosen) == 5
    assert {"c40", "c0", "c5"} <= set(chosen)  # the gallery's, then those with a rated result
    assert chosen == sample_queries(stream, labeller, 5, seed=3, index=0, first={"c40"})
    assert chosen == sorted(chosen, key=lambda key: int(key[1:]))  # stream order

    queries = query_records([([task], top)], {}, data, None, max_queries=6, seed=0)
    assert len(queries["records"]) == 6
    assert queries["false_negatives"] == [
        {
            "stream": "t2t",
            "query": "c0",
            "rank": 2,
            "id": "c2",
            "score": None,
            "human": 4.5,
            "coco": False,
            "cider": None,
        }
    ]
    assert set(queries["captions"]) >= {"c0", "c2"}


def test_pinned_ids_replace_the_sample_in_stream_order() -> None:
    data, task, top = toy_data(50)
    pinned = {"t2t": ("c30", "c7", "missing"), "i2t": ("im1.png",)}
    queries = query_records([([task], top)], {}, data, None, max_queries=2, seed=0, pinned=pinned)
    assert [record["query"] for record in queries["records"]] == ["c7", "c30"]
    assert queries["bound"]["pinned"] is True
    assert queries["streams"][0]["shown"] == 2
    unpinned = query_records([([task], top)], {}, data, None, max_queries=2, seed=0, pinned={})
    assert unpinned["records"] == []
