"""The query-embedding cache behind the routes: a repeated text skips the encoder and answers
as before; hits and misses counted; a reload empties it; off by default."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready

SEARCH = {"query": {"text": "a dog on a couch"}, "collection": "captions", "k": 3}


@pytest.fixture
def cached(settings: Settings, encoder: FakeTextEncoder) -> Iterator[TestClient]:
    app = create_app(
        settings.model_copy(update={"query_cache_entries": 2}),
        encoder_factory=fake_factory(encoder),
    )
    with TestClient(app) as test_client:
        wait_ready(test_client)
        encoder.calls.clear()
        yield test_client


def lookups(client: TestClient) -> dict[str, float]:
    found = {}
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("crisscross_query_cache_lookups_total{"):
            result = line.split('result="')[1].split('"')[0]
            found[result] = float(line.rsplit(" ", 1)[1])
    return found


def test_a_repeated_text_skips_the_encoder_and_answers_the_same(
    cached: TestClient, encoder: FakeTextEncoder
) -> None:
    first = cached.post("/v1/search", json=SEARCH).json()
    second = cached.post("/v1/search", json=SEARCH).json()
    assert encoder.calls == [["a dog on a couch"]]
    assert second["results"] == first["results"]
    assert lookups(cached) == {"miss": 1.0, "hit": 1.0}


def test_embed_answers_cached_and_new_texts_in_order(
    cached: TestClient, encoder: FakeTextEncoder
) -> None:
    cached.post("/v1/embed", json={"texts": ["a cat"]})
    answer = cached.post("/v1/embed", json={"texts": ["a bus", "a cat", "a bus"]}).json()
    plain = np.array(
        [encoder.encode_texts([text])[0] for text in ["a bus", "a cat", "a bus"]], np.float32
    )
    np.testing.assert_allclose(np.array(answer["embeddings"]), plain, atol=1e-7)
    assert encoder.calls[:2] == [["a cat"], ["a bus"]]


def test_the_least_recently_used_text_is_embedded_again(
    cached: TestClient, encoder: FakeTextEncoder
) -> None:
    for text in ["a", "b", "c", "a"]:
        cached.post("/v1/embed", json={"texts": [text]})
    assert encoder.calls == [["a"], ["b"], ["c"], ["a"]]


def test_off_by_default(client: TestClient, encoder: FakeTextEncoder) -> None:
    client.post("/v1/search", json=SEARCH)
    client.post("/v1/search", json=SEARCH)
    assert encoder.calls == [["a dog on a couch"], ["a dog on a couch"]]
    assert lookups(client) == {}
