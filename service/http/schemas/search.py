"""``POST /v1/search`` and ``POST /v1/search/upload``: the request, its page and search
parameters, and the answer."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict

from service.engine.query.filter_grammar import Filter
from service.engine.query.levers import DEFAULT_FUSION, Levers, Rerank
from service.engine.query.query import (
    PageRequest,
    SearchQuery,
)
from service.engine.rank.fusion import Fusion
from service.engine.rank.search_params import SearchOverride
from service.http.schemas.queries import QueryInput
from service.http.schemas.wire import (
    EXAMPLE_CAPTION_ID,
    EXAMPLE_FILTER,
    EXAMPLE_ITEM,
    JsonInteger,
    PositiveJsonInteger,
    StrictRequest,
    json_object,
)


class SearchParams(StrictRequest):
    """Per-search parameters of an approximate index, or an exact search instead of it."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"nprobe": 32}, {"ef_search": 128}, {"exact": True}],
            # 'exact' stands alone: exact is not true, or nprobe and ef_search are left out (or
            # null). The document says what the check below says, as an anyOf (not if/then or
            # not: a fuzzer then draws the multipart form that holds these without judging the
            # whole form, file included, against a condition).
            "anyOf": [
                {"properties": {"exact": {"const": False}}},
                {"properties": {"nprobe": {"type": "null"}, "ef_search": {"type": "null"}}},
            ],
        }
    )

    nprobe: PositiveJsonInteger | None = Field(
        default=None,
        description="Inverted lists an IVF index scans (1..max_nprobe and at most the index's "
        "nlist); more finds more of the exact answers, slower. 409 "
        "search_param_not_applicable on an index that is not IVF, or above its nlist.",
    )
    ef_search: PositiveJsonInteger | None = Field(
        default=None,
        description="Candidates an HNSW index explores (1..max_ef_search); more finds more of "
        "the exact answers, slower. 409 search_param_not_applicable on an index that is not "
        "HNSW.",
    )
    exact: bool = Field(
        default=False,
        description="Search the stored vectors exactly (the answers of a flat index, same tie "
        "rule), whatever the index is; not with nprobe or ef_search.",
    )

    @model_validator(mode="after")
    def _exact_alone(self) -> SearchParams:
        if self.exact and (self.nprobe is not None or self.ef_search is not None):
            raise ValueError("'exact' cannot be combined with 'nprobe' or 'ef_search'")
        return self

    def override(self) -> SearchOverride:
        """The search core's view of these parameters."""
        return SearchOverride(nprobe=self.nprobe, ef_search=self.ef_search, exact=self.exact)


class SearchOptions(StrictRequest):
    """What a search asks for besides its query (shared by the JSON and the upload route)."""

    collection: str = Field(
        min_length=1,
        description="Collection to search: its qualified name '<bundle>:<collection>' "
        "(GET /v1/collections), or its bare name when one served collection of that name can "
        "answer the query (else 409 ambiguous_name listing the choices).",
        examples=["captions", "coco-captions:captions"],
    )
    k: JsonInteger = Field(
        default=10,
        ge=1,
        description="Results wanted, 1..max_k. More than the collection holds returns all of it.",
    )
    variant: str | None = Field(default=None, description="Encoder variant; default if omitted.")
    exclude: list[str] = Field(
        default_factory=list,
        description="Ids left out of the results (e.g. the query item); unknown ids are ignored.",
    )
    include_metadata: bool = Field(
        default=True,
        description="Return each hit's metadata; false makes large-k responses several times "
        "smaller (evaluation clients need ids and scores only).",
    )
    offset: JsonInteger = Field(
        default=0,
        ge=0,
        description="Skip this many best results: the page holds ranks offset+1..offset+k, in "
        "the same order as one deeper search (score, then bundle row), so the response's "
        "next_offset continues it exactly. At most max_offset.",
    )
    filter: Filter | None = Field(
        default=None,
        description="Only items this metadata filter keeps (fields and types: "
        "GET /v1/collections). A leaf tests one field: eq, in, range (gt/gte/lt/lte) or "
        "exists; and/or/not combine filters. A field the collection lacks, an operand of "
        "another type than the field's or a range on a field without an order is 409 "
        "filter_not_applicable.",
        examples=[EXAMPLE_FILTER],
    )

    search_params: SearchParams | None = Field(
        default=None,
        description="Override the collection's search parameters for this search (its "
        "defaults: GET /v1/collections): nprobe for an IVF index, ef_search for an HNSW one, "
        "or exact=true for the exact answers whatever the index. Omitted: the defaults.",
        examples=[{"exact": True}],
    )

    def page(self, where: str = "filter") -> PageRequest:
        """The page this request asks for, as the search core takes it; ``where`` locates its
        filter (``searches.3.filter``), and its search parameters beside it."""
        return PageRequest(
            k=self.k,
            offset=self.offset,
            exclude=frozenset(self.exclude),
            filter=self.filter,
            where=where,
            override=None if self.search_params is None else self.search_params.override(),
            params_where=where.removesuffix("filter") + "search_params",
        )


