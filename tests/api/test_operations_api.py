"""Readiness, liveness, metrics, request ids, logging, and the last-resort 500."""

from __future__ import annotations

import logging
import re
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from encoders.variant import (
    ImageTower,
    SourceModel,
    TextTower,
    Tower,
    VariantManifest,
    write_variant_manifest,
)
from service.engine.collection.catalog import VariantEncoders
from service.http.app import create_app, onnx_encoder_factory
from service.settings import Settings
from tests.fakes.fake_bundles import write_fake_bundle
from tests.fakes.fake_encoders import (
    FAKE_DIM,
    FAKE_VARIANT,
    FakeImageEncoder,
    FakeTextEncoder,
    fake_factory,
)
from tests.fakes.service_app import wait_ready

SEARCH = {"query": {"text": "a dog on a couch"}, "collection": "captions", "k": 2}


def test_readyz_is_503_until_loaded_then_200(settings: Settings) -> None:
    release = threading.Event()
    encoder = FakeTextEncoder()

    def slow_factory(_variant_dir: Path, _settings: Settings) -> VariantEncoders:
        release.wait(timeout=10)
        return VariantEncoders(text=encoder)

    app = create_app(settings, encoder_factory=slow_factory)
    try:
        with TestClient(app) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            response = client.get("/readyz")
            assert response.status_code == 503
            assert response.headers["retry-after"] == "1"
            assert response.json()["error"]["code"] == "not_ready"
            assert "loading" in response.json()["error"]["message"]
            busy = client.post("/v1/search", json=SEARCH)
            assert busy.status_code == 503
            assert busy.headers["retry-after"] == "1"
            assert client.get("/v1/collections").status_code == 503
            release.set()
            wait_ready(client)
            assert client.get("/readyz").json() == {"status": "ready"}
            assert client.post("/v1/search", json=SEARCH).status_code == 200
    finally:
        release.set()


