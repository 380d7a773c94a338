"""End to end, hostile clients against a real ``python -m service serve`` process (one process,
and two workers under the supervisor): slowloris heads and stalled bodies held open by another
process while an honest client searches; oversized and numerous headers; a body over its limit;
a connection flood; clients that vanish mid-body. Latency is the benchmark's business
(``benchmarks hostile``); here every honest answer must be a 200 and every attacker must be
closed within its deadline, counted in ``/metrics``."""

from __future__ import annotations

import asyncio
import re
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchmarks.runs.hostile.config import HostileRunConfig
from benchmarks.runs.hostile.run import run_hostile
from tests.e2e.conftest import LiveService, start_service, stop_service
from tests.fakes.socket_server import parse_response, read_until_closed

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HEAD_TIMEOUT_S = 2.0
BODY_TIMEOUT_S = 3.0
MAX_CONNECTIONS = 48
HOSTILE_ENV = {
    "CRISSCROSS_HEAD_TIMEOUT_S": str(HEAD_TIMEOUT_S),
    "CRISSCROSS_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
}
SEARCH_HEAD = b"POST /v1/search HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"


@pytest.fixture(params=[1, 2], ids=["1-worker", "2-workers"])
def hostile_service(
    request: pytest.FixtureRequest, served_roots: tuple[Path, Path], tmp_path: Path
) -> Iterator[LiveService]:
    variants_root, bundles_root = served_roots
    env = {**HOSTILE_ENV, "CRISSCROSS_WORKERS": str(request.param)}
    service = start_service(variants_root, bundles_root, tmp_path / "service.log", env)
    yield service
    assert stop_service(service) == 0, service.log()


def counter(metrics: str, name: str, **labels: str) -> float:
    """The value of one counter series in a Prometheus exposition (0 when absent)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    match = re.search(rf"^{name}\{{{re.escape(wanted)}\}} ([0-9.e+]+)$", metrics, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_an_honest_client_keeps_answering_beside_slowloris_heads_and_stalled_bodies(
    hostile_service: LiveService, data_dir: Path
) -> None:
    # More stalled bodies than max_concurrent_requests (64): they must hold no in-flight slot.
    config = HostileRunConfig(
        url=hostile_service.url,
        data_dir=data_dir,
        stalled_bodies=100,
        slowloris=300,
        line_interval_s=0.5,
        duration_s=2.0,
        attack_s=BODY_TIMEOUT_S + 3.0,
        warmup_requests=5,
        head_timeout_s=HEAD_TIMEOUT_S,
        body_timeout_s=BODY_TIMEOUT_S,
    )
    report = asyncio.run(run_hostile(config)).report
    honest = report["honest"]
    for phase in ("alone", "attacked"):
        assert honest[phase]["requests"] > 0
        assert honest[phase]["answers"] == {"200": honest[phase]["requests"]}, honest
    crowd = report["crowd"]
    assert crowd["open_at_start"] == 400, crowd
    stalled, slow = crowd["stalled_body"], crowd["slowloris"]
    assert stalled["closed"] >= 100, stalled
    assert stalled["statuses"].get("408", 0) >= 0.9 * stalled["closed"], stalled
    assert stalled["held_max_s"] <= BODY_TIMEOUT_S + 1.0, stalled
    assert slow["closed"] >= 300, slow
    assert slow["statuses"].get("408", 0) >= 0.9 * slow["closed"], slow
    assert slow["held_max_s"] <= HEAD_TIMEOUT_S + 1.0, slow
    counted = report["service_counted"]
    body_key = 'crisscross_client_refusals_total{reason="body_timeout"}'
    head_key = 'crisscross_client_refusals_total{reason="head_timeout"}'
    assert counted[body_key] >= stalled["closed"] * 0.9, counted
    assert counted[head_key] >= slow["closed"] * 0.9, counted
    assert not [key for key in counted if 'status="5' in key], counted


def exchange(service: LiveService, data: bytes) -> httpx.Response:
    host, port = service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(data)
        return parse_response(read_until_closed(sock))


def test_the_door_refuses_big_and_numerous_headers_a_big_body_a_flood_and_survives_quitters(
    served_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    variants_root, bundles_root = served_roots
    env = {**HOSTILE_ENV, "CRISSCROSS_MAX_CONNECTIONS": str(MAX_CONNECTIONS)}
    service = start_service(variants_root, bundles_root, tmp_path / "service.log", env)
    host, port = service.url.removeprefix("http://").split(":")
    try:
        big_header = exchange(service, SEARCH_HEAD + b"x-big: " + b"a" * 20_000 + b"\r\n\r\n")
        assert big_header.status_code == 431, big_header.text
        assert "max_header_bytes=16384" in big_header.json()["error"]["message"]
        lines = b"".join(b"x-h%d: v\r\n" % n for n in range(200))
        many = exchange(service, SEARCH_HEAD + lines + b"\r\n")
        assert many.status_code == 431, many.text
        assert "max_header_count=100" in many.json()["error"]["message"]
        # Declared too large: answered without a byte of the body sent.
        big_body = exchange(service, SEARCH_HEAD + b"content-length: 2000000\r\n\r\n")
        assert big_body.status_code == 413, big_body.text
        assert big_body.headers["connection"] == "close"
        # Clients that leave mid-body.
        for _ in range(5):
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                sock.sendall(SEARCH_HEAD + b'content-length: 500\r\n\r\n{"query": ')
                time.sleep(0.05)
        # A flood: the connections past max_connections are answered 503 and closed at once.
        held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(60)]
        try:
            # Within the head deadline, only the refused ones have anything to read.
            refused, pending = [], set(held)
            deadline = time.monotonic() + HEAD_TIMEOUT_S / 2
            while pending and (left := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select(list(pending), [], [], left)
                for sock in readable:
                    pending.discard(sock)
                    refused.append(parse_response(read_until_closed(sock, 2.0)))
            assert len(refused) >= 60 - MAX_CONNECTIONS, len(refused)
            assert {answer.status_code for answer in refused} == {503}
            assert refused[0].headers["retry-after"] == "1"
            assert "max_connections=48" in refused[0].json()["error"]["message"]
        finally:
            for sock in held:
                sock.close()
        time.sleep(0.5)
        search = {"query": {"text": "a dog on a couch"}, "collection": "captions", "k": 3}
        answer = httpx.post(f"{service.url}/v1/search", json=search, timeout=30)
        assert answer.status_code == 200, answer.text
        metrics = httpx.get(f"{service.url}/metrics", timeout=30).text
        refusals = "crisscross_client_refusals_total"
        assert counter(metrics, refusals, reason="headers_too_large") == 1
        assert counter(metrics, refusals, reason="too_many_headers") == 1
        assert counter(metrics, refusals, reason="connection_limit") >= 60 - MAX_CONNECTIONS
        requests = "crisscross_requests_total"
        assert counter(metrics, requests, method="POST", route="/v1/search", status="413") == 1
        assert counter(metrics, requests, method="POST", route="/v1/search", status="499") == 5
        assert 'status="500"' not in metrics
        assert "Traceback" not in service.log()
    finally:
        assert stop_service(service) == 0, service.log()