class LexicalOptions(StrictRequest):
    """The keywords of a lexical or hybrid search and the field they are searched in."""

    text: str | None = Field(
        default=None,
        min_length=1,
        description="Keywords (lowercase word tokens, each distinct word once; BM25, k1 1.5, b "
        "0.75). Omitted: the query's own text; an image, item or vector query must send them.",
        examples=["dog frisbee"],
    )
    field: str | None = Field(
        default=None,
        min_length=1,
        description="The string or list[string] field searched. Omitted: the collection's "
        "'text' field, else its 'captions' (an image collection's captions), or a live "
        "collection's item texts. Another field, or one without text: 409 "
        "lever_not_applicable.",
        examples=["captions"],
    )


class RrfFusion(StrictRequest):
    """Reciprocal rank fusion: a row scores the sum over legs of 1 / (k + its rank)."""

    method: Literal["rrf"]
    k: JsonInteger = Field(
        default=60, ge=1, description="Damps the top ranks (60: RRF's paper, most peers)."
    )


class WeightedFusion(StrictRequest):
    """A weighted sum of each leg's scores mapped onto 0..1 by its window's min and max."""

    method: Literal["weighted"]
    alpha: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Weight of the dense leg; 1 - alpha weighs the lexical leg.",
    )


FusionInput = Annotated[RrfFusion | WeightedFusion, Field(discriminator="method")]


class ExactRerank(StrictRequest):
    """Re-score the first stage's candidates with the collection's exact stored vectors."""

    by: Literal["exact"]


class VariantRerank(StrictRequest):
    """Re-score the first stage's candidates with another served variant's stored vectors of
    the same items (same ids), the query embedded by that variant."""

    by: Literal["variant"]
    variant: str = Field(min_length=1, description="The served variant that re-scores.")


RerankInput = Annotated[ExactRerank | VariantRerank, Field(discriminator="by")]


class SearchRequest(SearchOptions):
    """``POST /v1/search``: the ``k`` nearest items of ``collection`` to ``query``."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"query": {"text": "a dog on a couch"}, "collection": "captions", "k": 10},
                {
                    "query": {"item": EXAMPLE_ITEM},
                    "collection": "captions",
                    "k": 10,
                    "exclude": [EXAMPLE_CAPTION_ID],
                    "include_metadata": False,
                },
            ]
        }
    )

    query: QueryInput
    mode: Literal["dense", "lexical", "hybrid"] = Field(
        default="dense",
        description="dense: the query's vector against the collection's index; lexical: BM25 "
        "keywords (see lexical) over a text field; hybrid: both legs, each its best window "
        "rows under the same filter and exclusions, fused (see fusion). Filters, exclusions, "
        "pages and the tie rule (score descending, then row) hold in every mode.",
    )
    lexical: LexicalOptions | None = Field(
        default=None, description="Keywords and field of a lexical or hybrid search."
    )
    fusion: FusionInput | None = Field(
        default=None,
        description="How a hybrid search fuses its legs. Omitted: the weighted sum with alpha "
        "0.5 (measured: docs/studies/2026-11-28-levers-on-cxc.md).",
        examples=[{"method": "rrf", "k": 60}, {"method": "weighted", "alpha": 0.7}],
    )
    window: JsonInteger | None = Field(
        default=None,
        ge=1,
        description="Candidates of each hybrid leg and of a re-rank's first stage: at least "
        "offset + k and at most max_window (else 422). Omitted: max(100, offset + k). Pages "
        "end at the window.",
    )
    rerank: RerankInput | None = Field(
        default=None,
        description="Re-score the first stage's best window rows and order them by the new "
        "score: by the collection's exact stored vectors (after an approximate or int8 "
        "index), or by another served variant's vectors of the same items (items it lacks "
        "drop out). A variant that serves no collection of this name: 409 "
        "lever_not_applicable.",
        examples=[{"by": "exact"}, {"by": "variant", "variant": "minilm-l6-v2"}],
    )

    def levers(self, where: str = "") -> Levers:
        """The request's quality levers as the engine takes them."""
        fusion = DEFAULT_FUSION
        if isinstance(self.fusion, RrfFusion):
            fusion = Fusion(method="rrf", k=self.fusion.k)
        elif isinstance(self.fusion, WeightedFusion):
            fusion = Fusion(method="weighted", alpha=self.fusion.alpha)
        rerank = None
        if isinstance(self.rerank, ExactRerank):
            rerank = Rerank(by="exact")
        elif isinstance(self.rerank, VariantRerank):
            rerank = Rerank(by="variant", variant=self.rerank.variant)
        return Levers(
            mode=self.mode,
            keywords=None if self.lexical is None else self.lexical.text,
            field=None if self.lexical is None else self.lexical.field,
            fusion=fusion,
            window=self.window,
            rerank=rerank,
            where=f"{where}." if where else "",
        )

    def to_query(self, where: str = "") -> SearchQuery:
        """This search as the engine takes it; ``where`` locates it in a larger request
        (``searches.3``)."""
        prefix = f"{where}." if where else ""
        return SearchQuery(
            variant=self.variant,
            collection=self.collection,
            side=self.query.side(f"{prefix}query"),
            page=self.page(f"{prefix}filter"),
            where=where,
            levers=self.levers(where),
        )


