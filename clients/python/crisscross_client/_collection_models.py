"""The wire models of what is served (health, variants, collections), of live collections
and their writes, and of admin reload.

Re-exported by :mod:`crisscross_client.models` (import them from there)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from crisscross_client._search_models import AppliedSearchParams
from crisscross_client._wire_models import Filter, JsonObject, RequestModel, ResponseModel

# --- what is served --------------------------------------------------------------------------


class StatusResponse(ResponseModel):
    """``GET /healthz``, ``GET /readyz``."""

    status: str


class BatchingInfo(ResponseModel):
    """A tower's micro-batching settings."""

    max_batch_size: int
    max_wait_ms: float


class VariantInfo(ResponseModel):
    """A loaded encoder variant."""

    name: str
    dim: int
    precision: str
    towers: list[str]
    providers: list[str]
    tower_providers: dict[str, list[str]]
    tower_batching: dict[str, BatchingInfo]
    fingerprint: str
    bundle_versions: dict[str, str]
    max_tokens: int | None
    image_size: list[int] | None
    default: bool


class ProcessInfo(ResponseModel):
    """The answering server process."""

    workers: int
    worker: int
    pid: int
    encoder_threads: int
    intra_op_threads: int
    blas_threads: int
    flat_scan: str
    overload_concurrent_requests: int


class VariantsResponse(ResponseModel):
    """``GET /v1/variants``."""

    variants: list[VariantInfo]
    processes: ProcessInfo


class SweepPointInfo(ResponseModel):
    """One point of an index tuning sweep."""

    value: int
    recall_at_10: float
    ms_per_query: float


class IndexTuningInfo(ResponseModel):
    """How an approximate index's search parameter was tuned."""

    target_recall: float
    parameter: str
    value: int
    recall_at_10: float
    met: bool
    held_out_queries: int
    seed: int
    queries: str
    sweep: list[SweepPointInfo]


class CollectionInfo(ResponseModel):
    """A bundle's collection."""

    name: str
    qualified_name: str
    count: int
    dim: int
    variant: str
    bundle: str
    bundle_version: str
    factory: str
    metric: str
    index_device: str
    fields: dict[str, str]
    thumbnails: bool = False
    index_kind: str = "flat"
    search_params: AppliedSearchParams | None = None
    tuning: IndexTuningInfo | None = None
    on_disk: bool = False


Acks = Literal["leader", "majority", "all"]
"""How many replicas hold a write on disk before it is answered: the leader alone, a majority
of the replica set (the service's default), or all of them."""


class ReplicaPosition(ResponseModel):
    """One replica of a live collection and the last sequence number it holds (a follower's:
    durable)."""

    url: str | None
    role: str
    seq: int


class LiveCollectionInfo(ResponseModel):
    """A live collection (written over HTTP). ``acks`` is its acknowledgement policy (None:
    the server's default_acks); ``replicas`` the replicas the answering server knows of, itself
    first (on a leader: every follower that fetched in its term)."""

    name: str
    dim: int
    variant: str | None
    fields: dict[str, str]
    count: int
    seq: int
    rows: int
    base_count: int
    base_version: str | None
    index: str
    log_bytes: int
    created: str
    acks: str | None = None
    replicas: list[ReplicaPosition] = Field(default_factory=list)


class ShardInfo(ResponseModel):
    """One shard of a sharded collection and its state when asked."""

    name: str
    row_offset: int
    count: int
    version: str
    status: Literal["ok", "down"]
    reason: str | None = None


class ShardedCollectionInfo(ResponseModel):
    """A collection held by shards on Ray (``cluster serve-shards``)."""

    name: str
    qualified_name: str
    count: int
    dim: int
    variant: str
    bundle: str
    bundle_version: str
    missing_shards_policy: Literal["fail", "partial"]
    shard_deadline_ms: int
    shards: list[ShardInfo]


class CollectionsResponse(ResponseModel):
    """``GET /v1/collections``: the bundles' collections, the live ones and the sharded ones."""

    collections: list[CollectionInfo]
    live: list[LiveCollectionInfo] = Field(default_factory=list)
    sharded: list[ShardedCollectionInfo] = Field(default_factory=list)


# --- live collections ------------------------------------------------------------------------

FieldType = Literal["string", "integer", "float", "boolean", "timestamp", "list[string]"]


class SnapshotRef(RequestModel):
    """A snapshot to restore a collection from."""

    collection: str
    version: str


