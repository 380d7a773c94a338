"""The committed OpenAPI document matches the app, and a schemathesis run against it (fixed
seed, bounded examples, in-process ASGI, fake encoders) never meets a 5xx."""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis

# Imported at collection, in the main thread, rather than lazily inside from_asgi below: pytest
# rewrites schemathesis (a plugin) through ast.parse, and CPython 3.11.7 keeps the AST
# constructor's recursion depth in interpreter-wide state (python/cpython#106905), so a parse
# while another thread builds an AST can fail with "SystemError: AST constructor recursion depth
# mismatch", as this module's fixture once did in CI.
import schemathesis.specs.openapi.schemas
from fastapi import FastAPI
from hypothesis import HealthCheck, given, seed, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.python import asgi

from service.__main__ import openapi_document
from service.engine.catalog import VariantEncoders
from service.http.app import create_app
from service.settings import Settings
from tests.conftest import REPO_ROOT
from tests.fakes.fake_bundles import (
    CLIP_FINGERPRINT,
    CLIP_VARIANT,
    PIXELS_FINGERPRINT,
    PIXELS_VARIANT,
    write_multimodal_bundles,
)
from tests.fakes.fake_encoders import (
    FAKE_VARIANT,
    FakeImageEncoder,
    FakeTextEncoder,
    factory_by_name,
)
from tests.fakes.service_app import TEST_IMAGE_LIMITS

COMMITTED = REPO_ROOT / "docs" / "openapi.json"
REGENERATE = ".venv/bin/python -m service openapi --out docs/openapi.json"
READ_KEY = "fuzz-read-key-0123456789"
ADMIN_KEY = "fuzz-admin-key-0123456789"
FUZZ_SEED = 20261122
# Per operation and mode (schema-conforming and not): at most 11 operations x 2 x 25 calls.
FUZZ_EXAMPLES = 25


def test_the_committed_openapi_document_matches_the_app() -> None:
    live = openapi_document()
    committed = COMMITTED.read_text(encoding="utf-8") if COMMITTED.is_file() else ""
    if live != committed:
        diff = "\n".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(),
                    live.splitlines(),
                    "docs/openapi.json (committed)",
                    "app.openapi() (live)",
                    lineterm="",
                )
            )[:60]
        )
        pytest.fail(f"docs/openapi.json is stale; regenerate it with\n    {REGENERATE}\n{diff}")
    # Default settings, no keys: the committed document declares no security at all.
    document = json.loads(committed)
    assert "securitySchemes" not in document.get("components", {})
    assert not any("security" in op for ops in document["paths"].values() for op in ops.values())


def _schemas(settings: Settings) -> dict[str, dict[str, object]]:
    schemas: dict[str, dict[str, object]] = create_app(settings).openapi()["components"]["schemas"]
    return schemas


def _field(settings: Settings, component: str, name: str) -> dict[str, object]:
    properties = _schemas(settings)[component]["properties"]
    assert isinstance(properties, dict)
    field: dict[str, object] = properties[name]
    return field


def test_the_document_states_the_configured_limits(tmp_path: Path) -> None:
    settings = Settings(
        bundles_root=tmp_path,
        variants_root=tmp_path,
        max_k=7,
        max_text_chars=33,
        max_exclude=4,
        max_score_pairs=5,
        max_embed_inputs=6,
        max_images_per_request=3,
        max_image_bytes=300,
    )
    assert _field(settings, "SearchRequest", "k")["maximum"] == 7
    assert _field(settings, "SearchRequest", "exclude")["maxItems"] == 4
    assert _field(settings, "TextQuery", "text")["maxLength"] == 33
    assert _field(settings, "ImageQuery", "image")["maxLength"] == 400  # 4 * ceil(300 / 3)
    assert _field(settings, "ScoreRequest", "pairs")["maxItems"] == 5
    assert _field(settings, "EmbedTexts", "texts")["maxItems"] == 6
    assert _field(settings, "EmbedImages", "images")["maxItems"] == 3


def test_the_query_side_is_a_tagged_union_in_the_document() -> None:
    search = _schemas(Settings.model_construct())["SearchRequest"]["properties"]
    assert isinstance(search, dict)
    sides = search["query"]["oneOf"]
    assert [side["$ref"].rsplit("/", 1)[-1] for side in sides] == [
        "TextQuery",
        "ImageQuery",
        "ItemQuery",
        "VectorQuery",
    ]
    for name in ("TextQuery", "ImageQuery", "ItemQuery", "VectorQuery"):
        schema = _schemas(Settings.model_construct())[name]
        assert schema["additionalProperties"] is False
        assert len(schema["required"]) == 1  # type: ignore[arg-type]


