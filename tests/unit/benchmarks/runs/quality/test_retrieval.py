"""The retrieval phase: probing shallow first, censored medians, image queries as uploads."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import httpx
import pytest

from benchmarks.runs.quality.run import run_quality
from evaluation.data.ground_truth import t2t_task
from tests.fakes.fake_service import FakeService, dual_tower_service
from tests.fakes.tiny_data import TinyDataset
from tests.unit.benchmarks.runs.quality.test_run import (
    expected_retrieval,
    images_config,
    run_report,
    searches_of,
    text_config,
)


def test_censored_median_when_k_is_small(tiny: TinyDataset) -> None:
    # A service that ranks positives last: every first positive lies beyond k.
    class Reversed(FakeService):
        def _search(self, body: dict[str, Any]) -> httpx.Response:
            response = super()._search({**body, "k": len(self.captions)})
            answer = response.json()
            answer["results"] = answer["results"][::-1][: body["k"]]
            for rank, result in enumerate(answer["results"], start=1):
                result["rank"] = rank
            return httpx.Response(200, json=answer)

    service = Reversed(tiny.captions)
    config = text_config(tiny, tasks=("t2t",), k=10)
    report = asyncio.run(run_quality(config, transport=service.transport())).report
    entry = report["tasks"]["t2t"]
    assert entry["median_rank"] is None
    assert entry["median_rank_censored"] is True
    assert report["checks"]["order_violations"] > 0


@pytest.mark.parametrize("probe_k", [1, 3])
def test_probing_shallow_first_gives_the_ranks_of_one_deep_search(
    tiny: TinyDataset, probe_k: int
) -> None:
    service = FakeService(tiny.captions)
    config = text_config(tiny, tasks=("t2t", "t2t_cocaptions"), probe_k=probe_k)
    report = asyncio.run(run_quality(config, transport=service.transport())).report
    count = len(tiny.captions)
    expected = expected_retrieval(tiny, k=count)
    for name in ("t2t", "t2t_cocaptions"):
        assert report["tasks"][name] == expected[name]
    asked = [(body.get("offset", 0), body["k"]) for body in searches_of(service)]
    queries = len(t2t_task(tiny.sts, tiny.captions).queries)
    # every query is probed once; only those with a positive beyond the probe are asked for
    # the rest, as the next page (the collection is smaller than the replay's second depth)
    assert asked.count((0, probe_k)) == queries
    deep = asked.count((probe_k, count - probe_k))
    assert 0 < deep < queries
    assert len(asked) == queries + deep
    assert report["settings"]["probe_k"] == probe_k


def test_upload_queries_exercise_the_pixel_path(tiny: TinyDataset) -> None:
    items = run_report(
        images_config(tiny, tasks=("i2t", "i2t_original", "i2i")), dual_tower_service(tiny)
    )
    service = dual_tower_service(tiny)
    config = images_config(
        tiny,
        tasks=("i2t", "i2t_original", "i2i"),
        image_queries="upload",
        max_uploads_per_request=3,
    )
    uploads = run_report(config, service)
    for name in ("i2t", "i2t_original", "i2i"):
        assert uploads["tasks"][name] == items["tasks"][name]
    assert uploads["settings"]["image_queries"] == "upload"
    assert uploads["settings"]["images_dir"] == str(tiny.images_dir)  # the default folder
    searches = searches_of(service)
    assert all("image" in body["query"] for body in searches)
    first = searches[0]
    assert base64.b64decode(first["query"]["image"]) in tiny.image_bytes.values()
    bulks = [body["searches"] for _, path, body in service.requests if path == "/v1/search/bulk"]
    assert max(len(searches) for searches in bulks) == 3  # uploads per request, as /v1/score


def test_caption_item_queries_search_by_the_stored_vectors(tiny: TinyDataset) -> None:
    """--caption-queries item: t2t and t2i send caption references, never a text, and score
    as the texts do on a service whose stored vectors are its encoder's."""
    tasks = ("t2t", "t2t_cocaptions", "t2i", "t2i_original")
    texts = run_report(images_config(tiny, tasks=tasks), dual_tower_service(tiny))
    service = dual_tower_service(tiny)
    items = run_report(images_config(tiny, tasks=tasks, caption_queries="item"), service)
    for name in tasks:
        assert items["tasks"][name] == texts["tasks"][name]
    assert items["settings"]["caption_queries"] == "item"
    searches = searches_of(service)
    assert searches
    assert all(set(body["query"]) == {"item"} for body in searches)
    assert {body["query"]["item"]["collection"] for body in searches} == {"captions"}


def test_every_retrieval_search_carries_the_search_fields(tiny: TinyDataset) -> None:
    service = dual_tower_service(tiny)
    fields = {"mode": "hybrid", "rerank": {"by": "exact"}, "window": 100}
    config = images_config(tiny, tasks=("t2t", "i2t", "t2i", "i2i"), search_fields=fields)
    asyncio.run(run_quality(config, transport=service.transport()))
    searches = searches_of(service)
    assert {search["collection"] for search in searches} == {"captions", "images"}
    assert all({key: search[key] for key in fields} == fields for search in searches)
