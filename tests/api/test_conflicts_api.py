"""A well-formed request that does not fit what is served is refused with 404 (it names a
variant, collection or item that is not served) or 409 (the things it names exist but conflict
with what is served), each with its own code and the one error body; 422 stays the answer to a
request that breaks the OpenAPI document. Also in bulk, as each search's own status.

Runs on the multimodal deployment (tests/fakes/service_app.py: ``fake-bow`` text only,
``fake-clip`` both towers and the default, ``fake-pixels`` image only, all 64-d) and on two
text variants of different dimensions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from service.engine.collection.catalog import VariantEncoders
from service.http.app import create_app
from service.http.errors import STATUS_OF, ErrorCode
from service.settings import Settings
from tests.api.test_collections_api import WRITE_CODES
from tests.fakes.fake_bundles import (
    PIXELS_VARIANT,
    caption_id,
    write_fake_bundle,
)
from tests.fakes.fake_encoders import FAKE_DIM, FAKE_VARIANT, FakeTextEncoder, factory_by_name
from tests.fakes.image_files import b64, solid
from tests.fakes.service_app import Multimodal, open_multimodal, wait_ready

NARROW_VARIANT = "narrow-bow"
NARROW_DIM = 16
RED = b64(solid("red"))
TEXT = {"text": "a red square"}


def _vector(dim: int) -> dict[str, list[float]]:
    return {"vector": [0.5] * dim}


@dataclass(frozen=True)
class Conflict:
    """A request and the refusal it gets: ``code`` (its status from the one table), a part
    of the message and the field it names."""

    code: ErrorCode
    method: str
    path: str
    body: dict[str, Any] | None
    message_part: str
    param: str | None = None
    """The request field at fault, the error's ``param`` (None: the error names none)."""


_SEARCH = "/v1/search"

# On the multimodal deployment.
MULTIMODAL = {
    "image query on a text-only variant": Conflict(
        ErrorCode.TOWER_MISSING,
        "POST",
        _SEARCH,
        {"query": {"image": RED}, "collection": "captions", "variant": FAKE_VARIANT},
        "query.image: variant 'fake-bow' has no image tower",
        param="query.image",
    ),
    "embed texts with an image-only variant": Conflict(
        ErrorCode.TOWER_MISSING,
        "POST",
        "/v1/embed",
        {"texts": ["red"], "variant": PIXELS_VARIANT},
        "has no text tower",
        param="texts",
    ),
    "a qualified collection of another variant": Conflict(
        ErrorCode.VARIANT_MISMATCH,
        "POST",
        _SEARCH,
        {"query": TEXT, "collection": "coco-clip:captions", "variant": FAKE_VARIANT},
        "is embedded by variant 'fake-clip', not 'fake-bow'",
        param="variant",
    ),
    "an item of a qualified collection of another variant": Conflict(
        ErrorCode.VARIANT_MISMATCH,
        "GET",
        f"/v1/items/coco-clip:captions/{caption_id(0)}?variant={FAKE_VARIANT}",
        None,
        "is embedded by variant 'fake-clip'",
        param="variant",
    ),
    "a filter field the collection lacks": Conflict(
        ErrorCode.FILTER_NOT_APPLICABLE,
        "POST",
        _SEARCH,
        {"query": TEXT, "collection": "captions", "filter": {"field": "price", "eq": 3}},
        "filter.field: unknown field 'price'",
        param="filter.field",
    ),
    "a filter operand of another type": Conflict(
        ErrorCode.FILTER_NOT_APPLICABLE,
        "POST",
        _SEARCH,
        {"query": TEXT, "collection": "captions", "filter": {"field": "sentid", "eq": "one"}},
        "does not fit field 'sentid'",
        param="filter.eq",
    ),
    "an operand of another type deep in a filter": Conflict(
        ErrorCode.FILTER_NOT_APPLICABLE,
        "POST",
        _SEARCH,
        {
            "query": TEXT,
            "collection": "captions",
            "filter": {"or": [{"field": "sentid", "eq": 1}, {"field": "sentid", "in": [1, "two"]}]},
        },
        "filter.or.1.in.1: 'two' does not fit field 'sentid', an integer field",
        param="filter.or.1.in.1",
    ),
    "a range on a field without an order": Conflict(
        ErrorCode.FILTER_NOT_APPLICABLE,
        "POST",
        _SEARCH,
        {"query": TEXT, "collection": "captions", "filter": {"field": "text", "range": {"lt": 5}}},
        "filter.range: field 'text' is a string, which has no order",
        param="filter.range",
    ),
    "a re-rank by an unknown variant": Conflict(
        ErrorCode.NOT_FOUND,
        "POST",
        _SEARCH,
        {
            "query": TEXT,
            "collection": "captions",
            "variant": FAKE_VARIANT,
            "rerank": {"by": "variant", "variant": "nope"},
        },
        "rerank.variant: unknown variant 'nope'",
        param="rerank.variant",
    ),
    "nprobe on a flat index": Conflict(
        ErrorCode.SEARCH_PARAM_NOT_APPLICABLE,
        "POST",
        _SEARCH,
        {"query": TEXT, "collection": "captions", "search_params": {"nprobe": 4}},
        "search_params.nprobe: the collection's index is flat",
        param="search_params.nprobe",
    ),
    "keywords on a field without text": Conflict(
        ErrorCode.LEVER_NOT_APPLICABLE,
        "POST",
        _SEARCH,
        {
            "query": TEXT,
            "collection": "captions",
            "mode": "lexical",
            "lexical": {"field": "sentid"},
        },
        "lexical.field: 'sentid' is of type integer",
        param="lexical.field",
    ),
    "an unknown variant": Conflict(
        ErrorCode.NOT_FOUND,
        "POST",
        "/v1/score",
        {"pairs": [{"left": TEXT, "right": TEXT}], "variant": "nope"},
        "unknown variant 'nope'",
        param="variant",
    ),
}

