"""The quality replay: /v1/score batching under upload limits, scores in input order."""

from __future__ import annotations

import asyncio
import base64
import random
from pathlib import Path

import pytest

from benchmarks.drivers.http_client import CrisscrossClient, JsonObject
from benchmarks.drivers.query_sides import (
    ImageFile,
    PairSide,
    item_ref,
    text_query,
)
from benchmarks.drivers.replay import replay_scores, score_batches
from tests.fakes.fake_service import FakeService, toy_similarity
from tests.fakes.tiny_data import TinyDataset


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
