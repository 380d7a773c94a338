"""``python -m cluster split`` and ``python -m cluster serve-shards``.

``split`` cuts one collection of a bundle into shard bundles and writes their map
(:mod:`cluster.shard_split`). ``serve-shards`` serves a map on Ray Serve — one deployment per
shard, ``--replicas`` replicas each, and the service's own app in front on ``--host:--port`` —
until SIGINT or SIGTERM, then shuts Serve down (docs/sharded-serving.md). The front door takes
the service's settings (``CRISSCROSS_*``: limits, keys, timeouts) and the shards' policy and
placement (``CRISSCROSS_SHARDS_*``, :class:`cluster.shard_settings.ShardSettings`).
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from cluster.runtime import ClusterError, add_ray_arguments, ray_cluster, ray_options_from
from cluster.shard_settings import ShardSettings
from cluster.shard_split import ShardMap, ShardMapError, read_shard_map, split_bundle

if TYPE_CHECKING:
    from service.settings import Settings

logger = logging.getLogger(__name__)

DEFAULT_APP_NAME = "crisscross-shards"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``split`` and ``serve-shards`` subcommands."""
    split = commands.add_parser("split", help="cut a bundle's collection into shard bundles")
    split.add_argument(
        "--bundle",
        type=Path,
        required=True,
        help="a bundle version folder, or a bundle folder (its CURRENT is used)",
    )
    split.add_argument("--collection", default="captions", help="collection to split")
    split.add_argument("--shards", type=int, required=True, help="number of shards")
    split.add_argument(
        "--out-root",
        type=Path,
        required=True,
        help="bundles root the shard bundles are written under",
    )
    split.add_argument("--map", type=Path, required=True, help="where to write shards.json")
    split.set_defaults(handler=_split)

    serve_shards = commands.add_parser(
        "serve-shards", help="serve shard bundles on Ray Serve behind the service's app"
    )
    serve_shards.add_argument("--shards", type=Path, required=True, help="the shards.json map")
    serve_shards.add_argument(
        "--variant",
        type=Path,
        default=None,
        help="the variant folder (named as the variant); its towers answer text and image "
        "queries (without it: vectors and stored items only)",
    )
    add_ray_arguments(serve_shards)
    serve_shards.add_argument(
        "--replicas",
        type=int,
        default=None,
        help="replicas per shard (CRISSCROSS_SHARDS_REPLICAS_PER_SHARD)",
    )
    serve_shards.add_argument(
        "--shard-cpus",
        type=float,
        default=None,
        help="logical CPUs per shard replica (CRISSCROSS_SHARDS_SHARD_REPLICA_CPUS)",
    )
    serve_shards.add_argument(
        "--front-cpus",
        type=float,
        default=None,
        help="logical CPUs per front-door replica (CRISSCROSS_SHARDS_FRONT_CPUS)",
    )
    serve_shards.add_argument("--host", default="127.0.0.1", help="the HTTP proxy's address")
    serve_shards.add_argument("--port", type=int, default=8100, help="the HTTP proxy's port")
    serve_shards.add_argument(
        "--missing-shards",
        choices=("fail", "partial"),
        default=None,
        help="policy when a shard is down (CRISSCROSS_SHARDS_MISSING_SHARDS)",
    )
    serve_shards.add_argument(
        "--shard-deadline-ms",
        type=int,
        default=None,
        help="per-shard deadline (CRISSCROSS_SHARDS_SHARD_DEADLINE_MS)",
    )
    serve_shards.add_argument("--app-name", default=DEFAULT_APP_NAME, help="Serve application")
    serve_shards.set_defaults(handler=_serve_shards)


def _split(args: argparse.Namespace) -> int:
    try:
        shard_map = split_bundle(args.bundle, args.collection, args.shards, args.out_root, args.map)
    except ShardMapError as exc:
        logger.error("%s", exc)
        return 2
    for shard in shard_map.shards:
        print(
            f"{shard.name}: rows {shard.row_offset}..{shard.row_offset + shard.count - 1} "
            f"→ {shard.bundle}/{shard.version}"
        )
    print(f"map: {args.map}")
    return 0


