"""Sharded serving on Ray Serve: one deployment per shard, the service's own app in front.

- ``shard-<i>`` (:class:`ShardReplica`, ``replicas_per_shard`` replicas each): loads its shard
  bundle (hash-checked against the map, then verified) and answers the front door's view calls
  with :class:`cluster.shard_searcher.ShardSearcher`. Encoders stay out of shards.
- ``front`` (:class:`FrontDoor`): the service's app (:func:`service.http.app.create_app`, the
  same routes, errors, keys, limits, metrics and OpenAPI document as a single process), built on
  the replica by ``__serve_build_asgi_app__``, with the sharded collection
  (:class:`cluster.served_shards.ServedShards`) reaching the shards through
  :class:`ServeShardCalls` (their deployment handles). With ``embeds_queries`` it loads the
  variant's encoders from the service settings' ``variants_root``; without, the collection
  answers vectors and its own items (a text is 409 ``tower_missing``).

:func:`build_sharded_app` binds them into one Serve application; :func:`build_front_app` binds a
front door alone onto shard deployments already running in another application (a second front
door with another policy, say).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray import serve
from ray.serve.handle import DeploymentHandle

from cluster.shard_searcher import ShardSearcher
from cluster.shard_settings import ShardSettings
from cluster.shard_split import ShardEntry, ShardMap, locate_shards

if TYPE_CHECKING:
    from fastapi import FastAPI

    from service.settings import Settings

logger = logging.getLogger(__name__)

FRONT_DEPLOYMENT = "front"


class _ShardReplica:
    """One replica of one shard."""

    def __init__(self, entry: ShardEntry, version_dir: str, collection: str) -> None:
        self._searcher = ShardSearcher(entry, Path(version_dir), collection)
        logger.info("shard %s ready: %d rows from %s", entry.name, entry.count, version_dir)

    def answer(self, method: str, args: tuple[object, ...]) -> object:
        """The shard view's answer (:meth:`ShardSearcher.answer`)."""
        return self._searcher.answer(method, args)

    def health(self) -> Mapping[str, object]:
        """The shard's health report."""
        return self._searcher.health()


class ServeShardCalls:
    """:class:`cluster.served_shards.ShardCalls` over Serve deployment handles, by shard name."""

    def __init__(self, handles: Mapping[str, DeploymentHandle[Any]]) -> None:
        self._handles = dict(handles)

    def call(self, shard: str, method: str, args: tuple[object, ...], timeout_s: float) -> Any:
        """Ask one replica of ``shard`` (Serve picks it); a call past ``timeout_s`` is
        cancelled and raises TimeoutError. Blocking: never on an event loop."""
        response = self._handles[shard].answer.remote(method, args)
        try:
            return response.result(timeout_s=timeout_s)
        except TimeoutError:
            response.cancel()  # type: ignore[no-untyped-call]
            raise

    async def health(self, shard: str) -> object:
        """Ask one replica of ``shard`` for its health report."""
        return await self._handles[shard].health.remote()


class _FrontDoor:
    """The service's app, with the sharded collection of ``shard_map`` over its shards."""

    def __init__(
        self,
        service_settings: Settings,
        shard_settings: ShardSettings,
        shard_map: ShardMap,
        handles: Mapping[str, DeploymentHandle[Any]],
        embeds_queries: bool,
    ) -> None:
        # Imported here, not at the top: shard replicas import this module too, and need
        # neither onnxruntime nor the HTTP layer (seconds of start-up each on a small machine).
        from cluster.served_shards import ServedShards
        from service.engine.collection.sharded_collections import ShardedCollections
        from service.http.app import create_app

        self._shards = ServedShards(
            shard_map, ServeShardCalls(handles), shard_settings, embeds_queries=embeds_queries
        )
        self._app = create_app(service_settings, sharded=ShardedCollections([self._shards]))

    def __serve_build_asgi_app__(self) -> FastAPI:
        return self._app


ShardReplica = serve.deployment()(_ShardReplica)
"""The Serve deployment of a shard (named per shard with ``.options(name=...)``)."""
FrontDoor = serve.deployment(name=FRONT_DEPLOYMENT)(serve.ingress()(_FrontDoor))
"""The Serve deployment of the front door, the service's app built on each replica."""


def _front(
    service_settings: Settings,
    shard_settings: ShardSettings,
    shard_map: ShardMap,
    handles: Mapping[str, Any],
    embeds_queries: bool,
) -> serve.Application:
    return FrontDoor.options(
        num_replicas=shard_settings.front_replicas,
        max_ongoing_requests=shard_settings.max_ongoing_requests,
        ray_actor_options={"num_cpus": shard_settings.front_cpus},
    ).bind(service_settings, shard_settings, shard_map, handles, embeds_queries)


def build_sharded_app(
    service_settings: Settings,
    shard_settings: ShardSettings,
    map_path: Path,
    shard_map: ShardMap,
    *,
    embeds_queries: bool,
) -> serve.Application:
    """The Serve application: every shard's deployment and the front door bound to them
    (``embeds_queries``: load the variant from the service settings' ``variants_root``)."""
    shard_settings.check_shard_count(len(shard_map.shards))
    shards = {
        located.entry.name: ShardReplica.options(
            name=located.entry.name,
            num_replicas=shard_settings.replicas_per_shard,
            max_ongoing_requests=shard_settings.max_ongoing_requests,
            ray_actor_options={"num_cpus": shard_settings.shard_replica_cpus},
        ).bind(located.entry, str(located.version_dir), shard_map.collection)
        for located in locate_shards(map_path, shard_map)
    }
    return _front(service_settings, shard_settings, shard_map, shards, embeds_queries)


def build_front_app(
    service_settings: Settings,
    shard_settings: ShardSettings,
    shard_map: ShardMap,
    shards_app: str,
    *,
    embeds_queries: bool,
) -> serve.Application:
    """A front door alone, over the shard deployments of the running application
    ``shards_app``."""
    shard_settings.check_shard_count(len(shard_map.shards))
    handles = {
        entry.name: serve.get_deployment_handle(entry.name, app_name=shards_app)
        for entry in shard_map.shards
    }
    return _front(service_settings, shard_settings, shard_map, handles, embeds_queries)
