"""``GET /v1/variants``, ``GET /v1/collections`` and ``GET /v1/items/...``: what is served."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
)

from service.http.schemas.collections import LiveCollectionInfo
from service.http.schemas.search import AppliedSearchParams


class ItemResponse(BaseModel):
    """A stored item: its row in the bundle and its metadata (caption text, image file...)."""

    collection: str
    id: str
    row: int
    metadata: dict[str, Any]


class BatchingInfo(BaseModel):
    """How one tower's batcher gathers requests into encoder calls: the settings, or for what
    they leave unset the defaults that suit the device its encoder runs on."""

    max_batch_size: int = Field(description="Most inputs per encoder call.")
    max_wait_ms: float = Field(
        description="Milliseconds a partial batch waits for company; 0 = never."
    )


class VariantInfo(BaseModel):
    """A loaded encoder variant."""

    name: str
    dim: int
    precision: str
    towers: list[str] = Field(description="'text', 'image' or both.")
    providers: list[str] = Field(
        description="onnxruntime providers in use by any tower, de-duplicated, priority order."
    )
    tower_providers: dict[str, list[str]] = Field(
        description="Providers in use, per tower (e.g. {'text': [...], 'image': [...]})."
    )
    tower_batching: dict[str, BatchingInfo] = Field(
        description="Batching in force, per tower (max_batch_size and max_wait_ms unset "
        "follow the tower's providers: larger batches and a short wait on a GPU)."
    )
    fingerprint: str
    bundle_versions: dict[str, str] = Field(
        description="Served bundles embedded by this variant: bundle name → version served."
    )
    max_tokens: int | None = Field(
        description="Text truncation length in tokens; null without a text tower."
    )
    image_size: list[int] | None = Field(
        description="[height, width] in pixels of the image tower's input; null without one."
    )
    default: bool


class ProcessInfo(BaseModel):
    """How the service runs: every worker process loads every variant's encoders and maps the
    same bundle files; this answer came from worker ``worker``."""

    workers: int = Field(description="Worker processes serving on this port.")
    worker: int = Field(description="The worker that answered (0-based).")
    pid: int = Field(description="Its process id.")
    encoder_threads: int = Field(
        description="Batcher threads per encoder (variant and tower) in each worker."
    )
    intra_op_threads: int = Field(
        description="onnxruntime intra-op threads per encoder session; 0 = one per core."
    )
    blas_threads: int = Field(
        description="BLAS threads of the exact search in each worker; 0 = one per core."
    )
    flat_scan: str = Field(
        description="What scans a flat collection's stored vectors on the CPU: 'onnxruntime' "
        "(its GEMM and TopK, on blas_threads threads) or 'numpy'."
    )
    overload_concurrent_requests: int = Field(
        description="Requests in flight per worker while overloaded, in force: the setting, or "
        "when unset one per encoder thread, a full batch per encoder thread once an encoder "
        "runs on a GPU (at most max_concurrent_requests)."
    )


class VariantsResponse(BaseModel):
    """Every loaded variant, and the process layout that serves them."""

    variants: list[VariantInfo]
    processes: ProcessInfo


class SweepPointInfo(BaseModel):
    """Recall and speed of one parameter value, measured when the bundle was built."""

    value: int
    recall_at_10: float
    ms_per_query: float


class IndexTuningInfo(BaseModel):
    """What the build measured of an approximate index against exact search: recall@10 over
    held-out queries for each value of its search parameter, and the value chosen for the
    target recall (the collection's default)."""

    target_recall: float
    parameter: str = Field(description="'nprobe' (IVF) or 'efSearch' (HNSW).")
    value: int = Field(description="The value chosen: the default of search_params.")
    recall_at_10: float = Field(description="Recall@10 against exact search at that value.")
    met: bool = Field(description="Whether that reached target_recall.")
    held_out_queries: int
    seed: int
    queries: str = Field(description="Where the held-out queries came from.")
    sweep: list[SweepPointInfo]


class CollectionInfo(BaseModel):
    """A served collection."""

    name: str = Field(description="The collection's name in its bundle, e.g. 'captions'.")
    qualified_name: str = Field(
        description="'<bundle>:<collection>', unique in the service. A request may name a "
        "collection either way: a bare name finds the one collection of that name whose "
        "variant can answer it (409 ambiguous_name listing the qualified names when several "
        "can)."
    )
    count: int
    dim: int
    variant: str
    bundle: str
    bundle_version: str
    factory: str
    metric: str
    index_device: str = Field(
        description="Where faiss searches it: 'cpu' or 'gpu' (setting faiss_device)."
    )
    fields: dict[str, str] = Field(
        description="Metadata fields a filter may name, with their types: string, integer, "
        "float, boolean, timestamp or list[string]."
    )
    thumbnails: bool = Field(
        default=False,
        description="Whether its items have thumbnails (GET /v1/thumbnails/{collection}/{id}): "
        "a collection built from image files.",
    )
    index_kind: str = Field(
        default="flat",
        description="'flat' (exact), 'hnsw', 'ivf_flat', 'ivf_pq' or 'other' (from the faiss "
        "index type).",
    )
    search_params: AppliedSearchParams = Field(
        default_factory=lambda: AppliedSearchParams(),
        description="The search parameters a search uses unless it overrides them "
        "(search_params of POST /v1/search); {} for a flat index.",
    )
    tuning: IndexTuningInfo | None = Field(
        default=None,
        description="The build's measurement of an approximate index against exact search; "
        "null for a flat index (or a bundle built without one).",
    )
    on_disk: bool = Field(
        default=False,
        description="Whether an IVF index reads its inverted lists from a file on disk.",
    )


class ShardInfo(BaseModel):
    """One shard of a sharded collection, as it answered its health check now."""

    name: str = Field(
        description="The shard's name: what missing_shards and x-missing-shards list."
    )
    row_offset: int = Field(description="The collection's row its first row is.")
    count: int
    version: str = Field(description="The version of the shard's bundle.")
    status: Literal["ok", "down"]
    reason: str | None = Field(default=None, description="Why it is down; null when ok.")


class ShardedCollectionInfo(BaseModel):
    """A collection held by shards in other processes (``cluster serve-shards``)."""

    name: str
    qualified_name: str = Field(description="'<bundle>:<collection>', as for a bundle's.")
    count: int
    dim: int
    variant: str = Field(description="The variant that embedded it.")
    bundle: str = Field(description="The bundle its shards were cut from.")
    bundle_version: str
    missing_shards_policy: Literal["fail", "partial"] = Field(
        description="A search that a shard does not answer in time: 'fail' is 503 "
        "shards_unavailable naming it; 'partial' answers from the others, listing it in "
        "missing_shards."
    )
    shard_deadline_ms: int = Field(description="How long a search waits for each shard.")
    shards: list[ShardInfo]


class CollectionsResponse(BaseModel):
    """Every served collection."""

    collections: list[CollectionInfo]
    live: list[LiveCollectionInfo] = Field(
        default_factory=list,
        description="The live collections (written over HTTP), with their counts now.",
    )
    sharded: list[ShardedCollectionInfo] = Field(
        default_factory=list,
        description="The sharded collections (served by `cluster serve-shards`), with each "
        "shard's state now; empty on a server of one process.",
    )
