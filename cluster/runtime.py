"""Joining a Ray cluster, or starting a local one sized for the machine it runs on.

``address=None`` starts a local cluster in this process with explicit resources: on a small
machine Ray's defaults (every core, a third of memory for the object store) starve the
processes around it, and a job whose actors hold every CPU deadlocks its own read tasks. Any
other address (``"auto"``, ``"ray://head:10001"``) joins an existing cluster as it is.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import ray

from index_builder.build_options import positive_int

logger = logging.getLogger(__name__)

MIN_OBJECT_STORE_BYTES = 78_643_200
"""Ray refuses a smaller object store (75 MiB)."""


class ClusterError(RuntimeError):
    """A Ray cluster cannot be started or joined with the options given."""


@dataclass(frozen=True)
class RayOptions:
    """Where to run: ``address`` of an existing cluster, or None for a local one with
    ``num_cpus`` logical CPUs and an object store of ``object_store_bytes``."""

    address: str | None = None
    num_cpus: int = 2
    object_store_bytes: int = 256 << 20

    def __post_init__(self) -> None:
        if self.num_cpus < 1:
            raise ClusterError(f"num_cpus must be at least 1, got {self.num_cpus}")
        if self.object_store_bytes < MIN_OBJECT_STORE_BYTES:
            raise ClusterError(
                f"object_store_bytes must be at least {MIN_OBJECT_STORE_BYTES} (75 MiB), "
                f"got {self.object_store_bytes}"
            )


def add_ray_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Declare where to run: ``--ray-address``, or a local cluster of ``--num-cpus`` CPUs and
    an ``--object-store-mb`` object store; :func:`ray_options_from` reads them."""
    parser.add_argument(
        "--ray-address",
        default=None,
        help="an existing cluster ('auto', 'ray://head:10001'); default: start a local one",
    )
    parser.add_argument(
        "--num-cpus", type=positive_int, default=4, help="local cluster: logical CPUs (default 4)"
    )
    parser.add_argument(
        "--object-store-mb",
        type=positive_int,
        default=256,
        help="local cluster: object store size in MiB (default 256, at least 75)",
    )


def ray_options_from(args: argparse.Namespace) -> RayOptions:
    """The options :func:`add_ray_arguments` declared, as :class:`RayOptions` (ClusterError
    for an object store below Ray's minimum)."""
    return RayOptions(
        address=args.ray_address,
        num_cpus=args.num_cpus,
        object_store_bytes=args.object_store_mb << 20,
    )


@contextmanager
def ray_cluster(options: RayOptions) -> Iterator[None]:
    """Connect to (or start) the cluster for the ``with`` block; a cluster this call started
    is shut down at its end, one it joined is left running. Reuses a connection already made
    in this process (a test session's cluster) and leaves it open."""
    if ray.is_initialized():
        yield
        return
    try:
        if options.address is None:
            ray.init(
                num_cpus=options.num_cpus,
                object_store_memory=options.object_store_bytes,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        else:
            ray.init(address=options.address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = options.address or "local"
        raise ClusterError(f"cannot start or join Ray ({where}): {exc}") from exc
    try:
        yield
    finally:
        ray.shutdown()
