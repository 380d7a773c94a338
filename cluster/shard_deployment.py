"""Sharded serving on Ray Serve: one deployment per shard, an HTTP router in front.

- ``shard-<i>`` (:class:`ShardReplica`, ``replicas_per_shard`` replicas each): loads its shard
  bundle (hash-checked against the map, then verified) and answers ``search`` / ``health``
  with :class:`cluster.shard_searcher.ShardSearcher`. Encoders stay out of shards.
- ``router`` (:class:`RouterIngress`): the FastAPI app of :mod:`cluster.router_app`, built on
  the replica by ``__serve_build_asgi_app__``, reaching the shards through
  :class:`ServeShardClient` (their deployment handles). It holds the variant's text tower when
  a variant folder is given.

:func:`build_sharded_app` binds them into one Serve application;
:func:`build_router_app` binds a router alone onto shard deployments already running in
another application (a second router with another policy, say).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from ray import serve
from ray.serve.handle import DeploymentHandle

from cluster.router_settings import RouterSettings
from cluster.shard_router import ShardRouter, ShardSpec
from cluster.shard_searcher import ShardSearcher
from cluster.shard_split import ShardEntry, ShardMap, locate_shards

if TYPE_CHECKING:
    from fastapi import FastAPI

logger = logging.getLogger(__name__)

ROUTER_DEPLOYMENT = "router"


class _ShardReplica:
    """One replica of one shard."""

    def __init__(self, entry: ShardEntry, version_dir: str, collection: str) -> None:
        self._searcher = ShardSearcher(entry, Path(version_dir), collection)
        logger.info("shard %s ready: %d rows from %s", entry.name, entry.count, version_dir)

    def search(self, queries: np.ndarray, depth: int, include_metadata: bool) -> dict[str, Any]:
        """The shard's top ``depth`` of each query (:meth:`ShardSearcher.search`)."""
        return self._searcher.search(queries, depth, include_metadata)

    def health(self) -> Mapping[str, object]:
        """The shard's health report."""
        return self._searcher.health()


class ServeShardClient:
    """:class:`cluster.shard_router.ShardClient` over Serve deployment handles, by shard name."""

    def __init__(self, handles: Mapping[str, DeploymentHandle[Any]]) -> None:
        self._handles = dict(handles)

    async def search(
        self, shard: str, queries: np.ndarray, depth: int, include_metadata: bool
    ) -> object:
        """Ask one replica of ``shard`` (Serve picks it) for its answer."""
        response = self._handles[shard].search.remote(queries, depth, include_metadata)
        return await response

    async def health(self, shard: str) -> object:
        """Ask one replica of ``shard`` for its health report."""
        return await self._handles[shard].health.remote()


class _RouterIngress:
    """The HTTP router over the shards' handles."""

    def __init__(
        self,
        settings: RouterSettings,
        shard_map: ShardMap,
        handles: Mapping[str, DeploymentHandle[Any]],
        variant_dir: str | None = None,
    ) -> None:
        # Imported here, not at the top: shard replicas import this module too, and need
        # neither onnxruntime nor the HTTP layer (seconds of start-up each on a small machine).
        from encoders.text_encoder import OnnxTextEncoder

        self._settings = settings
        self._shard_map = shard_map
        self._encoder = None if variant_dir is None else OnnxTextEncoder(Path(variant_dir))
        if self._encoder is not None and self._encoder.fingerprint != shard_map.variant_fingerprint:
            raise ValueError(
                f"variant {variant_dir} has fingerprint {self._encoder.fingerprint}, the shards "
                f"were embedded by {shard_map.variant_fingerprint} ({shard_map.variant_name})"
            )
        self._router = ShardRouter(
            [ShardSpec(e.name, e.row_offset, e.count) for e in shard_map.shards],
            ServeShardClient(handles),
            deadline_s=settings.shard_deadline_s,
            policy=settings.missing_shards,
            min_shards_answered=settings.min_shards_answered,
        )

    def __serve_build_asgi_app__(self) -> FastAPI:
        from cluster.router_app import create_router_app

        return create_router_app(self._settings, self._shard_map, self._router, self._encoder)


ShardReplica = serve.deployment()(_ShardReplica)
"""The Serve deployment of a shard (named per shard with ``.options(name=...)``)."""
RouterIngress = serve.deployment(name=ROUTER_DEPLOYMENT)(serve.ingress()(_RouterIngress))
"""The Serve deployment of the router, its FastAPI app built on each replica."""


def _router(
    settings: RouterSettings,
    shard_map: ShardMap,
    handles: Mapping[str, Any],
    variant_dir: Path | None,
) -> serve.Application:
    return RouterIngress.options(
        num_replicas=settings.router_replicas,
        max_ongoing_requests=settings.max_ongoing_requests,
        ray_actor_options={"num_cpus": settings.router_cpus},
    ).bind(settings, shard_map, handles, None if variant_dir is None else str(variant_dir))


def build_sharded_app(
    settings: RouterSettings,
    map_path: Path,
    shard_map: ShardMap,
    variant_dir: Path | None = None,
) -> serve.Application:
    """The Serve application: every shard's deployment and the router bound to them."""
    settings.check_shard_count(len(shard_map.shards))
    shards = {
        located.entry.name: ShardReplica.options(
            name=located.entry.name,
            num_replicas=settings.replicas_per_shard,
            max_ongoing_requests=settings.max_ongoing_requests,
            ray_actor_options={"num_cpus": settings.shard_replica_cpus},
        ).bind(located.entry, str(located.version_dir), shard_map.collection)
        for located in locate_shards(map_path, shard_map)
    }
    return _router(settings, shard_map, shards, variant_dir)


def build_router_app(
    settings: RouterSettings,
    shard_map: ShardMap,
    shards_app: str,
    variant_dir: Path | None = None,
) -> serve.Application:
    """A router alone, over the shard deployments of the running application ``shards_app``."""
    settings.check_shard_count(len(shard_map.shards))
    handles = {
        entry.name: serve.get_deployment_handle(entry.name, app_name=shards_app)
        for entry in shard_map.shards
    }
    return _router(settings, shard_map, handles, variant_dir)
