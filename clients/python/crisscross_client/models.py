"""The wire models of the Crisscross v1 API: request bodies and answers, as pydantic models.

They mirror the schemas of the service's OpenAPI document (``docs/openapi.json``) by name and
field; ``tests/clients/test_openapi_drift.py`` checks that they still do. Request models refuse
unknown fields (a typo fails here, not as a 422 from the service); answer models keep fields
they do not know (a newer service may add some) under ``model_extra``.
"""

from __future__ import annotations

import base64
import struct
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

JsonObject = dict[str, Any]


class RequestModel(BaseModel):
    """A request body: unknown fields refused, names as the service spells them."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def body(self) -> JsonObject:
        """The JSON body: fields by their wire names, unset optional fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ResponseModel(BaseModel):
    """An answer: fields the client does not know are kept, not refused."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


# --- queries -------------------------------------------------------------------------------


class ItemRef(RequestModel):
    """A stored item, named by its collection and id."""

    collection: str
    id: str


class TextQuery(RequestModel):
    """A text, embedded by the variant's text tower."""

    text: str


class ImageQuery(RequestModel):
    """An image file's bytes in standard base64 (see :mod:`crisscross_client.images`)."""

    image: str


class ItemQuery(RequestModel):
    """A stored item's own vector ("more like this")."""

    item: ItemRef


class VectorQuery(RequestModel):
    """Your own embedding in the variant's space (its dimension, non-zero)."""

    vector: list[float]


Query = TextQuery | ImageQuery | ItemQuery | VectorQuery
"""One side of a search or a score pair."""


# --- filters -------------------------------------------------------------------------------

Scalar = str | int | float | bool


class Range(RequestModel):
    """Bounds of a range test; give at least one."""

    gt: str | int | float | None = None
    gte: str | int | float | None = None
    lt: str | int | float | None = None
    lte: str | int | float | None = None


class FieldTest(RequestModel):
    """A test of one metadata field: ``eq``, ``in``, ``range`` or ``exists``."""

    field: str
    eq: Scalar | None = None
    in_: list[Scalar] | None = Field(
        default=None, serialization_alias="in", validation_alias=AliasChoices("in", "in_")
    )
    range: Range | None = None
    exists: bool | None = None


class AllOf(RequestModel):
    """Every filter holds."""

    and_: list[Filter] = Field(
        serialization_alias="and", validation_alias=AliasChoices("and", "and_")
    )


class AnyOf(RequestModel):
    """At least one filter holds."""

    or_: list[Filter] = Field(serialization_alias="or", validation_alias=AliasChoices("or", "or_"))


class NoneOf(RequestModel):
    """The filter does not hold."""

    not_: Filter = Field(serialization_alias="not", validation_alias=AliasChoices("not", "not_"))


Filter = FieldTest | AllOf | AnyOf | NoneOf
"""A metadata filter; plain dicts in the same shape are accepted wherever one is."""

FilterInput = Filter | JsonObject


# --- search --------------------------------------------------------------------------------


class SearchParams(RequestModel):
    """Per-search index parameters: ``nprobe`` (IVF), ``ef_search`` (HNSW) or ``exact``."""

    nprobe: int | None = None
    ef_search: int | None = None
    exact: bool | None = None


SearchMode = Literal["dense", "lexical", "hybrid"]
"""How a search ranks: by the embeddings (``dense``, the default), by keywords (``lexical``)
or by both legs fused (``hybrid``)."""


class LexicalOptions(RequestModel):
    """The keyword leg of a ``lexical`` or ``hybrid`` search: the keywords (default: the query's
    own text) and the collection field searched (default: the collection's text)."""

    text: str | None = None
    field: str | None = None


class RrfFusion(RequestModel):
    """Reciprocal rank fusion of the hybrid legs: an item scores Σ 1 / (k + its rank in a leg)."""

    method: Literal["rrf"]
    k: int | None = Field(default=None, ge=1)


class WeightedFusion(RequestModel):
    """A weighted sum of the hybrid legs' scores: ``alpha`` is the weight of the dense leg."""

    method: Literal["weighted"]
    alpha: float | None = Field(default=None, ge=0.0, le=1.0)


