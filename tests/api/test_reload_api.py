"""POST /v1/admin/reload: verified loading off the event loop, an atomic swap, refusal of bad
bundles while the old one keeps serving, serialised reloads."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from fastapi.testclient import TestClient

import service.lifecycle.loading
from service.engine.collection.catalog import VariantEncoders
from service.http.app import create_app
from service.lifecycle.state import STATE_ATTRIBUTE
from service.settings import Settings
from storage.layout import CURRENT_FILE
from storage.reader import LoadedBundle, load_bundle
from storage.writer import set_current
from tests.fakes.fake_bundles import CAPTIONS, caption_id, write_fake_bundle
from tests.fakes.fake_encoders import FAKE_DIM, FakeTextEncoder, fake_factory, in_event_loop
from tests.fakes.service_app import wait_ready

ADMIN_KEY = "admin-key-0123456789abcdef"
ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}
V1 = "20260101T000000Z"
V2 = "20260202T000000Z"
BUNDLE = "coco-captions"
# Version 2 holds other captions: a search tells the versions apart by its hits.
V2_TEXTS = ["a giraffe eating leaves from a tall tree", "a zebra standing in the grass"]
SEARCH = {"query": {"text": "a giraffe eating leaves"}, "collection": "captions", "k": 1}


@dataclass
class GatedTextEncoder(FakeTextEncoder):
    """Calls holding ``hold_text`` wait for ``gate`` (``entered`` is set while one waits)."""

    hold_text: str = "hold me"
    gate: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)

    def encode_texts(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.hold_text in texts:
            self.entered.set()
            assert self.gate.wait(timeout=10)
        return super().encode_texts(texts)


def reload_settings(bundles_root: Path, variants_root: Path, **changes: Any) -> Settings:
    values: dict[str, Any] = {
        "bundles_root": bundles_root,
        "variants_root": variants_root,
        "admin_keys": [ADMIN_KEY],
        "admin_reload": True,
    }
    values.update(changes)
    return Settings(**values)


@pytest.fixture
def encoder() -> GatedTextEncoder:
    return GatedTextEncoder()


@pytest.fixture
def admin(
    bundles_root: Path, variants_root: Path, encoder: GatedTextEncoder
) -> Iterator[TestClient]:
    settings = reload_settings(bundles_root, variants_root)
    with TestClient(create_app(settings, encoder_factory=fake_factory(encoder))) as client:
        wait_ready(client)
        yield client


def reload(client: TestClient, body: dict[str, Any] | None = None) -> Any:
    if body is None:
        return client.post("/v1/admin/reload", headers=ADMIN)
    return client.post("/v1/admin/reload", json=body, headers=ADMIN)


def write_v2(bundles_root: Path, *, make_current: bool = True, **changes: Any) -> Path:
    version_dir = write_fake_bundle(bundles_root, version=V2, texts=V2_TEXTS, **changes)
    if not make_current:
        set_current(bundles_root / BUNDLE, V1)
    return version_dir


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def served_version(client: TestClient) -> str:
    """The version a search answers from (an item query: it needs no encoder)."""
    item = {"item": {"collection": "captions", "id": caption_id(0)}}
    answer = client.post("/v1/search", json={"query": item, "collection": "captions", "k": 1})
    version: str = answer.json()["bundle_version"]
    return version


def test_reload_without_changes_keeps_the_catalog(admin: TestClient) -> None:
    state = getattr(admin.app.state, STATE_ATTRIBUTE)  # type: ignore[attr-defined]
    before = state.catalog
    response = reload(admin)
    assert response.status_code == 200, response.text
    assert response.json()["bundles"] == [
        {"bundle": BUNDLE, "previous_version": V1, "version": V1, "changed": False}
    ]
    assert response.json()["load_ms"] >= 0
    assert state.catalog is before
    assert 'crisscross_reloads_total{outcome="unchanged"} 1.0' in admin.get("/metrics").text


def test_reload_swaps_in_the_new_current_version(admin: TestClient, bundles_root: Path) -> None:
    assert served_version(admin) == V1
    write_v2(bundles_root)
    assert served_version(admin) == V1  # nothing changes until the reload
    response = reload(admin, {})
    assert response.status_code == 200, response.text
    assert response.json()["bundles"] == [
        {"bundle": BUNDLE, "previous_version": V1, "version": V2, "changed": True}
    ]
    answer = admin.post("/v1/search", json=SEARCH).json()
    assert answer["bundle_version"] == V2
    assert answer["results"][0]["metadata"]["text"] == V2_TEXTS[0]
    collections = admin.get("/v1/collections").json()["collections"]
    assert [(c["bundle_version"], c["count"]) for c in collections] == [(V2, len(V2_TEXTS))]
    assert admin.get(f"/v1/items/captions/{caption_id(5)}").status_code == 404
    metrics = admin.get("/metrics").text
    assert 'crisscross_reloads_total{outcome="swapped"} 1.0' in metrics
    assert f'version="{V2}"' in metrics
    assert f'version="{V1}"' not in metrics
    assert "crisscross_store_loaded_timestamp_seconds" in metrics


def test_reload_can_load_a_named_version_and_roll_back(
    admin: TestClient, bundles_root: Path
) -> None:
    write_v2(bundles_root, make_current=False)
    assert reload(admin, {"bundle": BUNDLE}).json()["bundles"][0]["changed"] is False
    forward = reload(admin, {"bundle": BUNDLE, "version": V2})
    assert forward.status_code == 200, forward.text
    assert served_version(admin) == V2
    assert (bundles_root / BUNDLE / CURRENT_FILE).read_text().strip() == V1  # untouched
    back = reload(admin)
    assert back.json()["bundles"] == [
        {"bundle": BUNDLE, "previous_version": V2, "version": V1, "changed": True}
    ]
    assert served_version(admin) == V1


def test_a_corrupt_bundle_is_refused_and_the_old_one_keeps_serving(
    admin: TestClient, bundles_root: Path
) -> None:
    version_dir = write_v2(bundles_root)
    flip_a_byte(version_dir / "captions.vectors.npy")
    response = reload(admin)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "bundle_rejected"
    assert "sha256" in error["message"]
    assert "keeps serving" in error["message"]
    assert served_version(admin) == V1
    assert admin.get("/readyz").status_code == 200
    assert 'crisscross_reloads_total{outcome="rejected"} 1.0' in admin.get("/metrics").text


def truncate_in_place(path: Path) -> None:
    """What ``cp`` over a file, or a builder writing into the wrong folder, does to its bytes."""
    with path.open("r+b") as handle:
        handle.truncate(handle.seek(0, 2) // 2)


def test_files_truncated_under_the_server_reach_none_of_its_pages(
    admin: TestClient, bundles_root: Path
) -> None:
    # The served version's own files are cut in half where they lie: the server maps its
    # private copies (bundle_mapping=private-copy), so searches touching every vector go on.
    state = getattr(admin.app.state, STATE_ATTRIBUTE)  # type: ignore[attr-defined]
    served = bundles_root / BUNDLE / V1
    copy = state.copies.copy_of(served)
    assert copy.is_dir()
    for name in ("captions.vectors.npy", "captions.faiss"):
        truncate_in_place(served / name)
    exact = {**SEARCH, "k": len(CAPTIONS), "search_params": {"exact": True}}
    for _ in range(3):
        answer = admin.post("/v1/search", json=exact)
        assert answer.status_code == 200, answer.text
        assert len(answer.json()["results"]) == len(CAPTIONS)
    # A new version damaged the same way is refused at reload by the check of its hashes.
    version_dir = write_v2(bundles_root)
    truncate_in_place(version_dir / "captions.vectors.npy")
    refused = reload(admin)
    assert refused.status_code == 409, refused.text
    assert "sha256" in refused.json()["error"]["message"]
    assert not state.copies.copy_of(version_dir).exists()  # the refused copy is gone
    assert served_version(admin) == V1
    assert admin.post("/v1/search", json=exact).status_code == 200


def test_a_swap_deletes_the_copy_of_the_version_no_longer_served(
    admin: TestClient, bundles_root: Path
) -> None:
    state = getattr(admin.app.state, STATE_ATTRIBUTE)  # type: ignore[attr-defined]
    old_copy = state.copies.copy_of(bundles_root / BUNDLE / V1)
    assert old_copy.is_dir()
    version_dir = write_v2(bundles_root)
    assert reload(admin).status_code == 200
    assert not old_copy.exists()
    assert state.copies.copy_of(version_dir).is_dir()


def test_in_place_mapping_makes_no_copy(bundles_root: Path, variants_root: Path) -> None:
    settings = reload_settings(bundles_root, variants_root, bundle_mapping="in-place")
    with TestClient(create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))) as c:
        wait_ready(c)
        assert getattr(c.app.state, STATE_ATTRIBUTE).copies is None  # type: ignore[attr-defined]
        assert c.post("/v1/search", json=SEARCH).status_code == 200


def test_the_temporary_copies_are_removed_when_the_server_stops(
    bundles_root: Path, variants_root: Path
) -> None:
    settings = reload_settings(bundles_root, variants_root)
    with TestClient(create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))) as c:
        wait_ready(c)
        root = getattr(c.app.state, STATE_ATTRIBUTE).copies.root  # type: ignore[attr-defined]
        assert root.is_dir()
    assert not root.exists()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"fingerprint": "ee" * 32}, "fingerprint"),
        ({"variant_name": "another-variant"}, "has not loaded"),
        ({"dim": FAKE_DIM * 2}, "dimension"),
    ],
    ids=["fingerprint", "unloaded variant", "dimension"],
)
def test_a_bundle_that_does_not_fit_the_loaded_encoder_is_refused(
    admin: TestClient, bundles_root: Path, changes: dict[str, Any], message: str
) -> None:
    write_v2(bundles_root, **changes)
    response = reload(admin)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "bundle_rejected"
    assert message in response.json()["error"]["message"]
    assert served_version(admin) == V1


def test_a_current_pointer_to_nowhere_is_refused(admin: TestClient, bundles_root: Path) -> None:
    (bundles_root / BUNDLE / CURRENT_FILE).write_text("20991231T000000Z\n")
    response = reload(admin)
    assert response.status_code == 409
    assert served_version(admin) == V1


def test_a_bundle_copied_under_another_name_is_refused(
    admin: TestClient, bundles_root: Path, tmp_path: Path
) -> None:
    other = write_fake_bundle(tmp_path / "elsewhere", "other-name", version=V2)
    other.rename(bundles_root / BUNDLE / V2)
    response = reload(admin, {"bundle": BUNDLE, "version": V2})
    assert response.status_code == 409
    assert "other-name" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"bundle": "nope"}, 404, "not_found"),
        ({"bundle": BUNDLE, "version": "20990101T000000Z"}, 404, "not_found"),
        ({"version": V1}, 422, "invalid_input"),
        ({"bundle": BUNDLE, "version": "../../etc"}, 422, "invalid_input"),
        ({"bundle": BUNDLE, "version": ".hidden"}, 422, "invalid_input"),
        ({"bundle": ""}, 422, "invalid_input"),
        ({"bundle": 5}, 422, "invalid_input"),
        ({"bundles": [BUNDLE]}, 422, "invalid_input"),
        ([BUNDLE], 422, "invalid_input"),
    ],
    ids=[
        "unknown bundle",
        "unknown version",
        "version without bundle",
        "version with a path",
        "hidden version",
        "empty bundle",
        "bundle not a string",
        "unknown field",
        "not an object",
    ],
)
def test_bad_reload_requests_get_their_documented_error(
    admin: TestClient, body: Any, status: int, code: str
) -> None:
    response = admin.post("/v1/admin/reload", json=body, headers=ADMIN)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    assert served_version(admin) == V1


def test_a_reload_body_must_be_json(admin: TestClient) -> None:
    response = admin.post(
        "/v1/admin/reload", content=b"bundle=x", headers={**ADMIN, "content-type": "text/plain"}
    )
    assert response.status_code == 415


def test_reload_is_forbidden_when_disabled(
    bundles_root: Path, variants_root: Path, encoder: GatedTextEncoder
) -> None:
    settings = reload_settings(bundles_root, variants_root, admin_reload=False)
    with TestClient(create_app(settings, encoder_factory=fake_factory(encoder))) as client:
        wait_ready(client)
        response = reload(client)
    assert response.status_code == 403
    assert "CRISSCROSS_ADMIN_RELOAD" in response.json()["error"]["message"]


def test_a_request_in_flight_finishes_on_the_version_it_started_with(
    admin: TestClient, bundles_root: Path, encoder: GatedTextEncoder
) -> None:
    write_v2(bundles_root)
    held = {"query": {"text": encoder.hold_text}, "collection": "captions", "k": 12}
    with ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(admin.post, "/v1/search", json=held)
        assert encoder.entered.wait(timeout=5)
        assert reload(admin).status_code == 200  # swapped while the search is encoding
        assert served_version(admin) == V2
        encoder.gate.set()
        answer = in_flight.result(timeout=10).json()
    # The whole answer comes from version 1: its version, ids and metadata.
    assert answer["bundle_version"] == V1
    assert {hit["id"] for hit in answer["results"]} == {caption_id(r) for r in range(12)}
    assert {hit["metadata"]["text"] for hit in answer["results"]} == set(CAPTIONS)


def test_reloads_are_serialised_and_load_off_the_event_loop(
    admin: TestClient, bundles_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_v2(bundles_root)
    active = 0
    overlaps: list[int] = []
    on_loop: list[bool] = []
    lock = threading.Lock()

    def slow_load(version_dir: Path, *, verify: bool = True) -> LoadedBundle:
        nonlocal active
        with lock:
            active += 1
            overlaps.append(active)
        on_loop.append(in_event_loop())
        time.sleep(0.2)
        try:
            return load_bundle(version_dir, verify=verify)
        finally:
            with lock:
                active -= 1

    v3 = "20260303T000000Z"
    write_fake_bundle(bundles_root, version=v3, texts=V2_TEXTS[:1])
    monkeypatch.setattr(service.lifecycle.loading, "load_bundle", slow_load)
    with ThreadPoolExecutor(2) as pool:
        # Whichever runs first, each loads a version that is not served.
        first = pool.submit(reload, admin, {"bundle": BUNDLE, "version": V2})
        second = pool.submit(reload, admin, {"bundle": BUNDLE, "version": v3})
        # Searches keep being answered while a reload loads.
        time.sleep(0.05)
        assert admin.post("/v1/search", json=SEARCH).status_code == 200
        answers = [first.result(timeout=10), second.result(timeout=10)]
    assert [answer.status_code for answer in answers] == [200, 200]
    assert max(overlaps) == 1
    assert len(on_loop) == 2
    assert not any(on_loop)


def test_reload_before_the_catalog_is_loaded_is_503(
    bundles_root: Path, variants_root: Path
) -> None:
    release = threading.Event()
    encoder = FakeTextEncoder()

    def slow_factory(_variant_dir: Path, _settings: Settings) -> Any:
        release.wait(timeout=10)
        return VariantEncoders(text=encoder)

    settings = reload_settings(bundles_root, variants_root)
    try:
        with TestClient(create_app(settings, encoder_factory=slow_factory)) as client:
            response = reload(client)
            release.set()
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
    finally:
        release.set()