def test_fingerprint_mismatch_keeps_the_service_unready_with_the_reason(
    tmp_path: Path, variants_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_fake_bundle(tmp_path / "bundles", fingerprint="cd" * 32)
    settings = Settings(bundles_root=tmp_path / "bundles", variants_root=variants_root)
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        for _ in range(500):
            response = client.get("/readyz")
            if "failed" in response.text:
                break
            threading.Event().wait(0.01)
        assert response.status_code == 503
        message = response.json()["error"]["message"]
        assert "loading failed" in message
        assert "fingerprint" in message
        assert client.get("/healthz").status_code == 200
        assert client.post("/v1/search", json=SEARCH).status_code == 503
        assert "crisscross_load_failures_total 1.0" in client.get("/metrics").text
    assert any("refusing to serve" in record.message for record in caplog.records)


def test_missing_bundles_root_is_reported_by_readyz(tmp_path: Path, variants_root: Path) -> None:
    settings = Settings(bundles_root=tmp_path / "absent", variants_root=variants_root)
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        for _ in range(500):
            response = client.get("/readyz")
            if "failed" in response.text:
                break
            threading.Event().wait(0.01)
        assert "absent" in response.json()["error"]["message"]


def test_several_variants_need_a_named_or_default_variant(tmp_path: Path) -> None:
    root = tmp_path / "bundles"
    write_fake_bundle(root, "first")
    write_fake_bundle(root, "second", variant_name="other-bow", fingerprint="ef" * 32)
    variants = tmp_path / "variants"
    encoders = {
        FAKE_VARIANT: FakeTextEncoder(),
        "other-bow": FakeTextEncoder(name="other-bow", fingerprint="ef" * 32),
    }
    for name in encoders:
        (variants / name).mkdir(parents=True)

    def factory(variant_dir: Path, _settings: Settings) -> VariantEncoders:
        return VariantEncoders(text=encoders[variant_dir.name])

    app = create_app(Settings(bundles_root=root, variants_root=variants), encoder_factory=factory)
    with TestClient(app) as client:
        wait_ready(client)
        response = client.post("/v1/search", json=SEARCH)
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "ambiguous_name"
        assert "other-bow" in response.json()["error"]["message"]
        named = client.post("/v1/search", json={**SEARCH, "variant": "other-bow"})
        assert named.status_code == 200
        assert named.json()["bundle"] == "second"
        defaults = [v["default"] for v in client.get("/v1/variants").json()["variants"]]
        assert defaults == [False, False]

    settings = Settings(bundles_root=root, variants_root=variants, default_variant="other-bow")
    with TestClient(create_app(settings, encoder_factory=factory)) as client:
        wait_ready(client)
        assert client.post("/v1/search", json=SEARCH).json()["variant"] == "other-bow"


def test_metrics_expose_requests_stages_and_what_is_loaded(client: TestClient) -> None:
    assert client.post("/v1/search", json=SEARCH).status_code == 200
    assert client.get("/v1/items/captions/COCO_val2014:sentid:1000").status_code == 200
    assert client.get("/v1/nothing").status_code == 404
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'crisscross_requests_total{method="POST",route="/v1/search",status="200"} 1.0' in text
    # Route templates, never raw paths: item ids must not become label values.
    assert 'route="/v1/items/{collection}/{id}"' in text
    assert "sentid:1000" not in text
    assert 'route="unmatched",status="404"' in text
    assert (
        f'crisscross_encode_duration_seconds_count{{tower="text",variant="{FAKE_VARIANT}"}} 1.0'
        in text
    )
    assert "crisscross_search_duration_seconds_count" in text
    assert (
        'crisscross_bundle_loaded{bundle="coco-captions",variant="fake-bow",'
        'version="20260101T000000Z"} 1.0'
    ) in text
    assert 'providers="CPUExecutionProvider"' in text
    assert "crisscross_ready 1.0" in text


def test_413_is_counted_under_the_route_it_aimed_at(client: TestClient) -> None:
    big = b"x" * ((1 << 20) + 1)
    client.post("/v1/embed", content=big, headers={"content-type": "application/json"})
    assert 'route="/v1/embed",status="413"' in client.get("/metrics").text


def test_two_apps_in_one_process_keep_separate_metrics(
    settings: Settings, client: TestClient
) -> None:
    client.post("/v1/search", json=SEARCH)
    other = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(other) as other_client:
        wait_ready(other_client)
        assert 'route="/v1/search"' not in other_client.get("/metrics").text


@pytest.mark.parametrize("offered", ["client-abc.123_x", "A" * 64])
def test_sane_request_id_is_echoed(client: TestClient, offered: str) -> None:
    response = client.post("/v1/search", json=SEARCH, headers={"x-request-id": offered})
    assert response.headers["x-request-id"] == offered


@pytest.mark.parametrize("offered", ["", "A" * 65, "has space", "semi;colon", "ünï"])
def test_insane_request_id_is_replaced(client: TestClient, offered: str) -> None:
    response = client.get("/v1/nothing", headers=[(b"x-request-id", offered.encode("utf-8"))])
    generated = response.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    assert response.json()["error"]["request_id"] == generated


def test_every_response_gets_a_request_id_and_total_time(client: TestClient) -> None:
    for response in (client.get("/healthz"), client.get("/metrics"), client.get("/v1/variants")):
        assert re.fullmatch(r"[0-9a-f]{32}", response.headers["x-request-id"])
        assert float(response.headers["x-timing-total-ms"]) >= 0


def test_access_log_has_one_line_per_request_without_texts(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="crisscross.access")
    body = {**SEARCH, "query": {"text": "confidential words"}}
    client.post("/v1/search", json=body, headers={"x-request-id": "log-test-1"})
    lines = [r.getMessage() for r in caplog.records if r.name == "crisscross.access"]
    assert len(lines) == 1
    (line,) = lines
    assert "request_id=log-test-1" in line
    assert "method=POST route=/v1/search status=200" in line
    assert re.search(r"encode_ms=\d+\.\d+ search_ms=\d+\.\d+ total_ms=\d+\.\d+", line)
    assert "confidential" not in caplog.text


def test_an_unexpected_failure_is_a_500_in_the_error_shape(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    encoder = FakeTextEncoder(fail_texts=frozenset({"boom"}))
    with TestClient(create_app(settings, encoder_factory=fake_factory(encoder))) as client:
        wait_ready(client)
        response = client.post(
            "/v1/search", json={**SEARCH, "query": {"text": "boom"}}, headers={"x-request-id": "r1"}
        )
    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "code": "internal",
            "message": "internal error; quote the request_id when reporting it",
            "request_id": "r1",
            "type": "server_error",
            "param": None,
        }
    }
    assert response.headers["x-request-id"] == "r1"
    assert any(r.exc_info for r in caplog.records if "unhandled error" in r.getMessage())


