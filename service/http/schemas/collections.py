"""``/v1/collections/...``: create and drop live collections, and write, read and patch their
items."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator
from pydantic.json_schema import SkipJsonSchema

from formats.field_types import FIELD_NAME_PATTERN, FieldType, field_name_problem
from service.engine.collection.live_collections import LiveEntry
from service.engine.collection.name_patterns import LIVE_COLLECTION_NAME
from service.engine.query.filter_grammar import Filter
from service.http.schemas.wire import (
    Base64Image,
    DimensionInteger,
    FiniteFloat,
    QueryText,
    StrictRequest,
)
from service.settings import Acks

COLLECTION_NAME_PATTERN = LIVE_COLLECTION_NAME.pattern
FieldName = Annotated[str, Field(pattern=FIELD_NAME_PATTERN.pattern)]
"""A metadata field's name (``id`` is refused by the model: every item has an id of its own)."""
ItemVector = Annotated[
    list[FiniteFloat],
    Field(min_length=1, json_schema_extra={"contains": {"not": {"const": 0}}}),
]
"""An item's own vector: finite numbers, not all zero."""
PackedVector = Annotated[
    str,
    Field(
        min_length=4,
        pattern=r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
    ),
]
"""An item's own vector as base64 of little-endian float32."""
_EXAMPLE_FIELDS: dict[str, JsonValue] = {"image_id": "integer", "filename": "string"}


IndexFactory = Annotated[str, Field(pattern=r"^(Flat|IVF[1-9][0-9]{0,4},Flat)$")]
"""The faiss factory of a live collection's base index."""


BundleCollectionName = Annotated[
    str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}:[a-z][a-z0-9_]{0,63}$")
]
"""A served bundle collection's qualified name, ``<bundle>:<collection>``."""


class SnapshotRef(StrictRequest):
    """A snapshot to start a collection from: the live collection it was taken of, and its
    version (``POST /v1/collections/{name}/snapshots`` answers it)."""

    collection: str = Field(pattern=COLLECTION_NAME_PATTERN)
    version: str = Field(pattern=r"^[0-9]{8}T[0-9]{12}Z$")


