"""Creating a live collection from plain values: empty — its texts and images embedded by a
served variant, or of client vectors of one dimension — or started from a snapshot of a live
collection (a restore) or from a served bundle collection, whose items become its base, its
files linked, nothing embedded again. What it starts from is verified (every file against its
manifest, the variant's build against the one served) before the registry creates it
(:meth:`service.engine.collection.live_collections.LiveCollections.create`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from formats.field_types import FieldType
from service.engine.collection.catalog import Catalog
from service.engine.collection.live_collections import LiveCollections, LiveEntry
from service.exceptions import (
    BundleRejectedError,
    InvalidQueryError,
    VariantMismatchError,
)
from service.settings import Settings
from storage.live.base import ITEMS, BaseError, SnapshotInfo, read_snapshot
from storage.live.spec import CollectionSpec, CollectionSpecError, now_text


@dataclass(frozen=True)
class SnapshotSource:
    """A snapshot to start from: the live collection it was taken of, and its version."""

    collection: str
    version: str


@dataclass(frozen=True)
class NewCollection:
    """What a new live collection is asked to be: its name and either ``variant`` (a served
    variant embeds its items' texts and images) or ``dim`` (the client sends vectors), with its
    typed ``fields``; or, instead of those three, ``from_snapshot`` or ``from_bundle`` (a served
    collection's qualified name, ``<bundle>:<collection>``) to take them, and the items, from."""

    name: str
    variant: str | None = None
    dim: int | None = None
    fields: Mapping[str, FieldType] = field(default_factory=dict)
    index: str = "Flat"
    """The faiss factory compaction builds over the base."""
    from_snapshot: SnapshotSource | None = None
    from_bundle: str | None = None
    acks: str | None = None
    """Its acknowledgement policy (leader, majority, all; None: the server's default)."""

    def check(self) -> None:
        """:class:`InvalidQueryError` unless the values make one collection: at most one of
        ``from_snapshot`` and ``from_bundle``; with one, no ``variant``, ``dim`` or ``fields``;
        without, exactly one of ``variant`` and ``dim``."""
        if self.from_snapshot is not None and self.from_bundle is not None:
            raise InvalidQueryError("give at most one of 'from_snapshot' and 'from_bundle'")
        if self.from_snapshot is not None or self.from_bundle is not None:
            if self.variant is not None or self.dim is not None or self.fields:
                raise InvalidQueryError(
                    "a collection from a snapshot or a bundle takes its variant, dimension and "
                    "fields from it: leave 'variant', 'dim' and 'fields' out"
                )
        elif (self.variant is None) == (self.dim is None):
            raise InvalidQueryError("give exactly one of 'variant' and 'dim'")


def served_names(catalog: Catalog) -> set[str]:
    """The names a live collection may not take: every served collection's, bare and
    qualified."""
    return {c.name for c in catalog.collections} | {c.qualified_name for c in catalog.collections}


def _base_of(
    new: NewCollection, live: LiveCollections, catalog: Catalog, settings: Settings
) -> tuple[Path | None, str]:
    """The bundle version folder ``new`` starts from (None: it starts empty) and the
    collection in it that holds the items."""
    if new.from_snapshot is not None:
        source = new.from_snapshot
        return live.snapshot_path(source.collection, source.version), ITEMS
    if new.from_bundle is not None:
        served = catalog.collection_named(new.from_bundle, param="from_bundle")
        return settings.bundles_root / served.bundle / served.bundle_version, served.name
    return None, ITEMS


def _read_base(base_from: Path, base_collection: str) -> SnapshotInfo:
    """What the base holds, its files verified; :class:`BundleRejectedError` when it is no
    base a collection can start from."""
    try:
        return read_snapshot(base_from, base_collection)
    except BaseError as exc:
        raise BundleRejectedError(str(exc)) from None


async def create_live_collection(
    new: NewCollection, live: LiveCollections, catalog: Catalog, settings: Settings
) -> LiveEntry:
    """Create and open the live collection ``new`` describes, among those ``live`` keeps;
    ``catalog`` serves its variant and the bundles it may start from (under
    ``settings.bundles_root``), and its names are taken.

    Raises :class:`NotFoundError` for an unknown snapshot, bundle collection or variant,
    :class:`BundleRejectedError` for a snapshot or bundle whose files do not verify,
    :class:`VariantMismatchError` when they were embedded by another build of the variant than
    the one served, :class:`InvalidQueryError` for more fields than ``max_collection_fields``
    or values that make no collection, and what :meth:`LiveCollections.create` raises."""
    new.check()
    base_from, base_collection = _base_of(new, live, catalog, settings)
    dim, variant_name, fields = new.dim, new.variant, dict(new.fields)
    fingerprint = None
    if base_from is not None:
        found = _read_base(base_from, base_collection)
        dim, variant_name, fields = found.dim, found.variant, dict(found.fields)
        fingerprint = found.variant_fingerprint
    if variant_name is not None:
        variant = catalog.resolve_variant(variant_name)
        if fingerprint is not None and fingerprint != variant.fingerprint:
            raise VariantMismatchError(
                f"the snapshot or bundle was embedded by another build of variant "
                f"{variant_name!r} than the one served"
            )
        dim, fingerprint = variant.dim, variant.fingerprint
    assert dim is not None  # new.check(): a variant, a dimension or a base gives it
    if len(new.fields) > settings.max_collection_fields:
        raise InvalidQueryError(
            f"fields: {len(new.fields)} fields, more than "
            f"max_collection_fields={settings.max_collection_fields}",
            param="fields",
        )
    try:
        spec = CollectionSpec(
            name=new.name,
            dim=dim,
            fields=fields,
            variant=variant_name,
            variant_fingerprint=fingerprint,
            created=now_text(),
            index=new.index,
            acks=new.acks,
            uid=uuid.uuid4().hex,
        )
    except CollectionSpecError as exc:
        raise InvalidQueryError(str(exc)) from None
    return await live.create(spec, served_names(catalog), base_from, base_collection)