class SearchUploadForm(SearchOptions):
    """The form fields of ``POST /v1/search/upload`` (besides the ``file`` part).

    Form values arrive as strings, so this model converts them (``k=5``,
    ``include_metadata=false``); ``exclude`` may repeat. Unknown fields are refused.
    """

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    search_params: Annotated[SearchParams | None, BeforeValidator(json_object)] = Field(
        default=None,
        description="As in POST /v1/search, sent as a JSON object in the form field, e.g. "
        '{"nprobe": 32}.',
    )
    filter: SkipJsonSchema[None] = Field(
        default=None,
        exclude=True,
        description="Not a form field: a filtered image search sends the image in base64 to "
        "POST /v1/search or /v1/search/bulk.",
    )


class Timings(BaseModel):
    """Server-side stage times of one request, in milliseconds."""

    decode: float = Field(
        default=0.0, description="Image decoding: base64 and pixels (0 when no image was sent)."
    )
    queue: float = Field(
        default=0.0,
        description="Waiting in the encoder's queue for a micro-batch to start (0 when nothing "
        "was encoded).",
    )
    encode: float = Field(
        description="The encoder call of the micro-batch that held this request's inputs (0 "
        "when nothing was encoded)."
    )
    search: float = Field(description="faiss search and stored-vector lookups.")
    total: float = Field(description="From arrival to the response being built.")


class AppliedSearchParams(TypedDict, total=False):
    """The search parameters a search ran with: ``nprobe`` (IVF) or ``ef_search`` (HNSW), or
    ``exact``; ``{}`` for a flat index searched as it is."""

    nprobe: Annotated[int, Field(description="Inverted lists scanned (IVF).")]
    ef_search: Annotated[int, Field(description="Candidates explored (HNSW).")]
    exact: Annotated[bool, Field(description="True: the stored vectors were searched exactly.")]


class SearchResult(BaseModel):
    """One hit: ``score`` is the cosine similarity, ``rank`` 1-based."""

    id: str
    score: float
    rank: int
    metadata: dict[str, Any] | None = Field(
        default=None, description="Item metadata; null when the request set include_metadata=false."
    )


def missing_shards_field() -> Any:
    """The ``missing_shards`` field of a search's answer."""
    return Field(
        default_factory=list,
        description="The shards of a sharded collection this answer was made without (they "
        "did not answer in time and the collection's policy is 'partial'): their rows are "
        "absent. Empty for a whole answer, and always for a collection that is not sharded.",
    )


class SearchResponse(BaseModel):
    """Hits ordered by score descending, then bundle row ascending (the tie rule)."""

    results: list[SearchResult]
    collection: str
    variant: str | None = Field(
        description="The variant that embeds the collection; null for a live collection of "
        "client vectors."
    )
    bundle: str = Field(description="The bundle served; a live collection's own name.")
    bundle_version: str = Field(
        description="The bundle version served; live@<seq> for a live collection: the last "
        "write the search saw."
    )
    next_offset: int | None = Field(
        default=None,
        description="The offset of the next page; null when this page reaches the last result.",
    )
    mode: str = Field(
        default="dense",
        description="The mode the search ran in: dense, lexical or hybrid (scores are cosine "
        "similarities, BM25 scores or fused scores; a re-rank's are the re-scoring vectors' "
        "cosine similarities).",
    )
    search_params: AppliedSearchParams = Field(
        default_factory=lambda: AppliedSearchParams(),
        description="The search parameters used (the collection's defaults unless the request "
        "overrode them); {} for a flat index.",
    )
    missing_shards: list[str] = missing_shards_field()
    timings_ms: Timings


class SearchPageResult(BaseModel):
    """One search's answer in a bulk response (a search response without timings)."""

    results: list[SearchResult]
    collection: str
    variant: str | None = Field(
        description="The variant that embeds the collection; null for a live collection of "
        "client vectors."
    )
    bundle: str = Field(description="The bundle served; a live collection's own name.")
    bundle_version: str = Field(
        description="The bundle version served; live@<seq> for a live collection: the last "
        "write the search saw."
    )
    next_offset: int | None
    mode: str = Field(
        default="dense",
        description="The mode the search ran in: dense, lexical or hybrid (scores are cosine "
        "similarities, BM25 scores or fused scores; a re-rank's are the re-scoring vectors' "
        "cosine similarities).",
    )
    search_params: AppliedSearchParams = Field(
        default_factory=lambda: AppliedSearchParams(),
        description="The search parameters used; {} for a flat index.",
    )
    missing_shards: list[str] = missing_shards_field()
