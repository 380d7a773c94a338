"""The live collections registry: opened from their folder at start-up, created and dropped
under a lock, names unique, limits and unavailability refused with their errors, and a write
admitted only under a collection's high-water marks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from formats.field_types import FieldType
from service.engine.collection.live_collections import LiveCollections
from service.exceptions import (
    CollectionExistsError,
    CollectionLimitError,
    FieldMismatchError,
    InvalidQueryError,
    NotFoundError,
    OverloadedError,
    WritesUnavailableError,
)
from service.metrics import ServiceMetrics
from service.settings import Settings
from storage.live.collection import LOG_FILE
from storage.live.operations import Upsert
from storage.live.spec import CollectionSpec


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


def _written(registry: LiveCollections, name: str, rows: int) -> None:
    """``rows`` items written to collection ``name`` (of dimension 4) and committed."""
    collection = registry.require(name).collection
    ids = tuple(f"i{n}" for n in range(rows))
    vectors = np.eye(4, dtype=np.float32)[[n % 4 for n in range(rows)]]
    collection.stage(Upsert(ids, vectors, tuple({} for _ in ids), tuple(None for _ in ids)))
    collection.commit()


def test_a_write_is_admitted_up_to_max_live_rows(tmp_path: Path) -> None:
    registry = _registry(tmp_path, max_live_rows=5, write_retry_after_s=7)

    async def run() -> None:
        await registry.create(CollectionSpec("a", 4, {}), taken=set())
        _written(registry, "a", 3)
        assert registry.admit("a", 2) is registry.require("a")
        with pytest.raises(OverloadedError) as refused:
            registry.admit("a", 3)
        assert refused.value.message == (
            "collection 'a' takes no more writes now: it holds 3 rows written since its base "
            "and this write adds 3 (max_live_rows=5)"
        )
        assert refused.value.retry_after_s == 7
        with pytest.raises(NotFoundError):
            registry.admit("b", 1)
        await registry.close()

    asyncio.run(run())


def test_a_write_is_refused_once_the_log_reaches_max_log_bytes(tmp_path: Path) -> None:
    registry = _registry(tmp_path)

    async def create() -> None:
        await registry.create(CollectionSpec("a", 4, {}), taken=set())
        _written(registry, "a", 2)
        await registry.close()

    asyncio.run(create())
    log_bytes = (tmp_path / "a" / LOG_FILE).stat().st_size
    assert log_bytes > 0
    under = _registry(tmp_path, max_log_bytes=log_bytes + 1)
    under.open_all()
    under.admit("a", 1)
    asyncio.run(under.close())
    full = _registry(tmp_path, max_log_bytes=log_bytes)
    full.open_all()
    with pytest.raises(OverloadedError, match=f"its log holds {log_bytes} bytes"):
        full.admit("a", 1)
    asyncio.run(full.close())


def test_without_a_folder_no_write_is_admitted() -> None:
    with pytest.raises(WritesUnavailableError):
        _registry(None).admit("a", 1)


def test_fields_are_added_durably_and_the_entry_renewed(tmp_path: Path) -> None:
    registry = _registry(tmp_path)

    async def add() -> None:
        await registry.create(CollectionSpec("a", 4, {"n": FieldType.INTEGER}), taken=set())
        before = registry.require("a")
        same = await registry.add_fields("a", {"n": FieldType.INTEGER}, max_fields=8)
        assert same is before  # nothing new: nothing written
        renewed = await registry.add_fields("a", {"year": FieldType.INTEGER}, max_fields=8)
        assert renewed is registry.require("a")
        assert renewed.writer is before.writer
        assert renewed.lexical is before.lexical
        assert renewed.fields.columns["year"].type == FieldType.INTEGER
        for fields, error, where in (
            ({"n": FieldType.FLOAT}, FieldMismatchError, "fields.n"),
            ({"n": None}, FieldMismatchError, "fields.n"),
            ({"other": None}, InvalidQueryError, "fields.other"),
        ):
            with pytest.raises(error) as refused:
                await registry.add_fields("a", fields, max_fields=8)
            assert refused.value.param == where
        with pytest.raises(InvalidQueryError, match="max_collection_fields=2"):
            await registry.add_fields("a", {"b": FieldType.STRING}, max_fields=2)
        with pytest.raises(NotFoundError):
            await registry.add_fields("nope", {"b": FieldType.STRING}, max_fields=8)
        await registry.close()

    asyncio.run(add())
    reopened = _registry(tmp_path)
    reopened.open_all()
    assert set(reopened.require("a").fields.columns) == {"n", "year"}
    asyncio.run(reopened.close())