def settings_from(args: argparse.Namespace) -> ShardSettings:
    """The environment's shard settings with the flags given on top (ValidationError if
    refused)."""
    overrides: dict[str, Any] = {}
    if args.replicas is not None:
        overrides["replicas_per_shard"] = args.replicas
    if args.missing_shards is not None:
        overrides["missing_shards"] = args.missing_shards
    if args.shard_cpus is not None:
        overrides["shard_replica_cpus"] = args.shard_cpus
    if args.front_cpus is not None:
        overrides["front_cpus"] = args.front_cpus
    if args.shard_deadline_ms is not None:
        overrides["shard_deadline_ms"] = args.shard_deadline_ms
    base = ShardSettings()
    return ShardSettings.model_validate(base.model_dump() | overrides)


def service_settings_from(args: argparse.Namespace, shard_map: ShardMap) -> Settings:
    """The front door's service settings: the environment's, on the proxy's address, with the
    variant's folder's parent as ``variants_root`` when ``--variant`` is given
    (ValidationError if refused; ShardMapError when the folder is not the map's variant)."""
    from service.settings import Settings

    # A live collection's log has one owner; front-door replicas are several: none owns logs.
    overrides: dict[str, Any] = {"host": args.host, "port": args.port, "collections_dir": None}
    if args.variant is not None:
        if args.variant.name != shard_map.variant_name:
            raise ShardMapError(
                f"--variant {args.variant} is not the folder of variant "
                f"{shard_map.variant_name!r} that embedded the shards (the folder is named "
                "after its variant)"
            )
        overrides["variants_root"] = args.variant.parent
    return Settings(**overrides)


def _serve_shards(args: argparse.Namespace) -> int:
    import ray  # Ray and Serve are imported only by the command that needs them

    from cluster.shard_deployment import build_sharded_app

    try:
        settings = settings_from(args)
        shard_map = read_shard_map(args.shards)
        service_settings = service_settings_from(args, shard_map)
        app = build_sharded_app(
            service_settings,
            settings,
            args.shards,
            shard_map,
            embeds_queries=args.variant is not None,
        )
    except (ValidationError, ShardMapError, ValueError) as exc:
        logger.error("%s", exc)
        return 2
    try:
        with ray_cluster(ray_options_from(args)):
            needed = required_cpus(settings, len(shard_map.shards))
            have = float(ray.cluster_resources().get("CPU", 0.0))  # type: ignore[no-untyped-call]
            if needed > have:
                logger.error(
                    "the deployment needs %.2f logical CPUs (%d shards x %d replicas x %.2f + "
                    "%d front-door replicas x %.2f), the cluster has %.2f: lower --replicas, "
                    "--shard-cpus or --front-cpus, or raise --num-cpus",
                    needed,
                    len(shard_map.shards),
                    settings.replicas_per_shard,
                    settings.shard_replica_cpus,
                    settings.front_replicas,
                    settings.front_cpus,
                    have,
                )
                return 2
            return _run_until_signal(app, args, shard_map, settings)
    except ClusterError as exc:
        logger.error("%s", exc)
        return 2


def required_cpus(settings: ShardSettings, shards: int) -> float:
    """Logical CPUs the replicas of ``shards`` shards and the front door reserve together."""
    return (
        shards * settings.replicas_per_shard * settings.shard_replica_cpus
        + settings.front_replicas * settings.front_cpus
    )


def _run_until_signal(
    app: Any,
    args: argparse.Namespace,
    shard_map: ShardMap,
    settings: ShardSettings,
) -> int:
    """Deploy ``app`` and serve until SIGINT or SIGTERM; Serve is shut down either way. The
    handlers are installed after Ray started (Ray installs its own); a signal that arrives
    while the deployment is still starting interrupts it."""
    from ray import serve

    stop = threading.Event()
    serving = False

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %d: shutting down", signum)
        stop.set()
        if not serving:
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        serve.start(
            http_options={
                "host": args.host,
                "port": args.port,
                "request_timeout_s": settings.proxy_request_timeout_s,
                "keep_alive_timeout_s": settings.keep_alive_timeout_s,
            }
        )
        try:
            serve.run(app, name=args.app_name, route_prefix="/")
            serving = True
            logger.info(
                "serving %d shards of %s:%s on http://%s:%d",
                len(shard_map.shards),
                shard_map.source_bundle,
                shard_map.collection,
                args.host,
                args.port,
            )
            stop.wait()
        finally:
            serve.shutdown()  # type: ignore[no-untyped-call]
    except KeyboardInterrupt:
        return 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