Fusion = Annotated[RrfFusion | WeightedFusion, Field(discriminator="method")]
"""How a hybrid search fuses its legs (``{"method": "rrf", "k": 60}`` or
``{"method": "weighted", "alpha": 0.7}``)."""


class ExactRerank(RequestModel):
    """Re-score the first stage's candidates with the collection's exact stored vectors."""

    by: Literal["exact"]


class VariantRerank(RequestModel):
    """Re-score the first stage's candidates with another served variant's embeddings of the
    same items (the query embedded by that variant)."""

    by: Literal["variant"]
    variant: str


Rerank = Annotated[ExactRerank | VariantRerank, Field(discriminator="by")]
"""A second stage re-scoring the first stage's ``window`` candidates (``{"by": "exact"}`` or
``{"by": "variant", "variant": "..."}``)."""


class SearchRequest(RequestModel):
    """``POST /v1/search`` (and each search of a bulk request).

    ``mode``, ``lexical``, ``fusion``, ``window`` and ``rerank`` choose how the search ranks
    (see :data:`SearchMode`, :class:`LexicalOptions`, :data:`Fusion`, :data:`Rerank`);
    ``window`` is the candidates per leg (hybrid) or of the first stage (rerank), at least
    ``offset + k``."""

    collection: str
    query: Query
    k: int | None = None
    variant: str | None = None
    exclude: list[str] | None = None
    include_metadata: bool | None = None
    offset: int | None = None
    filter: Filter | JsonObject | None = None
    search_params: SearchParams | None = None
    mode: SearchMode | None = None
    lexical: LexicalOptions | None = None
    fusion: Fusion | None = None
    window: int | None = Field(default=None, ge=1)
    rerank: Rerank | None = None


class BulkSearchRequest(RequestModel):
    """``POST /v1/search/bulk``: searches answered in order, each with its own status."""

    searches: list[SearchRequest]


class AppliedSearchParams(ResponseModel):
    """The index parameters a search ran with."""

    nprobe: int | None = None
    ef_search: int | None = None
    exact: bool | None = None


class Timings(ResponseModel):
    """The service's own stage times, milliseconds."""

    encode: float
    search: float
    total: float
    decode: float = 0.0
    queue: float = 0.0


class SearchResult(ResponseModel):
    """One hit: its id, score, 1-based rank and (unless turned off) metadata."""

    id: str
    score: float
    rank: int
    metadata: JsonObject | None = None

    @property
    def text(self) -> str | None:
        """The hit's text when its metadata holds one (captions, live text items)."""
        value = (self.metadata or {}).get("text")
        return value if isinstance(value, str) else None


class SearchPageResult(ResponseModel):
    """A page of hits (a bulk search's result): what the collection answered, where the next
    page starts (``next_offset``; null at the end) and the mode it ranked in (``mode``; ``None``
    from a service that predates it)."""

    results: list[SearchResult]
    collection: str
    variant: str | None
    bundle: str
    bundle_version: str
    next_offset: int | None
    search_params: AppliedSearchParams | None = None
    mode: str | None = None


class SearchResponse(ResponseModel):
    """``POST /v1/search`` and ``POST /v1/search/upload``: a page of hits and the timings; ``mode``
    is the mode the search ranked in (``None`` from a service that predates it)."""

    results: list[SearchResult]
    collection: str
    variant: str | None
    bundle: str
    bundle_version: str
    timings_ms: Timings
    next_offset: int | None = None
    search_params: AppliedSearchParams | None = None
    mode: str | None = None


class BulkError(ResponseModel):
    """Why one search of a bulk request failed."""

    code: str
    message: str


class BulkItem(ResponseModel):
    """One search's answer in a bulk request: 200 with its result, or its status and error."""

    status: int
    result: SearchPageResult | None = None
    error: BulkError | None = None


class BulkSearchResponse(ResponseModel):
    """``POST /v1/search/bulk``: one answer per search, in order."""

    responses: list[BulkItem]
    timings_ms: Timings


# --- score, embed, items ---------------------------------------------------------------------


class ScorePair(RequestModel):
    """Two sides whose similarity is wanted."""

    left: Query
    right: Query


class ScoreRequest(RequestModel):
    """``POST /v1/score``."""

    pairs: list[ScorePair]
    variant: str | None = None


