"""The live collections registry: opened from their folder at start-up, created and dropped
under a lock, names unique, limits and unavailability refused with their errors."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from formats.field_types import FieldType
from service.engine.live_collections import LiveCollections
from service.exceptions import (
    CollectionExistsError,
    CollectionLimitError,
    NotFoundError,
    WritesUnavailableError,
)
from service.metrics import ServiceMetrics
from service.settings import Settings
from storage.live.collection import LOG_FILE, CollectionSpec


def _registry(root: Path | None, **overrides: object) -> LiveCollections:
    settings = Settings(collections_dir=root, **overrides)  # type: ignore[arg-type]
    return LiveCollections(settings, ServiceMetrics())


def test_create_reopen_and_drop(tmp_path: Path) -> None:
    registry = _registry(tmp_path)

    async def create() -> None:
        await registry.create(CollectionSpec("a", 4, {"n": FieldType.INTEGER}), taken=set())
        with pytest.raises(CollectionExistsError):
            await registry.create(CollectionSpec("a", 4, {}), taken=set())
        with pytest.raises(CollectionExistsError):
            await registry.create(CollectionSpec("captions", 4, {}), taken={"captions"})
        await registry.close()

    asyncio.run(create())
    reopened = _registry(tmp_path)
    assert reopened.open_all() == ["a"]
    assert reopened.require("a").fields.columns["n"].type == FieldType.INTEGER

    async def drop() -> None:
        await reopened.drop("a")
        with pytest.raises(NotFoundError):
            reopened.require("a")

    asyncio.run(drop())
    assert not (tmp_path / "a").exists()


def test_the_collection_limit_is_enforced(tmp_path: Path) -> None:
    registry = _registry(tmp_path, max_collections=1)

    async def run() -> None:
        await registry.create(CollectionSpec("a", 4, {}), taken=set())
        with pytest.raises(CollectionLimitError):
            await registry.create(CollectionSpec("b", 4, {}), taken=set())
        await registry.close()

    asyncio.run(run())


def test_without_a_folder_writes_are_unavailable() -> None:
    registry = _registry(None)
    assert registry.open_all() == []
    with pytest.raises(WritesUnavailableError, match="collections_dir"):
        registry.require("a")
    unavailable = LiveCollections(Settings(), ServiceMetrics(), unavailable="a worker of 4")
    with pytest.raises(WritesUnavailableError, match="worker of 4"):
        unavailable.require_writable()


def test_a_collection_that_cannot_open_is_left_out(tmp_path: Path) -> None:
    registry = _registry(tmp_path)

    async def create() -> None:
        await registry.create(CollectionSpec("good", 4, {}), taken=set())
        await registry.create(CollectionSpec("bad", 4, {}), taken=set())
        await registry.close()

    asyncio.run(create())
    (tmp_path / "bad" / "collection.json").write_text("{not json", encoding="utf-8")
    assert (tmp_path / "bad" / LOG_FILE).exists()
    assert _registry(tmp_path).open_all() == ["good"]