def test_a_non_finite_embedding_is_invalid_input_not_a_500(settings: Settings) -> None:
    encoder = FakeTextEncoder(nan_texts=frozenset({"void"}))
    with TestClient(create_app(settings, encoder_factory=fake_factory(encoder))) as client:
        wait_ready(client)
        response = client.post("/v1/search", json={**SEARCH, "query": {"text": "void"}})
        assert response.status_code == 422
        embed = client.post("/v1/embed", json={"texts": ["fine", "void"]})
        assert embed.status_code == 422
        assert "text #1" in embed.json()["error"]["message"]


def test_openapi_and_docs_are_served(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    for path in ("/v1/search", "/v1/score", "/v1/embed", "/v1/variants", "/v1/collections"):
        assert path in schema["paths"]
    assert "/v1/items/{collection}/{id}" in schema["paths"]
    assert client.get("/docs").status_code == 200


def write_manifest(variant_dir: Path, towers: list[Tower]) -> None:
    """A valid variant.json naming ``towers`` (the files it lists need not exist here)."""
    variant_dir.mkdir(parents=True)
    text = TextTower(max_tokens=128) if "text" in towers else None
    image = (
        ImageTower(
            height=8,
            width=8,
            resize="shorter_side",
            resize_to=10,
            mean=(0.5, 0.5, 0.5),
            std=(0.25, 0.25, 0.25),
        )
        if "image" in towers
        else None
    )
    files = {"text.onnx": "0" * 64, "tokenizer.json": "1" * 64} if text else {}
    if image:
        files["image.onnx"] = "2" * 64
    manifest = VariantManifest(
        name=variant_dir.name,
        towers=towers,
        dim=FAKE_DIM,
        normalised=True,
        precision="fp32",
        text=text,
        image=image,
        files=files,
        source_model=SourceModel(base_model="tests/fake"),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    write_variant_manifest(variant_dir, manifest)


@pytest.mark.parametrize(
    "towers", [["text"], ["image"], ["text", "image"]], ids=["text", "image", "both"]
)
def test_default_encoder_factory_builds_one_onnx_encoder_per_tower(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, towers: list[Tower]
) -> None:
    built: list[tuple[str, Path, str, int]] = []

    class RecordingText(FakeTextEncoder):
        def __init__(self, variant_dir: Path, providers: str, intra_op_threads: int) -> None:
            super().__init__()
            built.append(("text", variant_dir, providers, intra_op_threads))

    class RecordingImage(FakeImageEncoder):
        def __init__(self, variant_dir: Path, providers: str, intra_op_threads: int) -> None:
            super().__init__()
            built.append(("image", variant_dir, providers, intra_op_threads))

    monkeypatch.setattr("service.http.app.OnnxTextEncoder", RecordingText)
    monkeypatch.setattr("service.http.app.OnnxImageEncoder", RecordingImage)
    variant_dir = tmp_path / FAKE_VARIANT
    write_manifest(variant_dir, towers)
    settings = Settings(providers="cpu", intra_op_threads=2)
    encoders = onnx_encoder_factory(variant_dir, settings)
    assert [tower for tower, _ in encoders.present] == towers
    assert isinstance(encoders.text, RecordingText) == ("text" in towers)
    assert isinstance(encoders.image, RecordingImage) == ("image" in towers)
    assert built == [(tower, variant_dir, "cpu", 2) for tower in towers]


def test_a_folder_without_variant_json_keeps_the_service_unready(
    tmp_path: Path, variants_root: Path
) -> None:
    write_fake_bundle(tmp_path / "bundles")
    settings = Settings(bundles_root=tmp_path / "bundles", variants_root=variants_root)
    with TestClient(create_app(settings)) as client:
        for _ in range(500):
            response = client.get("/readyz")
            if "failed" in response.text:
                break
            threading.Event().wait(0.01)
        assert response.status_code == 503
        assert "variant.json" in response.json()["error"]["message"]