class CreateCollectionRequest(StrictRequest):
    """``POST /v1/collections``: a new, empty live collection. Give ``variant`` (a served
    variant embeds the items' texts and images) or ``dim`` (the client sends vectors)."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [{"required": ["variant"]}, {"required": ["dim"]}],
            "examples": [
                {"name": "notes", "variant": "minilm-l6-v2", "fields": _EXAMPLE_FIELDS},
                {"name": "vectors", "dim": 384, "fields": {"filename": "string"}},
            ],
        }
    )

    name: str = Field(pattern=COLLECTION_NAME_PATTERN, description="The collection's name.")
    variant: str | SkipJsonSchema[None] = Field(
        default=None, description="The served variant that embeds texts and images."
    )
    dim: DimensionInteger | SkipJsonSchema[None] = Field(
        default=None, description="The dimension of the client's vectors."
    )
    index: IndexFactory = Field(
        default="Flat",
        description="The faiss index compaction builds over the base: 'Flat' (exact) or "
        "'IVF<lists>,Flat' (approximate, its nprobe tuned to recall@10 >= 0.95 at each "
        "compaction; a base of fewer than 39 rows per list stays Flat).",
    )
    from_snapshot: SnapshotRef | SkipJsonSchema[None] = Field(
        default=None,
        description="Start from a snapshot of a live collection (its items, fields, "
        "dimension and variant): give 'fields' empty and neither 'variant' nor 'dim'.",
    )
    fields: dict[FieldName, FieldType] = Field(
        default_factory=dict,
        description="Typed metadata fields (filterable): name (1-64 lowercase letters, digits "
        "and '_', not starting with a digit, not 'id') → string, integer, float, boolean, "
        "timestamp or list[string]. An item's metadata may hold these only.",
        json_schema_extra={
            "propertyNames": {"pattern": FIELD_NAME_PATTERN.pattern, "not": {"const": "id"}}
        },
    )

    from_bundle: BundleCollectionName | SkipJsonSchema[None] = Field(
        default=None,
        description="Start from a served bundle collection ('<bundle>:<collection>', as "
        "index_builder wrote it): its items, fields, dimension and variant, its files linked, "
        "not re-embedded; the bundle itself stays as it is. Give 'fields' empty and neither "
        "'variant' nor 'dim'.",
    )
    acks: Acks | SkipJsonSchema[None] = Field(
        default=None,
        description="How many replicas hold each write on disk before it is answered: "
        "'leader', 'majority' (of the replica set) or 'all'; a write may ask for another "
        "(?acks=). Default: the server's default_acks.",
    )

    @model_validator(mode="after")
    def _variant_or_dim(self) -> CreateCollectionRequest:
        if self.from_snapshot is not None and self.from_bundle is not None:
            raise ValueError("give at most one of 'from_snapshot' and 'from_bundle'")
        if self.from_snapshot is not None or self.from_bundle is not None:
            if self.variant is not None or self.dim is not None or self.fields:
                raise ValueError(
                    "a collection from a snapshot or a bundle takes its variant, dimension and "
                    "fields from it: leave 'variant', 'dim' and 'fields' out"
                )
        elif (self.variant is None) == (self.dim is None):
            raise ValueError("give exactly one of 'variant' and 'dim'")
        for name in self.fields:
            if (problem := field_name_problem(name)) is not None:
                raise ValueError(problem)
        return self


class ReplicaPosition(BaseModel):
    """One replica of a live collection and how far it has applied the log."""

    url: str | None = Field(description="The replica's URL (null: not known).")
    role: str = Field(description="leader, follower or fenced.")
    seq: int = Field(description="The last sequence number it holds (a follower: durable).")


class LiveCollectionInfo(BaseModel):
    """A live collection: what it holds and where its log stands."""

    name: str
    dim: int
    variant: str | None = Field(description="The variant that embeds it; null: client vectors.")
    fields: dict[str, str]
    count: int = Field(description="Items in the collection now.")
    seq: int = Field(description="The last write's sequence number (every one is durable).")
    rows: int = Field(
        description="Rows written since its base (every version counted): what memory holds."
    )
    base_count: int = Field(description="Rows of its base (the last compaction's bundle).")
    base_version: str | None = Field(description="Its base's bundle version; null: none yet.")
    index: str = Field(description="The faiss factory its base is built with.")
    log_bytes: int = Field(description="Size of its write-ahead log.")
    created: str
    acks: str | None = Field(
        default=None,
        description="Its acknowledgement policy (null: the server's default_acks).",
    )
    replicas: list[ReplicaPosition] = Field(
        default_factory=list,
        description="The replicas this server knows of and the sequence number each has "
        "applied: this one, and on a leader every follower that fetched in its term.",
    )

    @classmethod
    def of(
        cls, entry: LiveEntry, replicas: list[ReplicaPosition] | None = None
    ) -> LiveCollectionInfo:
        """The facts of an open live collection, as readers see it now."""
        collection = entry.collection
        spec, view = collection.spec, collection.view()
        return cls(
            name=spec.name,
            dim=spec.dim,
            variant=spec.variant,
            fields={name: str(kind) for name, kind in sorted(spec.fields.items())},
            count=view.count,
            seq=view.seq,
            rows=collection.own_rows,
            base_count=0 if collection.base is None else collection.base.count,
            base_version=None if collection.base is None else collection.base.version,
            index=spec.index,
            log_bytes=collection.log_bytes,
            created=spec.created,
            acks=spec.acks,
            replicas=replicas or [],
        )


class WriteItem(StrictRequest):
    """One item to add or replace: its id, one of ``text``, ``image`` (base64) or ``vector``,
    and its metadata (declared fields only)."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["text"]},
                {"required": ["image"]},
                {"required": ["vector"]},
                {"required": ["vector_base64"]},
            ]
        }
    )

    id: str = Field(min_length=1, description="The item's id; an id that exists is replaced.")
    text: QueryText | SkipJsonSchema[None] = Field(
        default=None, description="Embedded by the variant."
    )
    image: Base64Image | SkipJsonSchema[None] = Field(
        default=None, description="Embedded by the variant."
    )
    vector: ItemVector | SkipJsonSchema[None] = Field(
        default=None,
        description="The item's own embedding: the collection's dimension, finite, non-zero "
        "(normalised before it is stored).",
    )
    vector_base64: PackedVector | SkipJsonSchema[None] = Field(
        default=None,
        description="The item's own embedding as standard base64 of little-endian float32 "
        "(dim x 4 bytes): the same vector as 'vector', about 15 times smaller and far cheaper "
        "to parse than a JSON list.",
    )
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_input(self) -> WriteItem:
        given = [key for key in _INPUTS if getattr(self, key) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of 'text', 'image', 'vector' and 'vector_base64'")
        return self


_INPUTS = ("text", "image", "vector", "vector_base64")


class UpsertRequest(StrictRequest):
    """``POST /v1/collections/{name}/items``: add or replace a batch, all or nothing."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "items": [
                        {"id": "n1", "text": "a red bicycle", "metadata": {"image_id": 1}},
                    ]
                }
            ]
        }
    )

    items: list[WriteItem]


class UpsertResponse(BaseModel):
    """The write's sequence number (durable and visible once answered) and its item count."""

    seq: int
    upserted: int


class DeleteRequest(StrictRequest):
    """``POST /v1/collections/{name}/items/delete``: ``ids``, or every item a ``filter`` keeps
    when the delete is logged (items written after it are not touched)."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [{"required": ["ids"]}, {"required": ["filter"]}],
            "examples": [{"ids": ["n1"]}, {"filter": {"field": "image_id", "eq": 1}}],
        }
    )

    ids: list[str] | SkipJsonSchema[None] = None
    filter: Filter | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _ids_or_filter(self) -> DeleteRequest:
        if (self.ids is None) == (self.filter is None):
            raise ValueError("give exactly one of 'ids' and 'filter'")
        return self


class DeleteResponse(BaseModel):
    """The delete's sequence number and how many items it removed."""

    seq: int
    deleted: int


class GetRequest(StrictRequest):
    """``POST /v1/collections/{name}/items/get``: the stored items of ``ids``."""

    ids: list[str]
    include_vectors: bool = Field(default=False, description="Return each item's vector too.")


class StoredItem(BaseModel):
    """An item as stored: id, metadata, the text it was embedded from (if any), its vector."""

    id: str
    metadata: dict[str, Any]
    text: str | None = None
    vector: list[float] | None = None


class GetResponse(BaseModel):
    """The items of the ids asked for that exist, in the order asked (missing ids are left
    out), and the sequence number they were read at."""

    items: list[StoredItem]
    seq: int


class PatchRequest(StrictRequest):
    """``PATCH /v1/collections/{name}/items/{id}``: new metadata without re-embedding; merged
    into the stored metadata (a null removes a field) or, with ``merge`` false, replacing it."""

    metadata: dict[str, JsonValue]
    merge: bool = True


class PatchResponse(BaseModel):
    """The patch's sequence number."""

    seq: int


class DropResponse(BaseModel):
    """The dropped collection's name."""

    dropped: str


class CompactResponse(BaseModel):
    """What a compaction did: the sequence number its base holds, rows (every version) and the
    log's bytes before and after, its time, the base version written (null: no item was alive)
    and the one it replaced, and the base's index: its faiss factory and, for an IVF one, the
    recall@10 its tuning measured."""

    seq: int
    rows_before: int
    rows_after: int
    log_bytes_before: int
    log_bytes_after: int
    seconds: float
    base_version: str | None
    replaced_version: str | None
    index_factory: str | None
    recall_at_10: float | None


class SnapshotResponse(BaseModel):
    """A snapshot written: the sequence number it holds, its items, and the bundle version
    (under ``<collections_dir>/.snapshots/<name>/``) that ``from_snapshot`` restores."""

    seq: int
    count: int
    version: str
    seconds: float


class AddFieldsRequest(StrictRequest):
    """``PATCH /v1/collections/{name}``: declare new typed metadata fields. Fields are only
    added: a field declared with the same type is left as it is (the request may be repeated),
    one declared with another type, or given null (a removal), is 409 field_mismatch."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"fields": {"year": "integer"}}]})

    fields: dict[FieldName, FieldType | None] = Field(
        min_length=1,
        description="New fields: name (as in create) → string, integer, float, boolean, "
        "timestamp or list[string]. Items written before hold no value of them (a filter "
        "'exists': false keeps them); items written after may set them.",
        json_schema_extra={
            "propertyNames": {"pattern": FIELD_NAME_PATTERN.pattern, "not": {"const": "id"}}
        },
    )

    @model_validator(mode="after")
    def _field_names(self) -> AddFieldsRequest:
        for name in self.fields:
            if (problem := field_name_problem(name)) is not None:
                raise ValueError(problem)
        return self


class ScrollRequest(StrictRequest):
    """``POST /v1/collections/{name}/items/scroll``: the items a filter keeps, in row order
    (write order), ``limit`` at a time; pass each page's ``next_cursor`` to get the next."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"limit": 100},
                {"filter": {"field": "image_id", "eq": 1}, "limit": 2, "include_vectors": True},
            ]
        }
    )

    filter: Filter | SkipJsonSchema[None] = Field(
        default=None,
        description="Keep only the items this filter keeps (the grammar of /v1/search).",
    )
    limit: int = Field(default=100, ge=1, description="Items per page, 1..max_scroll_limit.")
    cursor: Annotated[str, Field(min_length=1, max_length=4096)] | SkipJsonSchema[None] = Field(
        default=None,
        description="The previous page's next_cursor (opaque); leave it out for the first "
        "page. One that is not a cursor, or of another collection, or that the collection "
        "cannot follow any more (a bundle reloaded, a live collection compacted many times), "
        "is 422 invalid_input with param 'cursor': start again without it.",
    )
    include_vectors: bool = Field(default=False, description="Return each item's vector too.")
    include_metadata: bool = Field(default=True, description="Return each item's metadata.")
    variant: str | SkipJsonSchema[None] = Field(
        default=None,
        description="For a bundle collection name several variants serve: the one to read "
        "(default: the default variant's). A live or sharded collection's own, or left out.",
    )


class ScrolledItem(BaseModel):
    """One item of a scroll: its id, its metadata and its stored vector (each null when not
    asked for)."""

    id: str
    metadata: dict[str, Any] | None = None
    vector: list[float] | None = None


class ScrollResponse(BaseModel):
    """One page of items in row order, and the cursor of the next page (null: this page
    reaches the last item the filter keeps)."""

    items: list[ScrolledItem]
    next_cursor: str | None


class CountRequest(StrictRequest):
    """``POST /v1/collections/{name}/items/count``: how many items a filter keeps."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{}, {"filter": {"field": "image_id", "eq": 1}}]}
    )

    filter: Filter | SkipJsonSchema[None] = Field(
        default=None,
        description="Count only the items this filter keeps (the grammar of /v1/search); "
        "left out: every item.",
    )
    variant: str | SkipJsonSchema[None] = Field(
        default=None,
        description="For a bundle collection name several variants serve: the one to read.",
    )


class CountResponse(BaseModel):
    """How many items the filter keeps: what a search with that filter could return at most."""

    count: int
