"""Hot reload in a running server: load new bundle versions, swap them in, and — with several
worker processes — bring every worker to the same versions.

:func:`reload_here` is what ``POST /v1/admin/reload`` runs in the worker it reached; with other
workers it then publishes an order (:mod:`service.lifecycle.reload_broadcast`) and waits, up to
``reload_broadcast_timeout_s``, until they serve those versions. Each worker runs
:func:`follow_reloads` for the orders of the others (and, after a restart, for the latest one).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

import anyio

from service.engine.collection.catalog import Catalog
from service.exceptions import BundleRejectedError, DomainError, NotFoundError
from service.lifecycle.loading import BundleChange, reload_bundles
from service.lifecycle.reload_broadcast import (
    BroadcastError,
    ReloadAck,
    ReloadBroadcast,
    ReloadOrder,
)
from service.lifecycle.state import ServiceState, publish_catalog

logger = logging.getLogger("crisscross.service")

# How often a worker looks for a new order, and the waiting origin for acknowledgements.
FOLLOW_POLL_S = 0.2
ACK_POLL_S = 0.05


async def reload_here(
    state: ServiceState, bundle: str | None, version: str | None
) -> tuple[list[BundleChange], int]:
    """Reload in this worker (see :func:`service.lifecycle.loading.reload_bundles`), then in the
    others; returns the changes and how many workers serve the new versions (this one included).

    Loads off the event loop, then swaps the catalog with one assignment under the reload lock.
    Raises ``NotFoundError``/``BundleRejectedError`` (nothing loaded anywhere) and the not-ready
    ``ServiceError`` while there is no catalog or the server drains.
    """
    async with state.reload_lock:
        # The latest: an earlier reload may have swapped it while this one waited.
        catalog = state.catalog
        if catalog is None or state.draining:
            raise state.not_ready_error()
        try:
            reloaded, changes = await anyio.to_thread.run_sync(
                lambda: reload_bundles(
                    catalog,
                    state.settings,
                    bundle=bundle,
                    version=version,
                    copies=state.copies,
                )
            )
        except Exception as error:
            if isinstance(error, BundleRejectedError | NotFoundError):
                outcome = "rejected" if isinstance(error, BundleRejectedError) else "not_found"
            else:
                outcome = "failed"
            state.metrics.reloads.labels(outcome).inc()
            await anyio.to_thread.run_sync(state.release_unserved_copies)  # a refused copy
            raise
        if reloaded is catalog:
            state.metrics.reloads.labels("unchanged").inc()
        else:
            publish_catalog(state, reloaded)  # requests holding the old one finish on it
            await anyio.to_thread.run_sync(state.release_unserved_copies)
            state.metrics.reloads.labels("swapped").inc()
        broadcast = state.broadcast
        if broadcast is None:
            return changes, 1
        order = broadcast.publish(state.layout.worker, reloaded.bundle_versions)
        # Seen here: this worker's follower must not apply its own order again.
        state.applied_generation = order.generation
    return changes, await _acknowledged(state, broadcast, order)


async def _acknowledged(state: ServiceState, broadcast: ReloadBroadcast, order: ReloadOrder) -> int:
    """Wait until every other worker has applied ``order`` (or the timeout); how many workers
    serve its versions then, this one included."""
    others = [w for w in range(state.layout.workers) if w != state.layout.worker]
    deadline = time.monotonic() + state.settings.reload_broadcast_timeout_s
    serving, pending = 1, set(others)
    while pending:
        for worker in sorted(pending):
            ack = broadcast.ack_of(worker)
            if ack is None or ack.generation < order.generation:
                continue
            pending.discard(worker)
            if dict(ack.versions) == dict(order.versions) or ack.generation > order.generation:
                serving += 1
            else:
                logger.error(
                    "reload: worker %d still serves %s: %s", worker, ack.versions, ack.error
                )
        if not pending or time.monotonic() >= deadline:
            break
        await anyio.sleep(ACK_POLL_S)
    for worker in sorted(pending):
        logger.error(
            "reload: worker %d has not applied generation %d within %.0f s",
            worker,
            order.generation,
            state.settings.reload_broadcast_timeout_s,
        )
    return serving


def _toward(catalog: Catalog, state: ServiceState, versions: Mapping[str, str]) -> Catalog:
    """``catalog`` serving ``versions`` for every bundle it serves that they name (blocking)."""
    for name, version in versions.items():
        if catalog.bundle_versions.get(name, version) != version:
            catalog, _ = reload_bundles(
                catalog, state.settings, bundle=name, version=version, copies=state.copies
            )
    return catalog


def _followed(
    state: ServiceState, catalog: Catalog, order: ReloadOrder
) -> tuple[Catalog, str | None]:
    """``catalog`` moved to ``order``'s versions, or — when this worker cannot load them —
    ``catalog`` itself and why (blocking)."""
    try:
        return _toward(catalog, state, order.versions), None
    except DomainError as failure:
        state.metrics.reloads.labels("follow_rejected").inc()
        logger.error("reload order %d refused here: %s", order.generation, failure.message)
        return catalog, failure.message


def _acknowledge(
    state: ServiceState,
    broadcast: ReloadBroadcast,
    order: ReloadOrder,
    serving: Catalog,
    error: str | None,
) -> None:
    state.applied_generation = order.generation
    broadcast.acknowledge(
        ReloadAck(
            worker=state.layout.worker,
            generation=order.generation,
            versions=serving.bundle_versions,
            error=error,
        )
    )


def catch_up(state: ServiceState, catalog: Catalog) -> Catalog:
    """``catalog`` (just loaded, not yet served) moved to the latest reload order's versions,
    so a worker that starts after a reload (a replacement, or one still loading when the reload
    came) serves what the others do from its first answer; the order is acknowledged, since
    the worker that published it may still be waiting. Versions this worker cannot load leave
    it on ``catalog`` (the acknowledgement says why). Blocking."""
    broadcast = state.broadcast
    order = None if broadcast is None else broadcast.latest()
    if broadcast is None or order is None:
        return catalog
    caught_up, error = _followed(state, catalog, order)
    _acknowledge(state, broadcast, order, caught_up, error)
    if error is None:
        logger.info("caught up with reload order %d: %s", order.generation, dict(order.versions))
    return caught_up


async def apply_latest_order(state: ServiceState, broadcast: ReloadBroadcast) -> None:
    """Apply the latest order, if it is new to this worker and there is a catalog to apply it
    to, then acknowledge it. A version this worker cannot load leaves it serving what it did
    (the acknowledgement says why) until a later order."""
    order = broadcast.latest()
    if order is None or order.generation <= state.applied_generation:
        return
    async with state.reload_lock:
        catalog = state.catalog
        if catalog is None or state.draining or order.generation <= state.applied_generation:
            return
        reloaded, error = await anyio.to_thread.run_sync(lambda: _followed(state, catalog, order))
        if reloaded is not catalog:
            publish_catalog(state, reloaded)
        await anyio.to_thread.run_sync(state.release_unserved_copies)
        if reloaded is not catalog:
            state.metrics.reloads.labels("followed").inc()
            logger.info("reload order %d applied: %s", order.generation, dict(order.versions))
        _acknowledge(state, broadcast, order, reloaded, error)


async def follow_reloads(state: ServiceState, broadcast: ReloadBroadcast) -> None:
    """Apply the other workers' reload orders for as long as the server runs (a lifespan
    task). An unreadable order file is logged and looked at again on the next poll."""
    while True:
        try:
            await apply_latest_order(state, broadcast)
        except BroadcastError as error:
            logger.error("reload order unreadable: %s", error)
        await anyio.sleep(FOLLOW_POLL_S)
