"""The schemathesis CLI with every check finds nothing against the demo's own layout — what
`make serve` serves after `make demo` — and the OpenAPI document's examples are requests the
demo answers.

The layout is built small from scratch (CI starts from a clean clone): the three variants
`make serve` loads under their own names — ``minilm-l6-v2`` (text only, the default variant, as
`make serve` sets it), ``efficientnet-lite0`` (image only) and the committed two-tower
``scenes-dual-encoder`` (models/) — and the bundles ``coco-captions`` (the first Karpathy val
captions, embedded by MiniLM), ``scenes`` and ``scenes-efficientnet`` (a dozen generated scenes
of the test split, as the demo embeds it). Unlike the one-variant layout of
test_schemathesis_live.py, here a well-formed request meets every refusal of what is not served:
image sides sent to the text-only default variant, a collection name two bundles share
(``images``, ``captions``), vectors of three dimensions, filters on fields a collection lacks,
search parameters a flat index does not take.
"""

from __future__ import annotations

import csv
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from index_builder.__main__ import main as index_main
from scenes.generate import GenerationConfig, generate_scenes
from tests.contract.test_schemathesis_live import ADMIN_KEY, READ_KEY, run_schemathesis
from tests.e2e.conftest import SCENES_MODEL, LiveService, start_service, stop_service

pytestmark = [pytest.mark.e2e]

DEFAULT_VARIANT = "minilm-l6-v2"
IMAGE_VARIANT = "efficientnet-lite0"
CAPTIONS = 300
SCENES = 12
SCENES_SPLIT = "test"  # the split the demo embeds (SCENES_SPLIT in the Makefile)


def _first_captions(source: Path, out: Path, count: int) -> Path:
    """The header and first ``count`` rows of a Karpathy captions CSV, written to ``out``."""
    with source.open(newline="", encoding="utf-8") as src, out.open("w", newline="") as dst:
        rows = csv.reader(src)
        writer = csv.writer(dst)
        writer.writerow(next(rows))
        for _, row in zip(range(count), rows, strict=False):
            writer.writerow(row)
    return out


def _build(variant_dir: Path, name: str, bundles_root: Path, *sources: str) -> None:
    """``index_builder build`` as `make bundle` / `make scenes-bundles` run it."""
    command = ["build", "--variant", str(variant_dir), "--name", name, *sources]
    command += ["--bundles-root", str(bundles_root), "--providers", "cpu", "--no-progress"]
    assert index_main(command) == 0, name


def build_demo_roots(
    root: Path, data_dir: Path, minilm_dir: Path, efficientnet_dir: Path
) -> tuple[Path, Path]:
    """(variants_root, bundles_root) under ``root``: the demo's variants under their served
    names and its three bundles, small."""
    variants_root, bundles_root = root / "variants", root / "bundles"
    variants_root.mkdir()
    (variants_root / DEFAULT_VARIANT).symlink_to(minilm_dir.resolve())
    (variants_root / IMAGE_VARIANT).symlink_to(efficientnet_dir.resolve())
    shutil.copytree(SCENES_MODEL, variants_root / SCENES_MODEL.name)

    karpathy = data_dir / "coco-karpathy-captions" / "captions_val.csv"
    captions = _first_captions(karpathy, root / "captions_val.csv", CAPTIONS)
    _build(
        variants_root / DEFAULT_VARIANT, "coco-captions", bundles_root, "--captions", str(captions)
    )

    corpus = root / "scenes-corpus"
    generate_scenes(
        GenerationConfig(
            out=corpus,
            seed=3,
            sizes={"train": 0, "val": 0, SCENES_SPLIT: SCENES},
            workers=1,
            judgment_splits=(),
            progress=False,
        )
    )
    scenes = ["--captions", str(corpus / "coco-karpathy-captions" / f"captions_{SCENES_SPLIT}.csv")]
    scenes += ["--images-dir", str(corpus / "images" / SCENES_SPLIT)]
    _build(variants_root / SCENES_MODEL.name, "scenes", bundles_root, *scenes)
    _build(variants_root / IMAGE_VARIANT, "scenes-efficientnet", bundles_root, *scenes)
    return variants_root, bundles_root


@pytest.fixture(scope="module")
def demo_roots(
    tmp_path_factory: pytest.TempPathFactory,
    data_dir: Path,
    minilm_variant_dir: Path,
    efficientnet_variant_dir: Path,
) -> tuple[Path, Path, Path]:
    """(variants root, bundles root, work folder) of the demo's layout."""
    root = tmp_path_factory.mktemp("demo")
    variants_root, bundles_root = build_demo_roots(
        root, data_dir, minilm_variant_dir, efficientnet_variant_dir
    )
    return variants_root, bundles_root, root


