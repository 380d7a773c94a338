"""The committed OpenAPI document matches the app, and a schemathesis run against it (fixed
seed, bounded examples, in-process ASGI, fake encoders) never meets a 5xx."""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import schemathesis

# Imported at collection rather than lazily inside from_asgi below. Parses from several threads
# (pytest rewriting this plugin, hypothesis describing its lambdas, the app's threads reading
# .npy headers) once failed here in CI with "AST constructor recursion depth mismatch"
# (cpython#106905); service/ast_parse_lock.py, installed by the app and tests/conftest.py, now
# lets one parse run at a time.
import schemathesis.specs.openapi.schemas
from fastapi import FastAPI
from hypothesis import HealthCheck, given, seed, settings
from pydantic import ValidationError
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.python import asgi

from service.__main__ import openapi_document
from service.engine.collection.catalog import VariantEncoders
from service.http.app import create_app
from service.http.errors import ServiceError
from service.http.limits import check_limits
from service.http.schemas.search import SearchRequest
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
    # Default settings, no keys: the committed document says how a key is sent, and that no
    # route needs one.
    document = json.loads(committed)
    assert set(document["components"]["securitySchemes"]) == {"bearerKey", "apiKeyHeader"}
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


def _validator(settings: Settings, component: str) -> jsonschema.Draft202012Validator:
    """A JSON Schema validator of one component of the document ``settings`` serve."""
    components = create_app(settings).openapi()["components"]
    schema = {"$ref": f"#/components/schemas/{component}", "components": components}
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize(
    ("params", "valid"),
    [
        ({"exact": True}, True),
        ({"exact": True, "nprobe": None, "ef_search": None}, True),
        ({"exact": False, "nprobe": 32}, True),
        ({"nprobe": 64, "ef_search": 512}, True),
        ({}, True),
        ({"exact": True, "nprobe": 32}, False),
        ({"exact": True, "ef_search": 1}, False),
        ({"nprobe": 0}, False),
        ({"ef_search": 0}, False),
        ({"nprobe": 65}, False),
        ({"ef_search": 513}, False),
    ],
)
def test_the_document_states_what_the_search_params_validator_refuses(
    tmp_path: Path, params: dict[str, object], valid: bool
) -> None:
    """exact with nprobe or ef_search, a bound below 1 and a setting's limit: the document
    refuses what the model and the limits refuse, and allows what they allow."""
    settings = Settings(
        bundles_root=tmp_path, variants_root=tmp_path, max_nprobe=64, max_ef_search=512
    )
    assert _validator(settings, "SearchParams").is_valid(params) is valid
    body = {"query": {"text": "a dog"}, "collection": "captions", "search_params": params}
    try:
        check_limits(SearchRequest.model_validate(body), settings)
    except (ValidationError, ServiceError):
        accepted = False
    else:
        accepted = True
    assert accepted is valid


def test_the_document_states_that_an_in_list_is_not_empty() -> None:
    field_test = _validator(Settings.model_construct(), "FieldTest")
    assert field_test.is_valid({"field": "image_id", "in": [1]})
    assert not field_test.is_valid({"field": "image_id", "in": []})


def test_the_document_s_examples_name_the_demo_s_fields_and_items() -> None:
    """The examples are requests the demo (`make serve`) answers: its collections' fields
    (coco-captions:captions, scenes:images, ...), a caption of the Karpathy val split and an
    image of the scenes test split (tests/contract/test_schemathesis_demo.py sends them)."""
    text = COMMITTED.read_text(encoding="utf-8")
    for absent in ("category", "price", "COCO_val2014:sentid:770337"):
        assert absent not in text
    demo_fields = {"image_id", "filename", "sentid", "text", "captions"}
    search = _schemas(Settings.model_construct())["SearchRequest"]["properties"]
    assert isinstance(search, dict)
    named: set[str] = set()
    pending: list[object] = list(search["filter"]["examples"])
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if "field" in node:
                named.add(node["field"])
            pending += node.values()
        elif isinstance(node, list):
            pending += node
    assert named
    assert named <= demo_fields


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
    keyed = create_app(both).openapi()["paths"]
    # The role a key needs, as OpenAPI 3.1 role names: none for any key, write, admin.
    assert keyed["/v1/admin/reload"]["post"]["security"] == [
        {"bearerKey": ["admin"]},
        {"apiKeyHeader": ["admin"]},
    ]
    assert keyed["/v1/collections/{name}/items"]["post"]["security"] == [
        {"bearerKey": ["write"]},
        {"apiKeyHeader": ["write"]},
    ]
    assert keyed["/v1/collections"]["post"]["security"][0] == {"bearerKey": ["admin"]}
    assert keyed["/v1/search"]["post"]["security"][0] == {"bearerKey": []}


def test_the_document_declares_the_response_headers() -> None:
    document = json.loads(openapi_document())
    headers = document["components"]["headers"]
    for operations in document["paths"].values():
        for operation in operations.values():
            for status, response in operation["responses"].items():
                declared = response["headers"]
                assert declared["x-request-id"] == {"$ref": "#/components/headers/RequestId"}
                assert "x-timing-total-ms" in declared
                assert ("Retry-After" in declared) == (status in ("429", "503"))
    assert headers["RequestId"]["required"] is True
    search = document["paths"]["/v1/search"]["post"]["responses"]
    assert {"x-timing-queue-ms", "x-timing-encode-ms", "x-timing-search-ms"} <= set(
        search["200"]["headers"]
    )
    assert "x-timing-encode-ms" not in search["422"]["headers"]  # stage times: 2xx answers
    upsert = document["paths"]["/v1/collections/{name}/items"]["post"]["responses"]["200"]
    assert {"x-timing-write-ms", "x-timing-fsync-ms"} <= set(upsert["headers"])
    variants = document["paths"]["/v1/variants"]["get"]["responses"]["200"]["headers"]
    assert not any(
        name.startswith("x-timing-") and name != "x-timing-total-ms" for name in variants
    )


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
