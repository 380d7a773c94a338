"""What the service says it serves: collections, variants and their towers.

Read from ``GET /v1/collections`` and ``GET /v1/variants`` before a run's measured phases; a
service may serve a ``captions`` collection per variant, so sizes, bundle name and version are
taken from the entries of the variant the run's queries reach.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import crisscross_client
from benchmarks.drivers.http_client import CrisscrossClient, JsonObject
from benchmarks.runs.setup_error import BenchmarkSetupError

logger = logging.getLogger(__name__)


async def optional_variants(client: CrisscrossClient) -> list[JsonObject] | None:
    """``GET /v1/variants``'s list, or ``None`` when the service refuses the route."""
    try:
        return await client.variants()
    except crisscross_client.CrisscrossError as error:
        logger.info("GET /v1/variants unavailable: %s", error)
        return None


async def loaded_variants(client: CrisscrossClient, wanted: Sequence[str]) -> dict[str, JsonObject]:
    """The ``GET /v1/variants`` entry of every wanted variant, in ``wanted`` order.

    Raises:
        BenchmarkSetupError: a wanted variant is not loaded.
    """
    loaded = {str(entry.get("name")): entry for entry in await client.variants()}
    missing = [name for name in wanted if name not in loaded]
    if missing:
        raise BenchmarkSetupError(
            f"variants {missing} are not loaded by the service; loaded: {sorted(loaded)}"
        )
    return {name: loaded[name] for name in wanted}


def variant_towers(
    variants: Sequence[JsonObject] | None, wanted: str | None
) -> frozenset[str] | None:
    """The towers of the variant a run uses, from ``GET /v1/variants``.

    Args:
        variants: the route's ``variants`` list, or ``None`` when it was unavailable.
        wanted: the variant asked for; else the one marked ``default``, else the only one.

    Returns:
        e.g. ``frozenset({"text", "image"})``; ``None`` when unknown (no route, no such variant,
        or no ``towers`` field).
    """
    chosen = _chosen_variant(variants, wanted)
    towers = chosen.get("towers") if chosen is not None else None
    if not isinstance(towers, list):
        return None
    return frozenset(str(tower) for tower in towers)


def _chosen_variant(variants: Sequence[JsonObject] | None, wanted: str | None) -> JsonObject | None:
    if not variants:
        return None
    if wanted is not None:
        return next((entry for entry in variants if entry.get("name") == wanted), None)
    chosen = next((entry for entry in variants if entry.get("default") is True), None)
    if chosen is None and len(variants) == 1:
        chosen = variants[0]
    return chosen


def variant_collections(
    collections: Sequence[JsonObject], variants: Sequence[JsonObject] | None, wanted: str | None
) -> list[JsonObject]:
    """The ``GET /v1/collections`` entries a run searches: those of the run's variant.

    Args:
        collections: the route's ``collections`` list.
        variants: ``GET /v1/variants``'s list, or ``None`` when it was unavailable.
        wanted: the variant asked for; else the one marked ``default``, else the only one.

    Returns:
        The entries naming that variant; all entries when the variant is unknown or no entry
        names it (an older service without a ``variant`` field).
    """
    chosen = _chosen_variant(variants, wanted)
    name = chosen.get("name") if chosen is not None else wanted
    mine = [entry for entry in collections if name is not None and entry.get("variant") == name]
    return mine or list(collections)
