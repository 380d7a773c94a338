"""The quality replay: requests cut within budgets, bulk searches (the ranks of one search per
query, whatever the bulk size), /v1/score batching under upload limits, scores in input order."""

from __future__ import annotations

import asyncio
import base64
import random
from pathlib import Path

import pytest

from benchmarks.drivers import replay
from benchmarks.drivers.http_client import CrisscrossClient, JsonObject
from benchmarks.drivers.query_sides import (
    ImageFile,
    PairSide,
    item_ref,
    text_query,
)
from benchmarks.drivers.replay import (
    RetrievalReplay,
    cut_requests,
    replay_retrieval,
    replay_scores,
    score_batches,
)
from crisscross_client import CrisscrossError
from evaluation.data.ground_truth import t2t_cocaptions_task, t2t_task
from tests.fakes.fake_service import FakeService, toy_similarity
from tests.fakes.tiny_data import TinyDataset


def test_cut_requests_is_greedy_within_every_budget() -> None:
    rng = random.Random(3)
    for _ in range(300):
        budgets = (rng.randint(1, 6), rng.randint(1, 60))
        costs = [(1, rng.randint(0, 70)) for _ in range(rng.randint(0, 30))]
        requests = cut_requests(costs, budgets)
        assert [index for request in requests for index in request] == list(range(len(costs)))
        for number, request in enumerate(requests):
            used = [sum(costs[index][kind] for index in request) for kind in (0, 1)]
            within = all(spent <= budget for spent, budget in zip(used, budgets, strict=True))
            assert within or len(request) == 1  # an item over a budget still goes, alone
            if number + 1 < len(requests):  # greedy: the next item would not have fitted
                more = [spent + cost for spent, cost in zip(used, costs[request.stop], strict=True)]
                assert any(total > budget for total, budget in zip(more, budgets, strict=True))


def _replay(service: FakeService, tiny: TinyDataset, **options: object) -> RetrievalReplay:
    tasks = [t2t_task(tiny.sts, tiny.captions), t2t_cocaptions_task(tiny.sts, tiny.captions)]
    text_of = {caption.key: caption.text for caption in tiny.captions}

    async def scenario() -> RetrievalReplay:
        async with CrisscrossClient("http://fake", transport=service.transport()) as client:
            return await replay_retrieval(
                client,
                tasks,
                lambda query: text_query(text_of[query]),
                len(tiny.captions),
                show_progress=False,
                **options,  # type: ignore[arg-type]
            )

    return asyncio.run(scenario())


def test_bulk_replays_give_the_ranks_of_single_searches_whatever_the_bulk_size(
    tiny: TinyDataset,
) -> None:
    # bulk_size 1 is one search per request: the reference the bigger bulks must match
    single = _replay(FakeService(tiny.captions), tiny, bulk_size=1, probe_k=3, keep_top=5)
    for bulk_size, concurrency in ((7, 1), (7, 3), (1024, 2)):
        service = FakeService(tiny.captions)
        bulk = _replay(
            service, tiny, bulk_size=bulk_size, concurrency=concurrency, probe_k=3, keep_top=5
        )
        assert bulk == single
        bulks = [body["searches"] for _, path, body in service.requests if path.endswith("bulk")]
        assert all(len(searches) <= bulk_size for searches in bulks)
        assert any(searches[0]["k"] > 5 for searches in bulks)  # some asked again, deeper
        assert all(not search["include_metadata"] for searches in bulks for search in searches)
    assert single.served_by.bundle_versions == {"20260101T000000Z"}


