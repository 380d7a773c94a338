"""The write path: concurrent writes share one fsync, a write is visible exactly when it is
answered, a refused plan costs nothing, and a failed log refuses the group and what follows."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import numpy as np
import pytest

from service.engine.collection.write_path import CollectionWriter
from service.exceptions import NotFoundError, OverloadedError, WriteFailedError
from service.metrics import ServiceMetrics
from service.request_context import RequestContext
from storage.live import log as log_module
from storage.live.collection import LiveCollection, create_collection
from storage.live.operations import Operation, Upsert
from storage.live.segment import SegmentView
from storage.live.spec import CollectionSpec


def _writer(tmp_path: Path, max_pending: int = 64) -> CollectionWriter:
    folder = create_collection(tmp_path, CollectionSpec("c", 4, {}))
    return CollectionWriter(
        LiveCollection.open(folder), ServiceMetrics(), max_pending=max_pending, retry_after_s=1
    )


def _upsert(item: str) -> Operation:
    return Upsert((item,), np.full((1, 4), 0.5, dtype=np.float32), ({},), (None,))


def test_concurrent_writes_share_fsyncs_and_are_visible_when_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = _writer(tmp_path)
    fsyncs: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        fsyncs.append(fd)
        real(fd)

    monkeypatch.setattr(log_module.os, "fsync", counting)

    async def one(item: str) -> None:
        result = await writer.write(lambda _view: _upsert(item))
        # Answered: durable and visible.
        assert writer.collection.view().row_of(item) is not None
        assert result.done == 1

    async def run() -> None:
        await asyncio.gather(*(one(f"i{n}") for n in range(40)))
        await writer.close()

    asyncio.run(run())
    assert writer.collection.visible_seq == 40
    assert 1 <= len(fsyncs) < 40  # group commit: one fsync served several writes


def test_a_refused_plan_logs_nothing_and_the_others_go_on(tmp_path: Path) -> None:
    writer = _writer(tmp_path)

    def refused(_view: SegmentView) -> Operation:
        raise NotFoundError("no such item")

    async def run() -> list[object]:
        outcomes = await asyncio.gather(
            writer.write(lambda _view: _upsert("a")),
            writer.write(refused),
            writer.write(lambda _view: _upsert("b")),
            return_exceptions=True,
        )
        await writer.close()
        return list(outcomes)

    outcomes = asyncio.run(run())
    assert isinstance(outcomes[1], NotFoundError)
    assert writer.collection.visible_seq == 2


def test_a_failed_fsync_refuses_the_group_and_every_later_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = _writer(tmp_path)

    def broken(_fd: int) -> None:
        raise OSError(28, "No space left on device")

    async def run() -> tuple[BaseException | None, BaseException | None]:
        await writer.write(lambda _view: _upsert("ok"))
        monkeypatch.setattr(log_module.os, "fsync", broken)
        failures: list[BaseException | None] = []
        for item in ("lost", "later"):
            try:
                await writer.write(lambda _view, item=item: _upsert(item))  # type: ignore[misc]
                failures.append(None)
            except WriteFailedError as error:
                failures.append(error)
        monkeypatch.undo()
        await writer.close()
        return failures[0], failures[1]

    first, later = asyncio.run(run())
    assert first is not None
    assert "No space left" in str(first)
    assert later is not None
    view = writer.collection.view()
    assert view.row_of("ok") is not None
    assert view.row_of("lost") is None


def test_too_many_waiting_writes_are_refused(tmp_path: Path) -> None:
    writer = _writer(tmp_path, max_pending=1)

    async def run() -> list[object]:
        outcomes = await asyncio.gather(
            *(writer.write(lambda _view, n=n: _upsert(f"i{n}")) for n in range(4)),  # type: ignore[misc]
            return_exceptions=True,
        )
        await writer.close()
        return list(outcomes)

    outcomes = asyncio.run(run())
    assert any(isinstance(outcome, OverloadedError) for outcome in outcomes)


def test_a_collection_compacts_itself_past_the_dead_fraction(tmp_path: Path) -> None:
    folder = create_collection(tmp_path, CollectionSpec("c", 4, {}))
    writer = CollectionWriter(
        LiveCollection.open(folder),
        ServiceMetrics(),
        max_pending=8,
        retry_after_s=1,
        compact_dead_fraction=0.5,
        compact_min_rows=4,
    )

    async def run() -> None:
        # The same id five times: after the fourth, 3 of 4 rows are dead versions.
        for _ in range(5):
            await writer.write(lambda _view: _upsert("same"))
        assert writer.collection.rows == 2  # compacted to 1 row after the fourth, then one more
        done = await writer.compact()
        assert done.rows_after == 1
        await writer.close()

    asyncio.run(run())
    assert writer.collection.view().count == 1


def test_a_writes_context_gets_its_write_and_its_groups_fsync(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    stages: list[tuple[str, float, float]] = []

    class Spans:
        def stage(self, name: str, started_s: float, ended_s: float) -> None:
            stages.append((name, started_s, ended_s))

    context = RequestContext("w-1", spans=Spans())

    async def run() -> None:
        await writer.write(lambda _view: _upsert("a"), context)
        await writer.close()

    asyncio.run(run())
    assert context.write_ms is not None
    assert context.fsync_ms is not None
    assert 0 < context.fsync_ms <= context.write_ms
    (write_name, write_start, write_end), (fsync_name, fsync_start, fsync_end) = stages
    assert (write_name, fsync_name) == ("write", "fsync")
    assert write_start <= fsync_start <= fsync_end <= write_end
    assert (write_end - write_start) * 1000.0 == pytest.approx(context.write_ms)
