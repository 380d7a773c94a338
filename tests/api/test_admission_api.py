"""Micro-batching and admission control through HTTP: concurrent requests share encoder calls,
a full queue and a passed deadline answer 503 overloaded with Retry-After, timings and metrics
report the queue.

The scenarios that hold the encoder busy on one batch run one encoder worker thread
(``encoder_workers=1``), so that the next requests queue behind that batch.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from fastapi.testclient import TestClient

from service.exceptions import ShuttingDownError
from service.http.app import create_app
from service.http.errors import ErrorCode, code_of
from service.lifecycle.state import STATE_ATTRIBUTE
from service.settings import Settings
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready

SEARCH = {"collection": "captions", "k": 2}


@dataclass
class GatedTextEncoder(FakeTextEncoder):
    """A fake text encoder whose calls wait for ``gate`` (``entered`` is set when one waits)."""

    gate: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)

    def encode_texts(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.entered.set()
        assert self.gate.wait(timeout=10), "the test never opened the gate"
        return super().encode_texts(texts)


@contextmanager
def serving(settings: Settings, encoder: FakeTextEncoder) -> Iterator[TestClient]:
    with TestClient(create_app(settings, encoder_factory=fake_factory(encoder))) as client:
        if isinstance(encoder, GatedTextEncoder):
            encoder.gate.set()
            wait_ready(client)
            encoder.gate.clear()
        else:
            wait_ready(client)
        encoder.calls.clear()
        yield client


def search(client: TestClient, text: str) -> httpx.Response:
    return client.post("/v1/search", json={**SEARCH, "query": {"text": text}})


def wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.005)


def metric_value(client: TestClient, name: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def queue_depth(client: TestClient) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("crisscross_encode_queue_depth{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def in_background(
    pool: ThreadPoolExecutor, client: TestClient, texts: Sequence[str]
) -> list[Future[httpx.Response]]:
    return [pool.submit(search, client, text) for text in texts]


def test_concurrent_searches_share_encoder_calls(settings: Settings) -> None:
    encoder = GatedTextEncoder()
    one_worker = settings.model_copy(update={"encoder_workers": 1})
    with serving(one_worker, encoder) as client, ThreadPoolExecutor(8) as pool:
        first = in_background(pool, client, ["a dog on a couch"])
        wait_for(encoder.entered.is_set)
        rest = in_background(pool, client, [f"a cat number {n}" for n in range(5)])
        wait_for(lambda: queue_depth(client) == 5)
        encoder.gate.set()
        responses = [future.result(timeout=10) for future in first + rest]
        metrics = client.get("/metrics").text
    assert [response.status_code for response in responses] == [200] * 6
    assert len(encoder.calls) == 2
    assert sorted(len(call) for call in encoder.calls) == [1, 5]
    for response in responses:
        body = response.json()
        assert float(response.headers["x-timing-queue-ms"]) >= 0
        assert body["timings_ms"]["queue"] == pytest.approx(
            float(response.headers["x-timing-queue-ms"]), abs=1e-3
        )
        assert body["timings_ms"]["encode"] > 0
    # Each search is answered for its own text: the top caption matches it.
    assert responses[0].json()["results"][0]["metadata"]["text"] == "a dog sleeping on a red couch"
    assert (
        'crisscross_encode_batch_requests_bucket{le="8.0",tower="text",variant="fake-bow"} 2.0'
        in (metrics)
    )
    assert 'crisscross_encode_batch_requests_sum{tower="text",variant="fake-bow"} 6.0' in metrics
    assert 'crisscross_encode_queue_wait_seconds_count{tower="text",variant="fake-bow"} 6.0' in (
        metrics
    )


def test_a_full_queue_answers_503_overloaded_with_retry_after(
    bundles_root: Path, variants_root: Path
) -> None:
    settings = Settings(
        bundles_root=bundles_root,
        variants_root=variants_root,
        max_queue_depth=2,
        overload_retry_after_s=4,
        encoder_workers=1,
    )
    encoder = GatedTextEncoder()
    with serving(settings, encoder) as client, ThreadPoolExecutor(4) as pool:
        running = in_background(pool, client, ["one"])
        wait_for(encoder.entered.is_set)
        queued = in_background(pool, client, ["two", "three"])
        wait_for(lambda: queue_depth(client) == 2)
        refused = search(client, "four")
        # Requests that need no encoder are still answered at once.
        item = {"item": {"collection": "captions", "id": "COCO_val2014:sentid:1000"}}
        by_item = client.post("/v1/search", json={**SEARCH, "query": item})
        encoder.gate.set()
        answered = [future.result(timeout=10) for future in running + queued]
        metrics = client.get("/metrics").text
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "4"
    error = refused.json()["error"]
    assert error["code"] == "overloaded"
    assert "max_queue_depth=2" in error["message"]
    assert by_item.status_code == 200
    assert [response.status_code for response in answered] == [200, 200, 200]
    assert ["four"] not in encoder.calls
    assert 'crisscross_requests_refused_total{reason="queue_full"} 1.0' in metrics
    assert 'route="/v1/search",status="503"' in metrics


def test_requests_beyond_the_in_flight_limit_are_refused_at_the_door(
    bundles_root: Path, variants_root: Path
) -> None:
    settings = Settings(
        bundles_root=bundles_root,
        variants_root=variants_root,
        max_concurrent_requests=2,
        overload_retry_after_s=3,
        encoder_workers=1,
        admission_wait_ms=0,  # no waiting room: a request beyond the limit is refused at once
    )
    encoder = GatedTextEncoder()
    with serving(settings, encoder) as client, ThreadPoolExecutor(4) as pool:
        running = in_background(pool, client, ["one"])
        wait_for(encoder.entered.is_set)
        queued = in_background(pool, client, ["two"])
        wait_for(lambda: queue_depth(client) == 1)
        refused = search(client, "three")
        # an invalid body is refused too: the door does not read it
        refused_unread = client.post("/v1/search", content=b"{not json")
        # routes that do no work are not counted
        health = client.get("/healthz")
        catalog = client.get("/v1/collections")
        encoder.gate.set()
        answered = [future.result(timeout=10) for future in running + queued]
        after = search(client, "four")
        metrics = client.get("/metrics").text
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "3"
    assert refused.headers["x-request-id"]
    error = refused.json()["error"]
    assert error["code"] == "overloaded"
    assert "max_concurrent_requests=2" in error["message"]
    assert refused_unread.status_code == 503
    assert health.status_code == 200
    assert catalog.status_code == 200
    assert [response.status_code for response in answered] == [200, 200]
    # once the two finished, the count is back to zero
    assert after.status_code == 200
    assert ["three"] not in encoder.calls
    assert 'crisscross_requests_refused_total{reason="in_flight"} 2.0' in metrics


def test_a_request_beyond_the_limit_waits_for_a_slot_in_the_waiting_room(
    bundles_root: Path, variants_root: Path
) -> None:
    settings = Settings(
        bundles_root=bundles_root,
        variants_root=variants_root,
        max_concurrent_requests=1,
        max_waiting_requests=1,
        admission_wait_ms=5_000,
        encoder_workers=1,
    )
    encoder = GatedTextEncoder()
    with serving(settings, encoder) as client, ThreadPoolExecutor(4) as pool:
        running = in_background(pool, client, ["one"])
        wait_for(encoder.entered.is_set)
        waiting = in_background(pool, client, ["two"])
        wait_for(lambda: metric_value(client, "crisscross_admission_waiting") == 1)
        room_full = search(client, "three")
        encoder.gate.set()
        answered = [future.result(timeout=10) for future in running + waiting]
        metrics = client.get("/metrics").text
    assert [response.status_code for response in answered] == [200, 200]
    assert answered[1].json()["results"][0]["metadata"]["text"] is not None
    assert room_full.status_code == 503
    assert "waiting room is full" in room_full.json()["error"]["message"]
    assert encoder.calls == [["one"], ["two"]]
    assert 'crisscross_requests_refused_total{reason="waiting_room_full"} 1.0' in metrics
    assert "crisscross_admission_waiting 0.0" in metrics
    assert "crisscross_admission_limit 1.0" in metrics  # not overloaded: max_concurrent_requests


def test_a_wait_for_a_slot_that_runs_out_is_refused(
    bundles_root: Path, variants_root: Path
) -> None:
    settings = Settings(
        bundles_root=bundles_root,
        variants_root=variants_root,
        max_concurrent_requests=1,
        admission_wait_ms=50,
        overload_retry_after_s=2,
    )
    encoder = GatedTextEncoder()
    with serving(settings, encoder) as client, ThreadPoolExecutor(4) as pool:
        running = in_background(pool, client, ["one"])
        wait_for(encoder.entered.is_set)
        started = time.monotonic()
        timed_out = search(client, "two")
        waited_s = time.monotonic() - started
        encoder.gate.set()
        assert running[0].result(timeout=10).status_code == 200
        metrics = client.get("/metrics").text
    assert timed_out.status_code == 503
    assert timed_out.headers["retry-after"] == "2"
    assert "admission_wait_ms" in timed_out.json()["error"]["message"]
    assert waited_s >= 0.05
    assert ["two"] not in encoder.calls
    assert 'crisscross_requests_refused_total{reason="queue_timeout"} 1.0' in metrics


def test_a_request_whose_deadline_passes_in_the_queue_is_dropped(
    bundles_root: Path, variants_root: Path
) -> None:
    settings = Settings(
        bundles_root=bundles_root,
        variants_root=variants_root,
        request_timeout_ms=300,
        encoder_workers=1,
    )
    encoder = GatedTextEncoder()
    with serving(settings, encoder) as client, ThreadPoolExecutor(4) as pool:
        running = in_background(pool, client, ["one"])
        wait_for(encoder.entered.is_set)
        started = time.monotonic()
        late = search(client, "too late")
        waited = time.monotonic() - started
        encoder.gate.set()
        running[0].result(timeout=10)
        metrics = client.get("/metrics").text
    assert late.status_code == 503
    assert late.headers["retry-after"] == "1"
    assert late.json()["error"]["code"] == "overloaded"
    assert "request_timeout_ms" in late.json()["error"]["message"]
    assert 0.25 < waited < 5
    assert ["too late"] not in encoder.calls
    assert 'crisscross_requests_refused_total{reason="deadline"} 1.0' in metrics


def test_embed_and_score_go_through_the_batcher(client: TestClient) -> None:
    embedded = client.post("/v1/embed", json={"texts": ["a dog", "a cat"]})
    assert embedded.status_code == 200
    assert float(embedded.headers["x-timing-queue-ms"]) >= 0
    scored = client.post(
        "/v1/score", json={"pairs": [{"left": {"text": "a dog"}, "right": {"text": "a dog"}}]}
    )
    assert scored.status_code == 200
    assert scored.json()["timings_ms"]["queue"] >= 0
    assert scored.json()["scores"][0] == pytest.approx(1.0, abs=1e-6)


def test_a_stored_item_query_has_no_queue_time(client: TestClient) -> None:
    item = {"item": {"collection": "captions", "id": "COCO_val2014:sentid:1000"}}
    response = client.post("/v1/search", json={**SEARCH, "query": item})
    assert response.status_code == 200
    assert "x-timing-queue-ms" not in response.headers
    assert response.json()["timings_ms"]["queue"] == 0.0


def test_the_access_log_reports_queue_time(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="crisscross.access")
    search(client, "a dog")
    (line,) = [r.getMessage() for r in caplog.records if r.name == "crisscross.access"]
    assert "queue_ms=" in line
    assert "queue_ms=-" not in line


def test_the_lifespan_shutdown_closes_the_batchers(settings: Settings) -> None:
    encoder = FakeTextEncoder()
    app = create_app(settings, encoder_factory=fake_factory(encoder))
    with TestClient(app) as client:
        wait_ready(client)
        assert search(client, "a dog").status_code == 200
        state = getattr(app.state, STATE_ATTRIBUTE)
        batcher = state.catalog.resolve_variant(None).batcher("text")
    with pytest.raises(ShuttingDownError) as refused:
        asyncio.run(batcher.submit(["after"], math.inf))
    assert code_of(refused.value) is ErrorCode.NOT_READY