# On the multimodal deployment without a default variant.
WITHOUT_DEFAULT = {
    "a bare collection name two variants answer": Conflict(
        ErrorCode.AMBIGUOUS_NAME,
        "POST",
        _SEARCH,
        {"query": TEXT, "collection": "captions"},
        "coco-captions:captions (variant fake-bow), coco-clip:captions (variant fake-clip)",
        param="collection",
    ),
    "embed images with no variant named and two that could": Conflict(
        ErrorCode.AMBIGUOUS_NAME,
        "POST",
        "/v1/embed",
        {"images": [RED]},
        "none is the default",
        param="variant",
    ),
}

# On two text variants of 64 and 16 dimensions.
TWO_DIMENSIONS = {
    "a vector of another variant's dimension": Conflict(
        ErrorCode.DIMENSION_MISMATCH,
        "POST",
        _SEARCH,
        {"query": _vector(NARROW_DIM), "collection": "coco-captions:captions"},
        "query.vector: 16 numbers, but the variant's embeddings have dimension 64",
        param="query.vector",
    ),
    "a vector no variant's dimension": Conflict(
        ErrorCode.DIMENSION_MISMATCH,
        "POST",
        _SEARCH,
        {"query": _vector(5), "collection": "captions"},
        "query.vector: 5 numbers",
        param="query.vector",
    ),
    "a score side of another dimension": Conflict(
        ErrorCode.DIMENSION_MISMATCH,
        "POST",
        "/v1/score",
        {"pairs": [{"left": TEXT, "right": _vector(NARROW_DIM)}], "variant": FAKE_VARIANT},
        "pairs.0.right.vector: 16 numbers",
        param="pairs.0.right.vector",
    ),
}

CONFLICTS = {**MULTIMODAL, **WITHOUT_DEFAULT, **TWO_DIMENSIONS}
"""Every case of this module (the fault table's test checks each error code is exercised)."""

CONFLICT_CODES = [
    code
    for code, status in STATUS_OF.items()
    if status == 409
    and code not in (ErrorCode.BUNDLE_REJECTED, ErrorCode.PROMOTION_REFUSED)
    and code not in WRITE_CODES
]
"""The codes of a request that does not fit what is served (the admin reload's 409, a refused
promotion's (tests/api/test_replication_api.py) and the write routes' own aside:
tests/api/test_collections_api.py)."""


def _send(client: TestClient, case: Conflict) -> httpx.Response:
    if case.body is None:
        return client.request(case.method, case.path)
    return client.request(case.method, case.path, json=case.body)


def _assert_refused(response: httpx.Response, case: Conflict) -> None:
    assert response.status_code == STATUS_OF[case.code], response.text
    error = response.json()["error"]
    assert set(error) == {"code", "message", "request_id", "type", "param"}
    assert error["code"] == case.code.value
    assert case.message_part in error["message"]
    assert error["param"] == case.param


@pytest.fixture
def without_default(multimodal_settings: Settings) -> Iterator[Multimodal]:
    settings = multimodal_settings.model_copy(update={"default_variant": None})
    with open_multimodal(settings) as deployment:
        yield deployment


