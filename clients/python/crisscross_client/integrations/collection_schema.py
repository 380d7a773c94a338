"""A store's live collection, opened: created when missing, else checked against what the
store was opened with, so that a store of other fields or another variant fails when it opens
(naming every difference) rather than at its first write (409 ``field_mismatch``) or, worse,
searching silently in another embedding space.

What is compared:

- **variant**: a store opened with ``variant=`` needs a collection embedded by that variant; a
  store that sends its own vectors (``dim=``, or LangChain's ``embedding=`` without a variant)
  needs a collection of client vectors (no variant), of ``dim`` values where the store states
  it. A store that states neither takes the collection's variant.
- **fields**: the integration's own fields (the stored text, metadata or node) must be there
  with their types; the declared ``fields`` (name → type) must be exactly the collection's
  others. ``fields=None`` takes the collection's (reopening a store needs no repetition).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import cast

from crisscross_client.client import Client
from crisscross_client.errors import NotFoundError
from crisscross_client.models import FieldType, LiveCollectionInfo


class CollectionMismatchError(ValueError):
    """A store opened over a live collection of another variant, dimension or fields."""


@dataclass(frozen=True)
class StoreSchema:
    """What a store was opened with.

    Args:
        variant: the variant that must embed the collection (None: not stated).
        client_vectors: whether the store sends its own vectors, so the collection must have
            no variant (a store of ``variant`` never does).
        dim: the dimension of those vectors, where the store knows it.
        fields: the declared metadata fields, None to take the collection's.
        own_fields: the integration's own fields, which the collection must have.
        optional_own: own fields a collection made by an earlier version may lack.
    """

    variant: str | None
    client_vectors: bool
    dim: int | None
    fields: Mapping[str, FieldType] | None
    own_fields: Mapping[str, FieldType]
    optional_own: Collection[str] = ()

    def all_fields(self) -> dict[str, FieldType]:
        """The fields of a collection made for this store."""
        return {**self.own_fields, **(self.fields or {})}


def _kind(info: LiveCollectionInfo) -> str:
    if info.variant is None:
        return f"holds client vectors of dimension {info.dim}"
    return f"is embedded by variant {info.variant!r}"


def differences(info: LiveCollectionInfo, schema: StoreSchema) -> list[str]:
    """How the live collection ``info`` differs from what ``schema`` needs, one line each."""
    found: list[str] = []
    if schema.variant is not None and info.variant != schema.variant:
        found.append(
            f"the collection {_kind(info)}; the store was opened with variant {schema.variant!r}"
        )
    elif schema.variant is None and schema.client_vectors and info.variant is not None:
        found.append(
            f"the collection {_kind(info)}; the store sends its own vectors (open it with "
            f"variant={info.variant!r} to store that variant's vectors)"
        )
    elif schema.variant is None and not schema.client_vectors and info.variant is None:
        found.append(
            f"the collection {_kind(info)}; the store has nothing to embed texts with "
            "(give it an embedding or dim)"
        )
    if schema.dim is not None and info.dim != schema.dim:
        found.append(f"the collection's dimension is {info.dim}; the store's {schema.dim}")
    for name, kind in sorted(schema.own_fields.items()):
        if name not in info.fields:
            if name not in schema.optional_own:
                found.append(f"the collection lacks the store's own field {name!r} ({kind})")
        elif info.fields[name] != kind:
            found.append(
                f"the store's own field {name!r} is of type {info.fields[name]} in the "
                f"collection, {kind} in the store"
            )
    if schema.fields is not None:
        others = {n: k for n, k in info.fields.items() if n not in schema.own_fields}
        for name in sorted(set(schema.fields) - set(others)):
            found.append(
                f"the store declares field {name!r} ({schema.fields[name]}), the collection "
                "has no such field"
            )
        for name in sorted(set(others) - set(schema.fields)):
            found.append(
                f"the collection has field {name!r} ({others[name]}), the store does not declare it"
            )
        for name in sorted(set(others) & set(schema.fields)):
            if others[name] != schema.fields[name]:
                found.append(
                    f"field {name!r} is of type {others[name]} in the collection, "
                    f"{schema.fields[name]} in the store"
                )
    return found


def check(info: LiveCollectionInfo, schema: StoreSchema) -> None:
    """:class:`CollectionMismatchError` naming every difference, if any (and, for declared
    fields the collection lacks, how to add them)."""
    found = differences(info, schema)
    if not found:
        return
    hint = (
        "open the store as the collection was made, with fields=None to take its fields, or "
        "use another collection"
    )
    new = {name: kind for name, kind in (schema.fields or {}).items() if name not in info.fields}
    if new:
        hint += (
            f"; to add the new fields to the collection (items written before hold no value "
            f"of them): Client.add_fields({info.name!r}, {new!r})"
        )
    raise CollectionMismatchError(
        f"live collection {info.name!r} does not match the store: "
        + "; ".join(found)
        + f" ({hint})"
    )


def declared_fields(info: LiveCollectionInfo, schema: StoreSchema) -> dict[str, FieldType]:
    """The collection's fields besides the integration's own: what ``fields=None`` takes."""
    return {
        name: cast(FieldType, kind)
        for name, kind in info.fields.items()
        if name not in schema.own_fields
    }


def open_collection(
    client: Client,
    name: str,
    schema: StoreSchema,
    dim: Callable[[], int | None],
    *,
    create: bool = True,
) -> LiveCollectionInfo:
    """The live collection ``name``, checked against ``schema``; when it is missing and
    ``create``, made for it (embedded by ``schema.variant``, else of ``dim()`` client vectors,
    asked only then, else the service's default variant). Without ``create`` a missing
    collection is the service's :class:`~crisscross_client.NotFoundError`."""
    try:
        info = client.get_collection(name)
    except NotFoundError:
        if not create:
            raise
        size = None if schema.variant is not None else dim()
        if size is not None:
            return client.create_collection(name, dim=size, fields=schema.all_fields())
        return client.create_collection(name, variant=schema.variant, fields=schema.all_fields())
    check(info, schema)
    return info
