"""Every fault of DESIGN §6 — no or wrong key, overload, deadline, not ready, a refused bundle,
a broken encoder — answers its documented status in the one error shape, with ``Retry-After``
where the table says so; and together with the bad-input table every error code is exercised.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from fastapi.testclient import TestClient

from cluster.served_shards import ServedShards
from cluster.shard_settings import ShardSettings
from cluster.shard_split import split_bundle
from service.engine.collection.catalog import VariantEncoders
from service.engine.collection.sharded_collections import ShardedCollections
from service.http.app import create_app
from service.http.errors import STATUS_OF, ErrorCode
from service.lifecycle.state import STATE_ATTRIBUTE
from service.settings import Settings
from tests.api.test_collections_api import WRITE_CODES
from tests.api.test_conflicts_api import CONFLICTS
from tests.api.test_errors_api import BAD_REQUESTS
from tests.api.test_replication_api import REPLICATION_CODES
from tests.fakes.fake_bundles import write_fake_bundle
from tests.fakes.fake_encoders import FAKE_VARIANT, FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready
from tests.fakes.socket_server import SocketServer, serve_on_socket
from tests.unit.cluster.sharded_data import local_calls

READ_KEY = "read-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"
SEARCH = {"query": {"text": "a dog"}, "collection": "captions", "k": 2}


@dataclass
class GatedTextEncoder(FakeTextEncoder):
    """Calls wait for ``gate`` while it is clear (``entered`` is set when one waits)."""

    gate: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)

    def encode_texts(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.entered.set()
        assert self.gate.wait(timeout=10)
        return super().encode_texts(texts)


@contextmanager
def serve(
    root: Path, encoder: FakeTextEncoder | None = None, *, ready: bool = True, **changes: Any
) -> Iterator[TestClient]:
    bundles, variants = root / "bundles", root / "variants"
    if not bundles.exists():
        write_fake_bundle(bundles)
    (variants / FAKE_VARIANT).mkdir(parents=True, exist_ok=True)
    settings = Settings(bundles_root=bundles, variants_root=variants, **changes)
    factory = fake_factory(encoder or FakeTextEncoder())
    with TestClient(create_app(settings, encoder_factory=factory)) as client:
        if ready:
            wait_ready(client)
        yield client


@contextmanager
def serve_socket(root: Path, **changes: Any) -> Iterator[SocketServer]:
    """The app of :func:`serve` on a real socket (uvicorn with the production protocol)."""
    bundles, variants = root / "bundles", root / "variants"
    write_fake_bundle(bundles)
    (variants / FAKE_VARIANT).mkdir(parents=True, exist_ok=True)
    settings = Settings(bundles_root=bundles, variants_root=variants, **changes)
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with serve_on_socket(app, settings) as server:
        yield server


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.005)


# -- the scenarios --------------------------------------------------------------------------------


def no_key(root: Path) -> httpx.Response:
    with serve(root, read_keys=[READ_KEY]) as client:
        return client.post("/v1/search", json=SEARCH)


def wrong_key(root: Path) -> httpx.Response:
    with serve(root, read_keys=[READ_KEY]) as client:
        return client.post("/v1/search", json=SEARCH, headers={"x-api-key": "x" * 20})


def read_key_on_an_admin_route(root: Path) -> httpx.Response:
    keys = {"read_keys": [READ_KEY], "admin_keys": [ADMIN_KEY], "admin_reload": True}
    with serve(root, **keys) as client:
        return client.post("/v1/admin/reload", headers={"x-api-key": READ_KEY})


def behind_a_busy_encoder(root: Path, late: bool, **changes: Any) -> httpx.Response:
    """A request arriving while one runs and (unless ``late``) one waits (one encoder worker
    thread, so that the running batch holds the encoder)."""
    encoder = GatedTextEncoder()
    encoder.gate.set()
    changes["encoder_workers"] = 1
    with serve(root, encoder, **changes) as client, ThreadPoolExecutor(2) as pool:
        encoder.gate.clear()
        encoder.entered.clear()
        busy = [pool.submit(client.post, "/v1/search", json=SEARCH)]
        wait_for(encoder.entered.is_set)
        if not late:
            busy.append(pool.submit(client.post, "/v1/search", json=SEARCH))
            state = getattr(client.app.state, STATE_ATTRIBUTE)  # type: ignore[attr-defined]
            batcher = state.catalog.resolve_variant(None).batcher("text")
            wait_for(lambda: batcher.queue_depth == 1)
        response = client.post("/v1/search", json=SEARCH)
        encoder.gate.set()
        for future in busy:
            future.result(timeout=10)
        return response


def queue_full(root: Path) -> httpx.Response:
    return behind_a_busy_encoder(root, late=False, max_queue_depth=1)


def deadline_passed(root: Path) -> httpx.Response:
    # The busy request must reach the encoder within the same deadline: at 100 ms it once did
    # not on a loaded machine (refused in the queue itself, it never held the encoder).
    return behind_a_busy_encoder(root, late=True, request_timeout_ms=1000)


def still_loading(root: Path) -> httpx.Response:
    release = threading.Event()

    def slow(_variant_dir: Path, _settings: Settings) -> VariantEncoders:
        release.wait(timeout=10)
        return VariantEncoders(text=FakeTextEncoder())

    write_fake_bundle(root / "bundles")
    (root / "variants" / FAKE_VARIANT).mkdir(parents=True)
    settings = Settings(bundles_root=root / "bundles", variants_root=root / "variants")
    try:
        with TestClient(create_app(settings, encoder_factory=slow)) as client:
            return client.post("/v1/search", json=SEARCH)
    finally:
        release.set()


def loading_failed(root: Path) -> httpx.Response:
    write_fake_bundle(root / "bundles", fingerprint="ee" * 32)
    with serve(root, ready=False) as client:
        wait_for(lambda: "failed" in client.get("/readyz").text)
        return client.post("/v1/search", json=SEARCH)


def shutting_down(root: Path) -> httpx.Response:
    with serve(root) as client:
        getattr(client.app.state, STATE_ATTRIBUTE).start_draining()  # type: ignore[attr-defined]
        return client.get("/readyz")


def corrupt_bundle_on_reload(root: Path) -> httpx.Response:
    keys = {"admin_keys": [ADMIN_KEY], "admin_reload": True}
    with serve(root, **keys) as client:
        version = write_fake_bundle(root / "bundles", version="20260303T000000Z")
        index = version / "captions.faiss"
        index.write_bytes(index.read_bytes()[:-10])
        return client.post("/v1/admin/reload", headers={"x-api-key": ADMIN_KEY})


def stalled_body(root: Path) -> httpx.Response:
    head = b"POST /v1/search HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    with serve_socket(root, body_timeout_s=0.2) as server:
        return server.exchange(head + b'content-length: 100\r\n\r\n{"query": ')


def too_many_headers(root: Path) -> httpx.Response:
    lines = b"".join(b"x-h%d: v\r\n" % n for n in range(20))
    with serve_socket(root, max_header_count=8) as server:
        return server.exchange(b"GET /healthz HTTP/1.1\r\nhost: x\r\n" + lines + b"\r\n")


def encoder_bug(root: Path) -> httpx.Response:
    with serve(root, FakeTextEncoder(fail_texts=frozenset({"a dog"}))) as client:
        return client.post("/v1/search", json=SEARCH)


def encoder_gives_nan(root: Path) -> httpx.Response:
    with serve(root, FakeTextEncoder(nan_texts=frozenset({"a dog"}))) as client:
        return client.post("/v1/search", json=SEARCH)


def shard_down(root: Path) -> httpx.Response:
    """The front door of a sharded collection (policy fail) with one shard down."""
    source = write_fake_bundle(root / "bundles")
    (root / "variants" / FAKE_VARIANT).mkdir(parents=True)
    map_path = root / "shards.json"
    shard_map = split_bundle(source, "captions", 2, root / "shards", map_path)
    calls = local_calls(map_path, shard_map)
    shards = ServedShards(shard_map, calls, ShardSettings(retry_after_s=2))
    settings = Settings(bundles_root=root / "bundles", variants_root=root / "variants")
    app = create_app(
        settings,
        encoder_factory=fake_factory(FakeTextEncoder()),
        sharded=ShardedCollections([shards]),
    )
    try:
        with TestClient(app) as client:
            wait_ready(client)
            calls.down.add("shard-1")
            response = client.post("/v1/search", json=SEARCH)
            assert response.headers["x-missing-shards"] == "shard-1"
            return response
    finally:
        shards.close()


@dataclass(frozen=True)
class Fault:
    code: ErrorCode
    scenario: Callable[[Path], httpx.Response]
    retry_after: bool = False
    message_part: str = ""


FAULTS = {
    "no key": Fault(ErrorCode.UNAUTHORIZED, no_key, message_part="Bearer"),
    "wrong key": Fault(ErrorCode.FORBIDDEN, wrong_key, message_part="not valid"),
    "read key on an admin route": Fault(
        ErrorCode.FORBIDDEN, read_key_on_an_admin_route, message_part="admin key"
    ),
    "encoder queue full": Fault(
        ErrorCode.OVERLOADED, queue_full, retry_after=True, message_part="max_queue_depth"
    ),
    "deadline passed in the queue": Fault(
        ErrorCode.OVERLOADED, deadline_passed, retry_after=True, message_part="deadline"
    ),
    "still loading": Fault(
        ErrorCode.NOT_READY, still_loading, retry_after=True, message_part="loading"
    ),
    "loading failed": Fault(
        ErrorCode.NOT_READY, loading_failed, retry_after=True, message_part="fingerprint"
    ),
    "shutting down": Fault(
        ErrorCode.NOT_READY, shutting_down, retry_after=True, message_part="shutting down"
    ),
    "corrupt bundle on reload": Fault(
        ErrorCode.BUNDLE_REJECTED, corrupt_bundle_on_reload, message_part="keeps serving"
    ),
    "stalled body": Fault(
        ErrorCode.REQUEST_TIMEOUT, stalled_body, message_part="body_timeout_s=0.2"
    ),
    "too many header lines": Fault(
        ErrorCode.HEADERS_TOO_LARGE, too_many_headers, message_part="max_header_count=8"
    ),
    "encoder gives NaN": Fault(ErrorCode.INVALID_INPUT, encoder_gives_nan, message_part="text #0"),
    "a shard down": Fault(
        ErrorCode.SHARDS_UNAVAILABLE, shard_down, retry_after=True, message_part="shard-1"
    ),
    "encoder bug (never a client's doing)": Fault(ErrorCode.INTERNAL, encoder_bug),
}


@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
def test_a_fault_gets_its_documented_error(tmp_path: Path, fault: Fault) -> None:
    response = fault.scenario(tmp_path)
    assert response.status_code == STATUS_OF[fault.code], response.text
    error = response.json()["error"]
    assert set(error) == {"code", "message", "request_id", "type", "param"}
    assert error["code"] == fault.code.value
    assert fault.message_part in error["message"]
    assert error["request_id"] == response.headers["x-request-id"]
    if fault.retry_after:
        assert int(response.headers["retry-after"]) >= 1
    else:
        assert "retry-after" not in response.headers


def test_every_error_code_is_exercised() -> None:
    exercised = (
        {case.code for case in BAD_REQUESTS.values()}
        | {fault.code for fault in FAULTS.values()}
        | {conflict.code for conflict in CONFLICTS.values()}
        | WRITE_CODES
        | REPLICATION_CODES
    )
    assert exercised == set(ErrorCode)
    assert set(STATUS_OF) == set(ErrorCode)


def test_draining_turns_the_ready_gauge_off(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        assert "crisscross_ready 1.0" in client.get("/metrics").text
        getattr(client.app.state, STATE_ATTRIBUTE).start_draining()  # type: ignore[attr-defined]
        assert "crisscross_ready 0.0" in client.get("/metrics").text
        # Requests already arriving are still answered while the server drains.
        assert client.post("/v1/search", json=SEARCH).status_code == 200