class ScoreResponse(ResponseModel):
    """One similarity per pair, in order."""

    scores: list[float]
    variant: str
    bundle_version: str | None
    timings_ms: Timings


class EmbedTexts(RequestModel):
    """``POST /v1/embed`` with texts."""

    texts: list[str]
    variant: str | None = None


class EmbedImages(RequestModel):
    """``POST /v1/embed`` with base64 images."""

    images: list[str]
    variant: str | None = None


class EmbedResponse(ResponseModel):
    """L2-normalised embeddings, one per input, in order."""

    embeddings: list[list[float]]
    dim: int
    variant: str


class ItemResponse(ResponseModel):
    """``GET /v1/items/{collection}/{id}``: a bundle item's metadata."""

    collection: str
    id: str
    row: int
    metadata: JsonObject


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


class LiveCollectionInfo(ResponseModel):
    """A live collection (written over HTTP)."""

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


class CollectionsResponse(ResponseModel):
    """``GET /v1/collections``: the bundles' collections and the live ones."""

    collections: list[CollectionInfo]
    live: list[LiveCollectionInfo] = Field(default_factory=list)


# --- live collections ------------------------------------------------------------------------

FieldType = Literal["string", "integer", "float", "boolean", "timestamp", "list[string]"]


class SnapshotRef(RequestModel):
    """A snapshot to restore a collection from."""

    collection: str
    version: str


class CreateCollectionRequest(RequestModel):
    """``POST /v1/collections``: a variant (it embeds texts and images) or a dimension (client
    vectors only), typed metadata fields, an index factory."""

    name: str
    variant: str | None = None
    dim: int | None = None
    index: str | None = None
    from_snapshot: SnapshotRef | None = None
    fields: dict[str, FieldType] | None = None
    from_bundle: str | None = None


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


# --- errors ----------------------------------------------------------------------------------


class ErrorDetail(ResponseModel):
    """The service's error: its code, message and request id, OpenAI's error ``type`` and
    the request field at fault (``param``), where one is."""

    code: str
    message: str
    request_id: str
    type: str
    param: str | None


class ErrorResponse(ResponseModel):
    """Every error answer: ``{"error": {...}}``."""

    error: ErrorDetail


# --- OpenAI-compatible embeddings ------------------------------------------------------------

EncodingFormat = Literal["float", "base64"]


class EmbeddingsRequest(RequestModel):
    """``POST /v1/embeddings`` in the OpenAI shape (``modality`` is Crisscross's own: ``text``
    or ``image``, the inputs then base64 image files)."""

    model: str
    input: str | list[str]
    encoding_format: EncodingFormat | None = None
    dimensions: int | None = None
    user: str | None = None
    modality: str | None = None


class Embedding(ResponseModel):
    """One embedding: a list of floats, or base64 of little-endian float32."""

    object: str = "embedding"
    index: int
    embedding: list[float] | str

    @property
    def vector(self) -> list[float]:
        """The embedding as floats, whichever encoding it came in."""
        if isinstance(self.embedding, list):
            return self.embedding
        raw = base64.b64decode(self.embedding)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))


class EmbeddingsUsage(ResponseModel):
    """Tokens the inputs took."""

    prompt_tokens: int
    total_tokens: int


class EmbeddingsResponse(ResponseModel):
    """``POST /v1/embeddings``: one embedding per input, in order."""

    object: str = "list"
    data: list[Embedding]
    model: str
    usage: EmbeddingsUsage

    @property
    def embeddings(self) -> list[list[float]]:
        """The vectors in input order."""
        return [entry.vector for entry in sorted(self.data, key=lambda entry: entry.index)]


class ModelInfo(ResponseModel):
    """A model (a served encoder variant) ``POST /v1/embeddings`` takes: its dimension,
    towers (``text``, ``image``), the ``dimensions`` it may be cut to, its token limit."""

    id: str
    object: str = "model"
    created: int
    owned_by: str = "crisscross"
    dim: int
    towers: list[str]
    matryoshka_dims: list[int]
    max_tokens: int | None


class ModelsResponse(ResponseModel):
    """``GET /v1/models``."""

    object: str = "list"
    data: list[ModelInfo]


for _model in (AllOf, AnyOf, NoneOf, SearchRequest, DeleteRequest):
    _model.model_rebuild()