def _serve(
    roots: tuple[Path, Path, Path], name: str, env: dict[str, str] | None = None
) -> Iterator[LiveService]:
    """The demo's service as `make serve` starts it (its default variant, live collections in
    a folder of its own), with ``env`` added, logging to ``<name>.log``; stopped after."""
    variants_root, bundles_root, root = roots
    settings = {
        "CRISSCROSS_DEFAULT_VARIANT": DEFAULT_VARIANT,
        "CRISSCROSS_COLLECTIONS_DIR": str(root / f"{name}-collections"),
        **(env or {}),
    }
    service = start_service(variants_root, bundles_root, root / f"{name}.log", settings)
    yield service
    assert stop_service(service) == 0, service.log()


@pytest.fixture(scope="module")
def demo_service(demo_roots: tuple[Path, Path, Path]) -> Iterator[LiveService]:
    yield from _serve(demo_roots, "demo")


@pytest.fixture
def keyed_demo_service(demo_roots: tuple[Path, Path, Path]) -> Iterator[LiveService]:
    keys = {
        "CRISSCROSS_READ_KEYS": READ_KEY,
        "CRISSCROSS_ADMIN_KEYS": ADMIN_KEY,
        "CRISSCROSS_ADMIN_RELOAD": "true",
    }
    yield from _serve(demo_roots, "demo-keyed", keys)


def _examples(document: dict[str, Any], component: str) -> list[Any]:
    examples: list[Any] = document["components"]["schemas"][component]["examples"]
    assert examples, component
    return examples


def test_the_document_s_examples_are_answered_by_the_demo(demo_service: LiveService) -> None:
    """Every example request of the document the demo serves is answered 200: the search,
    bulk, score and embed bodies, the filter and search parameters of a search, and the items
    a query side names."""
    document = httpx.get(f"{demo_service.url}/openapi.json", timeout=10).json()
    schemas = document["components"]["schemas"]
    options = schemas["SearchRequest"]["properties"]
    bodies: list[tuple[str, Any]] = [
        ("/v1/search", body) for body in _examples(document, "SearchRequest")
    ]
    bodies += [
        (
            "/v1/search",
            {
                "query": {"text": "a dog on a couch"},
                "collection": collection,
                "filter": flt,
                "search_params": params,
            },
        )
        for collection in options["collection"]["examples"]
        for flt in options["filter"]["examples"]
        for params in options["search_params"]["examples"]
    ]
    bodies += [("/v1/search/bulk", body) for body in _examples(document, "BulkSearchRequest")]
    bodies += [("/v1/score", body) for body in _examples(document, "ScoreRequest")]
    embed = document["paths"]["/v1/embed"]["post"]["requestBody"]["content"]["application/json"]
    bodies += [("/v1/embed", body) for body in embed["schema"]["examples"]]
    item = schemas["ItemRef"]["properties"]
    sides = [
        {"item": {"collection": collection, "id": identifier}}
        for collection, identifier in zip(
            item["collection"]["examples"], item["id"]["examples"], strict=True
        )
    ]
    bodies += [("/v1/search", {"query": side, "collection": "captions"}) for side in sides]
    with httpx.Client(base_url=demo_service.url, timeout=60) as client:
        for path, body in bodies:
            response = client.post(path, json=body)
            assert response.status_code == 200, (path, body, response.text)
            if path == "/v1/search/bulk":
                statuses = [answer["status"] for answer in response.json()["responses"]]
                assert statuses == [200] * len(statuses), (body, response.text)
            if path == "/v1/search":
                assert response.json()["results"], (body, response.text)


def test_schemathesis_finds_nothing_on_the_demo_layout(demo_service: LiveService) -> None:
    result = run_schemathesis(demo_service, None)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    # The fuzzer met the refusals of well-formed requests the demo cannot serve as asked.
    log = demo_service.log()
    assert "status=409" in log, "no request met a conflict with what is served"
    assert "status=404" in log


def test_schemathesis_finds_nothing_on_the_demo_layout_with_keys(
    keyed_demo_service: LiveService, demo_roots: tuple[Path, Path, Path]
) -> None:
    """With read and admin keys: every route is reached past its key check, the admin reload
    included (it re-reads the served bundles' CURRENT)."""
    result = run_schemathesis(keyed_demo_service, ADMIN_KEY, work=demo_roots[2])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "route=/v1/admin/reload status=200" in keyed_demo_service.log()