class CreateCollectionRequest(RequestModel):
    """``POST /v1/collections``: a variant (it embeds texts and images) or a dimension (client
    vectors only), typed metadata fields, an index factory, and the acknowledgement policy of
    its writes (``acks``; None: the server's default_acks)."""

    name: str
    variant: str | None = None
    dim: int | None = None
    index: str | None = None
    from_snapshot: SnapshotRef | None = None
    fields: dict[str, FieldType] | None = None
    from_bundle: str | None = None
    acks: Acks | None = None


class WriteItem(RequestModel):
    """One item to add or replace: its id, exactly one of ``text``, ``image`` (base64),
    ``vector`` or ``vector_base64`` (little-endian float32), and metadata."""

    id: str
    text: str | None = None
    image: str | None = None
    vector: list[float] | None = None
    vector_base64: str | None = None
    metadata: JsonObject | None = None


class UpsertRequest(RequestModel):
    """``POST /v1/collections/{name}/items``: all or nothing."""

    items: list[WriteItem]


class UpsertResponse(ResponseModel):
    """The write's sequence number and item count."""

    seq: int
    upserted: int


class DeleteRequest(RequestModel):
    """``POST /v1/collections/{name}/items/delete``: ``ids`` or a ``filter``."""

    ids: list[str] | None = None
    filter: Filter | JsonObject | None = None


class DeleteResponse(ResponseModel):
    """The delete's sequence number and how many items it removed."""

    seq: int
    deleted: int


class GetRequest(RequestModel):
    """``POST /v1/collections/{name}/items/get``."""

    ids: list[str]
    include_vectors: bool | None = None


class StoredItem(ResponseModel):
    """An item as stored."""

    id: str
    metadata: JsonObject
    text: str | None = None
    vector: list[float] | None = None


class GetResponse(ResponseModel):
    """The items that exist, in the order asked."""

    items: list[StoredItem]
    seq: int


class PatchRequest(RequestModel):
    """``PATCH /v1/collections/{name}/items/{id}``: merged (a null removes a field) or, with
    ``merge`` false, replacing the metadata."""

    metadata: JsonObject
    merge: bool | None = None


class PatchResponse(ResponseModel):
    """The patch's sequence number."""

    seq: int


class DropResponse(ResponseModel):
    """The dropped collection's name."""

    dropped: str


class CompactResponse(ResponseModel):
    """What a compaction did."""

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


class SnapshotResponse(ResponseModel):
    """A snapshot written."""

    seq: int
    count: int
    version: str
    seconds: float


class AddFieldsRequest(RequestModel):
    """``PATCH /v1/collections/{name}``: new typed metadata fields (only added)."""

    fields: dict[str, FieldType]


class ScrollRequest(RequestModel):
    """``POST /v1/collections/{name}/items/scroll``: one page of the items a filter keeps, in
    row order, from a cursor."""

    filter: Filter | JsonObject | None = None
    limit: int | None = None
    cursor: str | None = None
    include_vectors: bool | None = None
    include_metadata: bool | None = None
    variant: str | None = None


class ScrolledItem(ResponseModel):
    """One item of a scroll (``metadata`` and ``vector`` None when not asked for)."""

    id: str
    metadata: JsonObject | None = None
    vector: list[float] | None = None


class ScrollPage(ResponseModel):
    """One page of a scroll, and the cursor of the next (None: the last page)."""

    items: list[ScrolledItem]
    next_cursor: str | None


class CountRequest(RequestModel):
    """``POST /v1/collections/{name}/items/count``."""

    filter: Filter | JsonObject | None = None
    variant: str | None = None


class CountResponse(ResponseModel):
    """How many items the filter keeps."""

    count: int


# --- admin -----------------------------------------------------------------------------------


class ReloadRequest(RequestModel):
    """``POST /v1/admin/reload``: every bundle's CURRENT version, or one bundle's version."""

    bundle: str | None = None
    version: str | None = None


class ReloadedBundle(ResponseModel):
    """One bundle reloaded."""

    bundle: str
    previous_version: str
    version: str
    changed: bool


class ReloadResponse(ResponseModel):
    """``POST /v1/admin/reload``."""

    bundles: list[ReloadedBundle]
    load_ms: float
    workers: int


DeleteRequest.model_rebuild()
ScrollRequest.model_rebuild()
CountRequest.model_rebuild()
