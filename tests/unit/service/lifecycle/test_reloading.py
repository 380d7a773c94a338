"""Hot reload across worker processes (service.lifecycle.reloading), with two workers' states in one
test process sharing a run folder: the origin waits for the other's acknowledgement, a worker that
loads after an order catches up *and acknowledges it* (a reload that came while it was still loading
is not left waiting), and a version a worker cannot load is acknowledged with why."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from service.engine.collection.catalog import Catalog
from service.lifecycle.loading import load_catalog
from service.lifecycle.reload_broadcast import ReloadAck, ReloadBroadcast
from service.lifecycle.reloading import apply_latest_order, catch_up, reload_here
from service.lifecycle.state import ServiceState, publish_catalog
from service.metrics import ServiceMetrics
from service.process_layout import ProcessLayout
from service.settings import Settings
from storage.writer import set_current
from tests.fakes.fake_bundles import CAPTIONS, write_fake_bundle
from tests.fakes.fake_encoders import FAKE_VARIANT, FakeTextEncoder, fake_factory

BUNDLE = "coco-captions"


def settings_for(tmp_path: Path) -> Settings:
    variants = tmp_path / "variants"
    (variants / FAKE_VARIANT).mkdir(parents=True, exist_ok=True)
    return Settings(
        bundles_root=tmp_path / "bundles",
        variants_root=variants,
        reload_broadcast_timeout_s=5.0,
    )


def worker(tmp_path: Path, index: int) -> ServiceState:
    """Worker ``index`` of two sharing ``tmp_path/run``, nothing loaded yet."""
    layout = ProcessLayout(workers=2, worker=index, run_dir=tmp_path / "run")
    assert layout.reload_dir is not None
    return ServiceState(
        settings=settings_for(tmp_path),
        metrics=ServiceMetrics(),
        encoder_factory=fake_factory(FakeTextEncoder()),
        layout=layout,
        broadcast=ReloadBroadcast(layout.reload_dir),
    )


def loaded(state: ServiceState) -> Catalog:
    return load_catalog(state.settings, state.encoder_factory, state.metrics)


@pytest.fixture
def two_versions(tmp_path: Path) -> Path:
    """v1 (CURRENT) and v2 of the bundle."""
    write_fake_bundle(tmp_path / "bundles", version="v1")
    write_fake_bundle(tmp_path / "bundles", version="v2", texts=CAPTIONS[:5])
    set_current(tmp_path / "bundles" / BUNDLE, "v1")
    return tmp_path


def test_a_reload_waits_for_the_other_worker_to_follow(two_versions: Path) -> None:
    origin, other = worker(two_versions, 0), worker(two_versions, 1)
    for state in (origin, other):
        publish_catalog(state, loaded(state))

    async def main() -> int:
        async with anyio.create_task_group() as tasks:

            async def follow() -> None:
                assert other.broadcast is not None
                while other.applied_generation == 0:
                    await apply_latest_order(other, other.broadcast)
                    await anyio.sleep(0.01)

            tasks.start_soon(follow)
            _, serving = await reload_here(origin, BUNDLE, "v2")
        return serving

    assert anyio.run(main) == 2
    for state in (origin, other):
        assert state.catalog is not None
        assert state.catalog.bundle_versions == {BUNDLE: "v2"}


def test_a_worker_loading_when_the_reload_came_catches_up_and_acknowledges(
    two_versions: Path,
) -> None:
    origin, late = worker(two_versions, 0), worker(two_versions, 1)
    publish_catalog(origin, loaded(origin))

    async def main() -> int:
        async with anyio.create_task_group() as tasks:

            async def finish_loading() -> None:
                await anyio.sleep(0.2)  # the order is out while this worker still loads
                catalog = await anyio.to_thread.run_sync(lambda: catch_up(late, loaded(late)))
                publish_catalog(late, catalog)

            tasks.start_soon(finish_loading)
            _, serving = await reload_here(origin, BUNDLE, "v2")
        return serving

    started = time.monotonic()
    assert anyio.run(main) == 2
    # Acknowledged once caught up, not given up on after reload_broadcast_timeout_s.
    assert time.monotonic() - started < late.settings.reload_broadcast_timeout_s
    assert late.catalog is not None
    assert late.catalog.bundle_versions == {BUNDLE: "v2"}
    assert late.broadcast is not None
    assert late.broadcast.ack_of(1) == ReloadAck(1, 1, {BUNDLE: "v2"}, None)
    assert late.applied_generation == 1


def test_a_version_a_late_worker_cannot_load_is_acknowledged_with_why(two_versions: Path) -> None:
    origin, late = worker(two_versions, 0), worker(two_versions, 1)
    assert origin.broadcast is not None
    assert late.broadcast is not None
    origin.broadcast.publish(0, {BUNDLE: "v9"})  # a version that is not there
    catalog = catch_up(late, loaded(late))
    assert catalog.bundle_versions == {BUNDLE: "v1"}  # it serves what it loaded
    ack = late.broadcast.ack_of(1)
    assert ack is not None
    assert (ack.generation, dict(ack.versions)) == (1, {BUNDLE: "v1"})
    assert ack.error is not None
    assert "v9" in ack.error


def test_without_an_order_catching_up_changes_and_acknowledges_nothing(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles", version="v1")
    state = worker(tmp_path, 1)
    catalog = loaded(state)
    assert catch_up(state, catalog) is catalog
    assert state.broadcast is not None
    assert state.broadcast.ack_of(1) is None