def test_security_is_declared_as_configured(tmp_path: Path) -> None:
    read_only = Settings(bundles_root=tmp_path, variants_root=tmp_path, read_keys=[READ_KEY])
    document = create_app(read_only).openapi()
    assert set(document["components"]["securitySchemes"]) == {"bearerKey", "apiKeyHeader"}
    assert "security" in document["paths"]["/v1/search"]["post"]
    assert "security" not in document["paths"]["/v1/admin/reload"]["post"]  # no admin keys
    assert "security" not in document["paths"]["/healthz"]["get"]
    both = Settings(
        bundles_root=tmp_path,
        variants_root=tmp_path,
        read_keys=[READ_KEY],
        admin_keys=[ADMIN_KEY],
        admin_reload=True,
    )
    assert "security" in create_app(both).openapi()["paths"]["/v1/admin/reload"]["post"]


# -- schemathesis ----------------------------------------------------------------------------------


def _fuzz_app(root: Path) -> FastAPI:
    """The multimodal deployment (text, image and two-tower variants), with keys and reload on."""
    write_multimodal_bundles(root / "bundles")
    for name in (FAKE_VARIANT, CLIP_VARIANT, PIXELS_VARIANT):
        (root / "variants" / name).mkdir(parents=True)
    factory = factory_by_name(
        {
            CLIP_VARIANT: VariantEncoders(
                text=FakeTextEncoder(name=CLIP_VARIANT, fingerprint=CLIP_FINGERPRINT),
                image=FakeImageEncoder(name=CLIP_VARIANT, fingerprint=CLIP_FINGERPRINT),
            ),
            PIXELS_VARIANT: VariantEncoders(
                image=FakeImageEncoder(name=PIXELS_VARIANT, fingerprint=PIXELS_FINGERPRINT)
            ),
            FAKE_VARIANT: VariantEncoders(text=FakeTextEncoder()),
        }
    )
    fuzz_settings = Settings(
        bundles_root=root / "bundles",
        variants_root=root / "variants",
        default_variant=CLIP_VARIANT,
        read_keys=[READ_KEY],
        admin_keys=[ADMIN_KEY],
        admin_reload=True,
        **TEST_IMAGE_LIMITS,
    )
    return create_app(fuzz_settings, encoder_factory=factory)


@pytest.fixture(scope="module")
def fuzz_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[schemathesis.BaseSchema]:
    app = _fuzz_app(tmp_path_factory.mktemp("fuzz"))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    with asgi.get_client(app) as client:  # starts the app's lifespan
        deadline = time.monotonic() + 10
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, "the fuzzed app never became ready"
            time.sleep(0.01)
    yield schema
    asgi.shutdown_lifespans()


def _fuzz_cases() -> list[tuple[str, str, GenerationMode]]:
    """(METHOD, path, mode) for every operation of the committed document (read at
    collection): schema-conforming inputs for all, non-conforming ones for those taking any."""
    paths = json.loads(COMMITTED.read_text(encoding="utf-8"))["paths"]
    cases = []
    for path, methods in paths.items():
        for method, operation in methods.items():
            modes = [GenerationMode.POSITIVE]
            if operation.get("parameters") or operation.get("requestBody"):
                modes.append(GenerationMode.NEGATIVE)
            cases += [(method.upper(), path, mode) for mode in modes]
    return cases


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
@pytest.mark.parametrize(("method", "path", "mode"), _fuzz_cases())
def test_no_input_causes_a_server_error(
    fuzz_schema: schemathesis.BaseSchema, method: str, path: str, mode: GenerationMode
) -> None:
    (operation,) = [
        result.ok()
        for result in fuzz_schema.get_all_operations()
        if result.ok().method.upper() == method and result.ok().path == path
    ]

    # With the admin key every operation is reached past the key check (its own 401 and 403
    # are tested in test_auth_api); whatever schemathesis sends, the answer is never a 5xx.
    @given(case=operation.as_strategy(mode))
    @seed(FUZZ_SEED)
    @settings(
        max_examples=FUZZ_EXAMPLES,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def call(case: schemathesis.Case) -> None:
        case.call_and_validate(headers={"x-api-key": ADMIN_KEY}, checks=[not_a_server_error])

    call()
