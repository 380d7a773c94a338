"""The wire models of searching, scoring and embedding (``/v1/search``, ``/v1/score``,
``/v1/embed``, ``/v1/embeddings``, ``/v1/models``) and of bundle items.

Re-exported by :mod:`crisscross_client.models` (import them from there)."""

from __future__ import annotations

import base64
import struct
from typing import Annotated, Literal

from pydantic import Field

from crisscross_client._wire_models import (
    Filter,
    JsonObject,
    Query,
    RequestModel,
    ResponseModel,
)

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
    missing_shards: list[str] = Field(default_factory=list)
    """Shards of a sharded collection the page was made without (their rows are absent)."""


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
    missing_shards: list[str] = Field(default_factory=list)
    """Shards of a sharded collection the page was made without (their rows are absent)."""


class BulkError(ResponseModel):
    """Why one search of a bulk request failed."""

    code: str
    message: str
    param: str | None = None


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
    towers (``text``, ``image``), the ``dimensions`` it may be cut to, its token limit, and
    how many texts (``max_inputs``) or images (``max_image_inputs``) one request may hold."""

    id: str
    object: str = "model"
    created: int
    owned_by: str = "crisscross"
    dim: int
    towers: list[str]
    matryoshka_dims: list[int]
    max_tokens: int | None
    max_inputs: int | None = None
    max_image_inputs: int | None = None


class ModelsResponse(ResponseModel):
    """``GET /v1/models``."""

    object: str = "list"
    data: list[ModelInfo]


SearchRequest.model_rebuild()
