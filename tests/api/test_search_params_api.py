"""Approximate indexes over HTTP: /v1/collections shows each index's kind, defaults and tuning;
a search may override nprobe / ef_search within the limits or ask for the exact answers; refusals
come before any encoding, through the one error table."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.http.app import create_app
from service.http.errors import STATUS_OF, ErrorCode
from service.settings import Settings
from tests.fakes.approx_bundles import (
    APPROX_COUNT,
    APPROX_NLIST,
    APPROX_VECTORS,
    approx_id,
    write_approx_bundle,
)
from tests.fakes.fake_bundles import image_id
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.image_files import solid
from tests.fakes.service_app import Multimodal, wait_ready

QUERY_ROWS = [3, 77, 250, 901, 1333, 1480]


@pytest.fixture(scope="module")
def _approx_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("approx") / "bundles"
    write_approx_bundle(root)
    return root


@pytest.fixture
def approx(
    tmp_path: Path, _approx_template: Path, variants_root: Path, encoder: FakeTextEncoder
) -> Iterator[TestClient]:
    root = tmp_path / "bundles"
    shutil.copytree(_approx_template, root)
    settings = Settings(
        bundles_root=root, variants_root=variants_root, max_nprobe=64, max_ef_search=512
    )
    with TestClient(create_app(settings, encoder_factory=fake_factory(encoder))) as client:
        wait_ready(client)
        encoder.calls.clear()
        yield client


def _vector(row: int) -> list[float]:
    return [float(value) for value in APPROX_VECTORS[row]]


def _search(client: TestClient, collection: str, row: int, **body: Any) -> Any:
    response = client.post(
        "/v1/search",
        json={"query": {"vector": _vector(row)}, "collection": collection, "k": 10, **body},
    )
    assert response.status_code == 200, response.text
    return response.json()


def _rows(payload: Any) -> list[int]:
    return [int(result["metadata"]["row"]) for result in payload["results"]]


def _error(client: TestClient, body: dict[str, Any]) -> tuple[int, str, str]:
    response = client.post("/v1/search", json=body)
    error = response.json()["error"]
    return response.status_code, error["code"], error["message"]


def test_collections_show_index_kind_defaults_and_tuning(approx: TestClient) -> None:
    infos = {info["name"]: info for info in approx.get("/v1/collections").json()["collections"]}
    facts = {
        name: (info["index_kind"], info["search_params"], info["on_disk"])
        for name, info in infos.items()
    }
    assert facts == {
        "ivf": ("ivf_flat", {"nprobe": 8}, False),
        "hnsw": ("hnsw", {"ef_search": 16}, False),
        "pq": ("ivf_pq", {"nprobe": 1}, False),
        "disk": ("ivf_flat", {"nprobe": 8}, True),
        "flat": ("flat", {}, False),
    }
    tuning = infos["ivf"]["tuning"]
    assert tuning["parameter"] == "nprobe"
    assert tuning["value"] == 8
    assert tuning["met"] is True
    assert [point["value"] for point in tuning["sweep"]] == [1, 2, 4, 8]
    assert infos["flat"]["tuning"] is None
    assert infos["pq"]["tuning"] is None


def test_a_search_reports_the_parameters_it_ran_with(approx: TestClient) -> None:
    assert _search(approx, "ivf", 3)["search_params"] == {"nprobe": 8}
    assert _search(approx, "hnsw", 3)["search_params"] == {"ef_search": 16}
    assert _search(approx, "flat", 3)["search_params"] == {}
    payload = _search(approx, "ivf", 3, search_params={"nprobe": 2})
    assert payload["search_params"] == {"nprobe": 2}
    payload = _search(approx, "hnsw", 3, search_params={"exact": True})
    assert payload["search_params"] == {"exact": True}


@pytest.mark.parametrize("collection", ["ivf", "hnsw", "pq", "disk"])
def test_exact_answers_are_the_flat_collection_s(approx: TestClient, collection: str) -> None:
    for row in QUERY_ROWS:
        flat = _search(approx, "flat", row, exclude=[approx_id("flat", row)])
        exact = _search(
            approx,
            collection,
            row,
            exclude=[approx_id(collection, row)],
            search_params={"exact": True},
        )
        assert _rows(exact) == _rows(flat)
        assert [r["score"] for r in exact["results"]] == [r["score"] for r in flat["results"]]


def test_more_probes_find_the_exact_answers(approx: TestClient) -> None:
    found = {1: 0, APPROX_NLIST: 0}
    total = 0
    for row in range(0, APPROX_COUNT, 50):
        exact = set(_rows(_search(approx, "flat", row)))
        total += len(exact)
        for nprobe in found:
            answer = _search(approx, "ivf", row, search_params={"nprobe": nprobe})
            found[nprobe] += len(exact & set(_rows(answer)))
    assert found[APPROX_NLIST] == total  # every list scanned: IVF-Flat is exact
    assert found[1] < 0.95 * total


def test_identical_requests_get_identical_answers(approx: TestClient) -> None:
    body = {"search_params": {"ef_search": 40}, "k": 25}
    first = _search(approx, "hnsw", 901, **body)
    assert _search(approx, "hnsw", 901, **body)["results"] == first["results"]


def test_an_override_combines_with_a_filter_and_pages(approx: TestClient) -> None:
    even = {"field": "even", "eq": True}
    exact = _search(approx, "flat", 250, k=30, filter=even)
    probed = {"nprobe": APPROX_NLIST}
    assert _rows(_search(approx, "ivf", 250, k=30, filter=even, search_params=probed)) == _rows(
        exact
    )
    few = {"nprobe": 2}
    whole = _rows(_search(approx, "ivf", 250, k=30, filter=even, search_params=few))
    pages: list[int] = []
    offset: int | None = 0
    while offset is not None and len(pages) < 30:
        page = _search(approx, "ivf", 250, k=10, offset=offset, filter=even, search_params=few)
        pages += _rows(page)
        offset = page["next_offset"]
    assert pages[:30] == whole
    assert all(row % 2 == 0 for row in whole)


@pytest.mark.parametrize(
    ("collection", "params", "code", "message"),
    [
        ("hnsw", {"nprobe": 4}, "search_param_not_applicable", "nprobe applies to IVF"),
        ("flat", {"nprobe": 4}, "search_param_not_applicable", "index is flat"),
        ("ivf", {"ef_search": 4}, "search_param_not_applicable", "ef_search applies to HNSW"),
        ("flat", {"ef_search": 4}, "search_param_not_applicable", "ef_search applies to HNSW"),
        ("ivf", {"nprobe": 33}, "search_param_not_applicable", "nlist=32"),
        ("ivf", {"nprobe": 65}, "invalid_input", "more than max_nprobe=64"),
        ("hnsw", {"ef_search": 513}, "invalid_input", "more than max_ef_search=512"),
        ("ivf", {"nprobe": 4, "exact": True}, "invalid_input", "'exact' cannot be combined"),
        ("ivf", {"nprobe": 0}, "invalid_input", "search_params.nprobe"),
        ("ivf", {"nprobe": 2.5}, "invalid_input", "search_params.nprobe"),
        ("ivf", {"probes": 2}, "invalid_input", "search_params.probes"),
    ],
)
def test_refusals_come_before_any_encoding(
    approx: TestClient,
    encoder: FakeTextEncoder,
    collection: str,
    params: dict[str, Any],
    code: str,
    message: str,
) -> None:
    body = {"query": {"text": "a dog"}, "collection": collection, "search_params": params}
    status, got_code, got_message = _error(approx, body)
    # Parameters the index does not take are a conflict with what is served (409); parameters
    # that break the document (a bound, a type, exact with another) are invalid input (422).
    assert (status, got_code) == (STATUS_OF[ErrorCode(code)], code)
    assert message in got_message
    assert encoder.calls == []


def test_bulk_searches_each_take_their_own_parameters(approx: TestClient) -> None:
    searches = [
        {"query": {"vector": _vector(77)}, "collection": "ivf", "k": 5},
        {
            "query": {"vector": _vector(77)},
            "collection": "ivf",
            "k": 5,
            "search_params": {"nprobe": 32},
        },
        {
            "query": {"vector": _vector(77)},
            "collection": "hnsw",
            "k": 5,
            "search_params": {"nprobe": 2},
        },
        {
            "query": {"vector": _vector(77)},
            "collection": "hnsw",
            "k": 5,
            "search_params": {"exact": True},
        },
    ]
    response = approx.post("/v1/search/bulk", json={"searches": searches})
    assert response.status_code == 200
    items = response.json()["responses"]
    assert [item["status"] for item in items] == [200, 200, 409, 200]
    assert items[0]["result"]["search_params"] == {"nprobe": 8}
    assert items[1]["result"]["search_params"] == {"nprobe": 32}
    assert items[2]["error"]["code"] == "search_param_not_applicable"
    assert "searches.2.search_params.nprobe" in items[2]["error"]["message"]
    assert items[3]["result"]["search_params"] == {"exact": True}
    exact = _search(approx, "flat", 77, k=5)
    rows = [
        [int(r["metadata"]["row"]) for r in item["result"]["results"]]
        for item in items
        if item["result"]
    ]
    assert rows[1] == _rows(exact)
    assert rows[2] == _rows(exact)
    # A bulk limit is checked for the whole request before anything runs.
    over = {**searches[0], "search_params": {"nprobe": 1000}}
    response = approx.post("/v1/search/bulk", json={"searches": [searches[0], over]})
    assert response.status_code == 422
    assert response.json()["error"]["message"].startswith("searches.1.search_params.nprobe")


def test_the_flat_bundle_answers_as_before(client: TestClient) -> None:
    response = client.post(
        "/v1/search", json={"query": {"text": "a dog on a couch"}, "collection": "captions"}
    )
    payload = response.json()
    assert payload["search_params"] == {}
    info = client.get("/v1/collections").json()["collections"][0]
    assert (info["index_kind"], info["search_params"], info["tuning"]) == ("flat", {}, None)


def test_the_upload_form_takes_search_params_as_a_json_field(multimodal: Multimodal) -> None:
    def upload(params: str) -> Any:
        return multimodal.client.post(
            "/v1/search/upload",
            files={"file": ("photo.png", solid("yellow"), "image/png")},
            data={"collection": "images", "k": "1", "search_params": params},
        )

    response = upload('{"exact": true}')
    assert response.status_code == 200, response.text
    assert response.json()["search_params"] == {"exact": True}
    assert response.json()["results"][0]["id"] == image_id(3)
    refused = upload('{"nprobe": 2}')  # the images collection is flat
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "search_param_not_applicable"
    malformed = upload("nprobe=2")
    assert malformed.status_code == 422
    assert malformed.json()["error"]["code"] == "invalid_input"