def test_pages_down_the_ladder_give_the_ranks_of_one_search_at_k(
    tiny: TinyDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference: one search per query at k. Then a probe of 2, the next page down to a
    # middle depth of 6, the last down to k; the ranks, kept ids and scores must be the same.
    count = len(tiny.captions)
    one_search = _replay(FakeService(tiny.captions), tiny, probe_k=count, keep_top=2)
    monkeypatch.setattr(replay, "DEEPEN_AT", 6)
    service = FakeService(tiny.captions)
    paged = _replay(service, tiny, probe_k=2, keep_top=2)
    assert paged == one_search
    asked = [
        (search.get("offset", 0), search["k"])
        for _, path, body in service.requests
        if path.endswith("bulk")
        for search in body["searches"]
    ]
    assert set(asked) == {(0, 2), (2, 4), (6, count - 6)}
    probes, middle, last = (asked.count(page) for page in ((0, 2), (2, 4), (6, count - 6)))
    assert probes > middle > last > 0  # each page goes to the queries the one above missed
    assert one_search.first_ranks != {}


def test_a_refused_search_fails_the_replay_naming_its_query(tiny: TinyDataset) -> None:
    with pytest.raises(CrisscrossError, match=r"query '.+' \(\d+ of \d+ in its bulk failed\)"):
        _replay(FakeService(tiny.captions, towers=("image",)), tiny)


def _check_batches(
    pairs: list[tuple[PairSide, PairSide]], size: int, uploads: int, budget: int
) -> None:
    batches = score_batches(pairs, size, uploads, budget)
    assert [index for batch in batches for index in batch] == list(range(len(pairs)))

    def cost(indices: list[int]) -> tuple[int, int, int]:
        sides = [side for index in indices for side in pairs[index]]
        files = [side for side in sides if isinstance(side, ImageFile)]
        return len(indices), len(files), sum(side.encoded_size for side in files)

    for number, batch in enumerate(batches):
        count, files, data = cost(list(batch))
        within = count <= size and files <= uploads and data <= budget
        assert within or count == 1  # a single oversized pair still goes alone
        if number + 1 < len(batches):  # greedy: the next pair would not have fitted
            count, files, data = cost([*batch, batch.stop])
            assert count > size or files > uploads or data > budget


def test_score_batches_respect_every_limit() -> None:
    rng = random.Random(2)
    for _ in range(200):
        pairs: list[tuple[PairSide, PairSide]] = []
        for _ in range(rng.randint(0, 30)):
            left: PairSide = text_query("x")
            right: PairSide = (
                ImageFile(Path("f"), rng.randint(1, 400))
                if rng.random() < 0.6
                else item_ref("images", "a")
            )
            if rng.random() < 0.2:
                left = ImageFile(Path("g"), rng.randint(1, 400))
            pairs.append((left, right))
        _check_batches(pairs, rng.randint(1, 8), rng.randint(2, 6), rng.randint(100, 1500))
    with pytest.raises(ValueError, match="max_uploads"):
        score_batches([], 4, 1, 10)


def test_replay_scores_sends_uploads_in_limited_batches(tiny: TinyDataset) -> None:
    uploads = {content: tiny.descriptions[name] for name, content in tiny.image_bytes.items()}
    service = FakeService(
        tiny.captions, uploads=uploads, towers=("text", "image"), max_images_per_request=3
    )
    names = tiny.filenames[:7]
    pairs: list[tuple[PairSide, PairSide]] = [
        (text_query(f"a {name}"), ImageFile(tiny.images_dir / name, len(tiny.image_bytes[name])))
        for name in names
    ]

    async def scenario() -> JsonObject:
        async with CrisscrossClient("http://fake", transport=service.transport()) as client:
            replay = await replay_scores(
                client, pairs, batch_size=100, max_uploads=3, show_progress=False
            )
        return {"scores": list(replay.scores), "uploads": replay.uploads, "n": replay.requests}

    result = asyncio.run(scenario())
    assert result["uploads"] == 7
    assert result["n"] == 3  # 3 + 3 + 1 uploads
    expected = [toy_similarity(f"a {name}", tiny.descriptions[name]) for name in names]
    assert result["scores"] == expected
    sent = [body for _, path, body in service.requests if path == "/v1/score"]
    first = sent[0]["pairs"][0]["right"]
    assert base64.b64decode(first["image"]) == tiny.image_bytes[names[0]]


def test_every_search_of_a_replay_carries_the_fields(tiny: TinyDataset) -> None:
    service = FakeService(tiny.captions)
    task = t2t_task(tiny.sts, tiny.captions)
    text_of = {caption.key: caption.text for caption in tiny.captions}
    levers = {"mode": "lexical", "search_params": {"exact": True}}

    async def replay() -> None:
        async with CrisscrossClient("http://fake", transport=service.transport()) as client:
            await replay_retrieval(
                client,
                [task],
                lambda query: text_query(text_of[query]),
                len(tiny.captions),
                show_progress=False,
                probe_k=2,
                fields=levers,
            )

    asyncio.run(replay())
    searches = [
        search
        for _, path, body in service.requests
        if path == "/v1/search/bulk"
        for search in body["searches"]
    ]
    assert len(searches) > len(task.queries)  # probed, then some asked again
    assert all({key: search[key] for key in levers} == levers for search in searches)
