"""What the service says it serves: the run's variant, its towers and its collections."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from benchmarks.drivers.http_client import CrisscrossClient
from benchmarks.runs.service_facts import (
    loaded_variants,
    optional_variants,
    variant_collections,
    variant_towers,
)
from benchmarks.runs.setup_error import BenchmarkSetupError
from tests.fakes.fake_service import FakeService
from tests.fakes.tiny_data import TinyDataset


def test_variant_towers() -> None:
    variants: list[dict[str, Any]] = [
        {"name": "a", "towers": ["text"]},
        {"name": "b", "towers": ["text", "image"], "default": True},
    ]
    assert variant_towers(variants, None) == frozenset({"text", "image"})
    assert variant_towers(variants, "a") == frozenset({"text"})
    assert variant_towers(variants, "zzz") is None
    assert variant_towers([{"name": "a"}], None) is None
    assert variant_towers([{"name": "a", "towers": ["image"]}], None) == frozenset({"image"})
    assert variant_towers(None, None) is None


def test_variant_collections_picks_the_runs_variant() -> None:
    collections: list[dict[str, object]] = [
        {"name": "captions", "count": 10, "variant": "text-only", "bundle": "coco"},
        {"name": "captions", "count": 20, "variant": "dual", "bundle": "scenes"},
        {"name": "images", "count": 4, "variant": "dual", "bundle": "scenes"},
    ]
    variants: list[dict[str, object]] = [
        {"name": "text-only", "default": True},
        {"name": "dual", "default": False},
    ]
    assert [entry["bundle"] for entry in variant_collections(collections, variants, "dual")] == [
        "scenes",
        "scenes",
    ]
    assert [entry["count"] for entry in variant_collections(collections, variants, None)] == [10]
    # a variant no collection names, or no variants route at all: every entry is kept
    assert len(variant_collections(collections, variants, "zzz")) == 3
    assert len(variant_collections(collections, None, None)) == 3


async def _variants(
    service: FakeService, wanted: tuple[str, ...]
) -> tuple[list[dict[str, Any]] | None, dict[str, dict[str, Any]]]:
    async with CrisscrossClient("http://fake", transport=service.transport()) as client:
        optional = await optional_variants(client)
        return optional, await loaded_variants(client, wanted) if wanted else {}


def test_loaded_and_optional_variants(tiny: TinyDataset) -> None:
    service = FakeService(tiny.captions)
    optional, loaded = asyncio.run(_variants(service, ("toy-jaccard",)))
    assert optional is not None
    assert loaded == {"toy-jaccard": optional[0]}
    with pytest.raises(BenchmarkSetupError, match="not loaded"):
        asyncio.run(_variants(service, ("other",)))
    no_route = FakeService(tiny.captions, has_variants_route=False)
    assert asyncio.run(_variants(no_route, ())) == (None, {})
