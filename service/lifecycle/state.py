"""The state one app serves from: settings, metrics, the search core, the admission gate and
the catalog (None until loaded), with what publishing a catalog and draining change.

Nothing lives at module level: every app built by ``create_app`` carries its own state, so
tests can run several apps side by side.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from service.engine.collection.catalog import Catalog
from service.engine.encode.admission import AdmissionGate
from service.engine.encode.query_cache import QueryCache
from service.engine.query.images import image_limits
from service.engine.replication.replica_set import ReplicaSet
from service.engine.search.searcher import Searcher
from service.exceptions import NotReadyError
from service.lifecycle.batch_defaults import overload_limit
from service.lifecycle.loading import EncoderFactory, served_sources, with_fresh_batchers
from service.lifecycle.reload_broadcast import ReloadBroadcast
from service.metrics import ServiceMetrics
from service.process_layout import ProcessLayout
from service.settings import Settings
from storage.private_copies import PrivateCopies

STATE_ATTRIBUTE = "crisscross"


@dataclass
class ServiceState:
    """What one app serves. ``catalog`` is None until the lifespan has loaded everything (each
    variant in it owns its encoders and their batchers); ``load_error`` then says why loading
    failed, if it did. A reload replaces ``catalog`` with one assignment. ``searcher`` is the
    search core; ``reload_lock`` serialises reloads, and each lifespan gets a fresh one
    (:meth:`begin_lifespan`). ``layout`` says which worker process this is; with several,
    ``broadcast`` carries reloads to the others."""

    settings: Settings
    metrics: ServiceMetrics
    encoder_factory: EncoderFactory
    layout: ProcessLayout = field(default_factory=ProcessLayout)
    broadcast: ReloadBroadcast | None = None
    applied_generation: int = 0
    """The latest reload order (service.lifecycle.reload_broadcast) this worker has applied or
    issued."""
    catalog: Catalog | None = None
    load_error: str | None = None
    draining: bool = False
    searcher: Searcher = field(init=False)
    admission: AdmissionGate = field(init=False)
    """The door of the work routes; its overload limit follows the encoders once loaded."""
    reload_lock: asyncio.Lock = field(init=False)
    replicas: ReplicaSet | None = None
    """This server's place in the replica set of its live collections (made by the
    lifespan)."""
    copies: PrivateCopies | None = None
    """Where the bundle versions this process maps are copied (None: mapped in place); made
    when the lifespan loads (:func:`service.lifecycle.loading.private_copies`)."""

    def __post_init__(self) -> None:
        settings = self.settings
        self.searcher = Searcher(self.metrics, image_limits(settings), settings.faiss_threads)
        if settings.query_cache_entries > 0:
            self.searcher.query_cache = QueryCache(settings.query_cache_entries)
        self.admission = AdmissionGate(
            limit=settings.max_concurrent_requests,
            overload_limit=overload_limit(settings, ()),
            max_waiting=settings.max_waiting_requests,
            max_wait_s=settings.admission_wait_ms / 1000.0,
        )
        self.begin_lifespan()

    def begin_lifespan(self) -> None:
        """A fresh reload lock, and fresh batchers for a catalog already loaded, for a lifespan
        that begins (an app may live through several, as in tests; the previous lifespan closed
        its catalog's batchers). The lifespan then loads the bundles again."""
        if self.catalog is not None:
            self.catalog = with_fresh_batchers(self.catalog, self.settings, self.metrics)
        self.reload_lock = asyncio.Lock()

    def release_unserved_copies(self) -> None:
        """Let go of the private copies of versions the catalog no longer serves (deleted once
        no other worker serves them either). Blocking: call it off the event loop. Requests
        still searching a released version are safe: a deleted file stays mapped."""
        if self.copies is not None and self.catalog is not None:
            self.copies.keep(served_sources(self.catalog, self.settings))

    def start_draining(self) -> None:
        """Called on SIGTERM/SIGINT: readiness answers 503 from now on (and the
        ``crisscross_ready`` gauge reads 0), requests still run."""
        self.draining = True
        self.metrics.ready.set(0)

    def not_ready_error(self) -> NotReadyError:
        """Why there is no catalog to answer from (503 not_ready with Retry-After)."""
        if self.draining:
            reason = "shutting down"
        elif self.load_error is not None:
            reason = f"loading failed: {self.load_error}"
        else:
            reason = "bundles and encoders are still loading"
        return NotReadyError(f"not ready: {reason}", self.settings.not_ready_retry_after_s)


def publish_catalog(state: ServiceState, catalog: Catalog) -> None:
    """Serve ``catalog`` from now on (one reference assignment) and publish what it serves in
    the metrics. Requests that already hold the previous catalog finish on it. The admission
    gate's overload limit follows the devices the encoders run on
    (:func:`service.lifecycle.batch_defaults.overload_limit`)."""
    state.catalog = catalog
    if state.searcher.query_cache is not None:
        state.searcher.query_cache.clear()
    state.admission.set_overload_limit(
        overload_limit(
            state.settings,
            [active for v in catalog.variants for active in v.providers_by_tower.values()],
        )
    )
    state.metrics.record_loaded(
        bundles=sorted({(c.bundle, c.bundle_version, c.variant) for c in catalog.collections}),
        collections=[
            (c.variant, c.name, c.bundle, c.bundle_version, c.collection.count)
            for c in catalog.collections
        ],
        variants=[
            (v.name, tower, v.precision, providers, v.fingerprint)
            for v in catalog.variants
            for tower, providers in v.providers_by_tower.items()
        ],
        batch_sizes=[
            (v.name, tower, batcher.limits.max_batch_size)
            for v in catalog.variants
            for tower, batcher in v.batchers_by_tower.items()
        ],
    )