@pytest.fixture
def two_dimensions(tmp_path: Path) -> Iterator[TestClient]:
    """``fake-bow`` (64-d, bundle coco-captions) and ``narrow-bow`` (16-d, bundle narrow)."""
    bundles, variants = tmp_path / "bundles", tmp_path / "variants"
    write_fake_bundle(bundles)
    write_fake_bundle(
        bundles, "narrow", variant_name=NARROW_VARIANT, fingerprint="ab" * 32, dim=NARROW_DIM
    )
    for name in (FAKE_VARIANT, NARROW_VARIANT):
        (variants / name).mkdir(parents=True)
    factory = factory_by_name(
        {
            FAKE_VARIANT: VariantEncoders(text=FakeTextEncoder()),
            NARROW_VARIANT: VariantEncoders(
                text=FakeTextEncoder(name=NARROW_VARIANT, fingerprint="ab" * 32, dim=NARROW_DIM)
            ),
        }
    )
    settings = Settings(bundles_root=bundles, variants_root=variants, default_variant=FAKE_VARIANT)
    with TestClient(create_app(settings, encoder_factory=factory)) as client:
        wait_ready(client)
        yield client


@pytest.mark.parametrize("case", MULTIMODAL.values(), ids=MULTIMODAL.keys())
def test_a_request_that_does_not_fit_the_multimodal_deployment(
    multimodal: Multimodal, case: Conflict
) -> None:
    _assert_refused(_send(multimodal.client, case), case)


@pytest.mark.parametrize("case", WITHOUT_DEFAULT.values(), ids=WITHOUT_DEFAULT.keys())
def test_a_name_several_served_things_answer_to(
    without_default: Multimodal, case: Conflict
) -> None:
    _assert_refused(_send(without_default.client, case), case)


@pytest.mark.parametrize("case", TWO_DIMENSIONS.values(), ids=TWO_DIMENSIONS.keys())
def test_a_vector_of_another_dimension_where_variants_differ(
    two_dimensions: TestClient, case: Conflict
) -> None:
    _assert_refused(_send(two_dimensions, case), case)


def test_a_vector_finds_the_variant_of_its_dimension(two_dimensions: TestClient) -> None:
    client = two_dimensions
    for dim, variant in ((NARROW_DIM, NARROW_VARIANT), (FAKE_DIM, FAKE_VARIANT)):
        body = {"query": _vector(dim), "collection": "captions", "k": 1}
        response = client.post(_SEARCH, json=body)
        assert response.status_code == 200, response.text
        assert response.json()["variant"] == variant


def test_where_every_variant_shares_one_dimension_another_length_is_422(
    multimodal: Multimodal,
) -> None:
    """The served document then states the vector's length: another length breaks it, so the
    answer is 422 whatever the request names, in a search, a score and a bulk request."""
    short = _vector(FAKE_DIM - 1)
    requests: list[tuple[str, dict[str, Any]]] = [
        (_SEARCH, {"query": short, "collection": "captions", "variant": FAKE_VARIANT}),
        ("/v1/score", {"pairs": [{"left": TEXT, "right": short}], "variant": "nope"}),
        ("/v1/search/bulk", {"searches": [{"query": short, "collection": "nope"}]}),
    ]
    document = multimodal.client.get("/openapi.json").json()
    vector = document["components"]["schemas"]["VectorQuery"]["properties"]["vector"]
    assert (vector["minItems"], vector["maxItems"]) == (FAKE_DIM, FAKE_DIM)
    for path, body in requests:
        response = multimodal.client.post(path, json=body)
        assert response.status_code == 422, response.text
        assert "every served variant embeds in 64 dimensions" in response.text


def test_bulk_answers_each_conflict_as_that_search_s_own_status(multimodal: Multimodal) -> None:
    searches: list[dict[str, Any]] = [
        case.body for case in MULTIMODAL.values() if case.path == _SEARCH and case.body
    ]
    response = multimodal.client.post("/v1/search/bulk", json={"searches": searches})
    assert response.status_code == 200, response.text
    codes = [(item["status"], item["error"]["code"]) for item in response.json()["responses"]]
    expected = [
        (STATUS_OF[case.code], case.code.value)
        for case in MULTIMODAL.values()
        if case.path == _SEARCH and case.body
    ]
    assert codes == expected


def test_every_route_documents_the_conflicts_it_can_answer(multimodal: Multimodal) -> None:
    paths = multimodal.client.get("/openapi.json").json()["paths"]

    def statuses(path: str, method: str = "post") -> set[str]:
        return set(paths[path][method]["responses"])

    for path in (_SEARCH, "/v1/search/upload", "/v1/score", "/v1/embed"):
        assert {"404", "409", "422"} <= statuses(path), path
    for path in ("/v1/items/{collection}/{id}", "/v1/thumbnails/{collection}/{id}"):
        assert {"404", "409"} <= statuses(path, "get"), path
    # A bulk request answers a search's 404 or 409 inside its 200.
    assert not {"404", "409"} & statuses("/v1/search/bulk")
    conflict = paths[_SEARCH]["post"]["responses"]["409"]["description"]
    for code in CONFLICT_CODES:
        assert code.value in conflict
