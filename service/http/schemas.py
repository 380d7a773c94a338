"""Request and response models of the HTTP API v1 (docs/contracts.md).

Requests are strict (``k`` must be a JSON Schema integer: ``5`` or ``5.0``, not ``5.5``, ``"5"``
or ``true``) and refuse unknown fields; each query side is a tagged union the OpenAPI document
states as ``oneOf``. Rules that do not depend on settings live in the models; the limits that do
(``max_k``, ``max_text_chars``, ...) are checked by each request's ``check_limits`` before any
encoding, so one request model serves every configuration.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from fastapi import Body
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict

from service.engine.filter_grammar import Filter, check_filter_limits
from service.engine.images import ImagePayload, check_base64_length
from service.engine.search_params import SearchOverride
from service.engine.searcher import (
    ImageSide,
    ItemSide,
    PageRequest,
    QuerySide,
    SearchJob,
    TextSide,
    VectorSide,
)
from service.http.errors import ErrorCode, ServiceError
from service.settings import Settings
from storage.layout import VERSION_PATTERN

NON_BLANK_PATTERN = (
    r"[^\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
)
r"""A character that is not whitespace, whitespace being what Python's ``str.isspace`` and the
ECMAScript ``\s`` of JSON Schema patterns call so (their union): the model and the OpenAPI
document refuse the same blank texts."""
_NON_BLANK = re.compile(NON_BLANK_PATTERN)


def _text_is_usable(text: str) -> str:
    if not _NON_BLANK.search(text):
        raise ValueError("must contain a non-whitespace character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # JSON may carry lone surrogates ("\ud800"); no tokenizer accepts them.
        raise ValueError("must be valid Unicode (it holds an unpaired surrogate)") from None
    return text


QueryText = Annotated[
    str, AfterValidator(_text_is_usable), Field(json_schema_extra={"pattern": NON_BLANK_PATTERN})
]
"""A text to embed: not blank, encodable as UTF-8. Its length limit is a setting."""

IMAGE_FORMAT = "crisscross-image-base64"
"""The OpenAPI ``format`` of a base64 image: what JSON Schema cannot check (that the bytes are a
JPEG, PNG, WEBP or GIF file) gets a name clients and fuzzers can give a generator."""

Base64Image = Annotated[
    str,
    Field(
        min_length=1,
        description="The image file's bytes (JPEG, PNG, WEBP or GIF) in standard, padded base64, "
        "without a data: prefix; at most max_image_bytes once decoded.",
        json_schema_extra={"format": IMAGE_FORMAT, "contentEncoding": "base64"},
    ),
]
"""An image file in base64. Its size limits are settings, checked before it is decoded."""


def _integral(value: Any) -> Any:
    # JSON Schema's "integer" is any number with no fractional part: 5.0 is one. Strict models
    # refuse floats, so an integral float becomes the int it spells; "5" and true stay refused.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


JsonInteger = Annotated[int, BeforeValidator(_integral)]
"""An integer as JSON Schema has it (``5`` or ``5.0``; not ``5.5``, ``"5"`` or ``true``)."""


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


EXAMPLE_CAPTION_ID = "COCO_val2014:sentid:770337"
EXAMPLE_ITEM: dict[str, JsonValue] = {"collection": "captions", "id": EXAMPLE_CAPTION_ID}


class ItemRef(_Request):
    """A stored item, by collection and id (e.g. ``captions`` / ``COCO_val2014:sentid:770337``)."""

    collection: str = Field(examples=["captions", "images"])
    id: str = Field(examples=[EXAMPLE_CAPTION_ID, "COCO_val2014_000000184613.jpg"])


FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
"""A JSON number that is finite (``NaN``, ``Infinity`` are refused with 422)."""

QueryVector = Annotated[
    list[FiniteFloat],
    Field(
        min_length=1,
        description="Your own embedding in the variant's space: exactly dim finite numbers with a "
        "non-zero norm; it is L2-normalised before searching.",
        # Not all zero (a zero vector has no direction); the length is the variant's dim,
        # stated in the served document when every served variant has the same one.
        json_schema_extra={"contains": {"not": {"const": 0}}},
    ),
]


class TextQuery(_Request):
    """A text, embedded by the variant's text tower."""

    text: QueryText

    def side(self, where: str) -> TextSide:
        """The search core's view of this side; ``where`` locates it in the request."""
        return TextSide(self.text, f"{where}.text")


class ImageQuery(_Request):
    """An image file in base64, embedded by the variant's image tower."""

    image: Base64Image

    def side(self, where: str) -> ImageSide:
        """The search core's view of this side; ``where`` locates it in the request."""
        return ImageSide(ImagePayload(f"{where}.image", self.image))


class ItemQuery(_Request):
    """A stored item: its bundle vector, from either collection of the variant."""

    item: ItemRef

    def side(self, where: str) -> ItemSide:  # noqa: ARG002 - items are named by their ids
        """The search core's view of this side."""
        return ItemSide(self.item.collection, self.item.id)


class VectorQuery(_Request):
    """An embedding the client made itself with the same variant."""

    vector: QueryVector

    def side(self, where: str) -> VectorSide:
        """The search core's view of this side; ``where`` locates it in the request."""
        return VectorSide(self.vector, f"{where}.vector")


def one_key_tag(members: Mapping[str, type[BaseModel]]) -> Callable[[Any], str | None]:
    """The discriminator of a union whose members each hold one required key named for its tag:
    a dict's tag is the one member key it holds (None: none or several), a model's its class's."""

    def tag(value: Any) -> str | None:
        if isinstance(value, dict):
            given = [key for key in members if key in value]
            return given[0] if len(given) == 1 else None
        return next((key for key, cls in members.items() if isinstance(value, cls)), None)

    return tag


_query_kind = one_key_tag(
    {"text": TextQuery, "image": ImageQuery, "item": ItemQuery, "vector": VectorQuery}
)


QueryInput = Annotated[
    Annotated[TextQuery, Tag("text")]
    | Annotated[ImageQuery, Tag("image")]
    | Annotated[ItemQuery, Tag("item")]
    | Annotated[VectorQuery, Tag("vector")],
    Discriminator(
        _query_kind,
        custom_error_type="query_kind",
        custom_error_message="give exactly one of 'text', 'image', 'item' or 'vector'",
    ),
    Field(
        description="One side of a query: exactly one of `text` (embedded by the variant's text "
        "tower), `image` (base64 file bytes, embedded by its image tower), `item` (the item's "
        "stored vector, from either collection) or `vector` (an embedding the client made "
        "itself with the same variant).",
        examples=[{"text": "a dog on a couch"}, {"item": EXAMPLE_ITEM}],
    ),
]
"""One side of a query, a tagged union on the wire: ``{"text": ...}``, ``{"image": ...}``,
``{"item": ...}`` or ``{"vector": ...}``; the OpenAPI document says exactly that (``oneOf``)."""


def text_too_long(where: str, text: str, max_text_chars: int) -> ServiceError | None:
    """The invalid_input error of a text at ``where`` longer than ``max_text_chars``, or None."""
    if len(text) > max_text_chars:
        return ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{where}: {len(text)} characters, more than max_text_chars={max_text_chars}",
        )
    return None


def check_page_limits(k: int, offset: int, *, max_k: int, max_offset: int) -> None:
    """Raise ``ServiceError`` invalid_input when ``k`` or ``offset`` is past its limit."""
    if k > max_k:
        raise ServiceError(ErrorCode.INVALID_INPUT, f"k: {k} is more than max_k={max_k}")
    if offset > max_offset:
        raise ServiceError(
            ErrorCode.INVALID_INPUT, f"offset: {offset} is more than max_offset={max_offset}"
        )


def _check_query_side(where: str, query: QueryInput, settings: Settings) -> None:
    if isinstance(query, TextQuery) and (
        error := text_too_long(f"{where}.text", query.text, settings.max_text_chars)
    ):
        raise error
    if isinstance(query, ImageQuery):
        check_base64_length(f"{where}.image", query.image, settings)


def _check_image_count(where: str, count: int, settings: Settings) -> None:
    if count > settings.max_images_per_request:
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{where}: {count} images, more than "
            f"max_images_per_request={settings.max_images_per_request}",
        )


class SearchParams(_Request):
    """Per-search parameters of an approximate index, or an exact search instead of it."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"nprobe": 32}, {"ef_search": 128}, {"exact": True}]}
    )

    nprobe: JsonInteger | None = Field(
        default=None,
        ge=1,
        description="Inverted lists an IVF index scans (1..max_nprobe and at most the index's "
        "nlist); more finds more of the exact answers, slower. 422 "
        "search_param_not_applicable on an index that is not IVF.",
    )
    ef_search: JsonInteger | None = Field(
        default=None,
        ge=1,
        description="Candidates an HNSW index explores (1..max_ef_search); more finds more of "
        "the exact answers, slower. 422 search_param_not_applicable on an index that is not "
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

    def check_limits(self, where: str, settings: Settings) -> None:
        """Raise ``ServiceError`` invalid_input for ``nprobe`` above ``max_nprobe`` or
        ``ef_search`` above ``max_ef_search``."""
        if self.nprobe is not None and self.nprobe > settings.max_nprobe:
            raise ServiceError(
                ErrorCode.INVALID_INPUT,
                f"{where}.nprobe: {self.nprobe} is more than max_nprobe={settings.max_nprobe}",
            )
        if self.ef_search is not None and self.ef_search > settings.max_ef_search:
            raise ServiceError(
                ErrorCode.INVALID_INPUT,
                f"{where}.ef_search: {self.ef_search} is more than "
                f"max_ef_search={settings.max_ef_search}",
            )


class SearchOptions(_Request):
    """What a search asks for besides its query (shared by the JSON and the upload route)."""

    collection: str = Field(
        min_length=1,
        description="Collection to search: its qualified name '<bundle>:<collection>' "
        "(GET /v1/collections), or its bare name when one served collection of that name can "
        "answer the query (else 422 listing the choices).",
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
        "exists; and/or/not combine filters.",
        examples=[
            {
                "and": [
                    {"field": "category", "in": ["shoes", "bags"]},
                    {"field": "price", "range": {"gte": 10, "lt": 50}},
                ]
            }
        ],
    )

    search_params: SearchParams | None = Field(
        default=None,
        description="Override the collection's search parameters for this search (its "
        "defaults: GET /v1/collections): nprobe for an IVF index, ef_search for an HNSW one, "
        "or exact=true for the exact answers whatever the index. Omitted: the defaults.",
        examples=[{"nprobe": 32}, {"exact": True}],
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

    def check_limits(self, settings: Settings) -> None:
        """Raise ``ServiceError`` invalid_input when a settings limit is exceeded."""
        check_page_limits(self.k, self.offset, max_k=settings.max_k, max_offset=settings.max_offset)
        if self.filter is not None:
            check_filter_limits("filter", self.filter, settings)
        if len(self.exclude) > settings.max_exclude:
            raise ServiceError(
                ErrorCode.INVALID_INPUT,
                f"exclude: {len(self.exclude)} ids, more than max_exclude={settings.max_exclude}",
            )
        if self.search_params is not None:
            self.search_params.check_limits("search_params", settings)


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

    def check_limits(self, settings: Settings) -> None:
        """Raise ``ServiceError`` when a settings limit is exceeded: invalid_input (422) for
        ``k``, ``exclude`` and text length, payload_too_large (413) for an image's base64
        length. Nothing is decoded or encoded."""
        super().check_limits(settings)
        _check_query_side("query", self.query, settings)


class BulkSearchRequest(_Request):
    """``POST /v1/search/bulk``: many searches in one request, answered in order."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "searches": [
                        {"query": {"text": "a dog on a couch"}, "collection": "captions", "k": 5},
                        {"query": {"item": EXAMPLE_ITEM}, "collection": "captions", "k": 5},
                    ]
                }
            ]
        }
    )

    searches: list[SearchRequest] = Field(
        min_length=1,
        description="1..max_bulk_searches searches, each exactly a POST /v1/search body.",
    )

    def check_limits(self, settings: Settings) -> None:
        """Raise ``ServiceError`` when the request, or any of its searches, exceeds a settings
        limit (see :meth:`SearchRequest.check_limits`): the number of searches and of their image
        sides. Nothing is run."""
        if len(self.searches) > settings.max_bulk_searches:
            raise ServiceError(
                ErrorCode.INVALID_INPUT,
                f"searches: {len(self.searches)} searches, more than "
                f"max_bulk_searches={settings.max_bulk_searches}",
            )
        images = sum(isinstance(search.query, ImageQuery) for search in self.searches)
        _check_image_count("searches", images, settings)
        for index, search in enumerate(self.searches):
            try:
                search.check_limits(settings)
            except ServiceError as error:
                raise ServiceError(error.code, f"searches.{index}.{error.message}") from None

    def check_vector_lengths(self, dims: set[int]) -> None:
        """Raise ``ServiceError`` invalid_input for a ``vector`` query whose length no served
        variant has, when they all share one dimension (the document then states that length:
        such a request is malformed as a whole, not one search that fails)."""
        if len(dims) != 1:
            return
        (dim,) = dims
        for index, search in enumerate(self.searches):
            if isinstance(search.query, VectorQuery) and len(search.query.vector) != dim:
                raise ServiceError(
                    ErrorCode.INVALID_INPUT,
                    f"searches.{index}.query.vector: {len(search.query.vector)} numbers, but "
                    f"every served variant embeds in {dim} dimensions",
                )

    def jobs(self) -> list[SearchJob]:
        """The searches as the search core takes them."""
        return [
            SearchJob(
                variant=search.variant,
                collection=search.collection,
                side=search.query.side(f"searches.{index}.query"),
                page=search.page(f"searches.{index}.filter"),
                where=f"searches.{index}",
            )
            for index, search in enumerate(self.searches)
        ]


def _json_object(value: Any) -> Any:
    # A form field is text: a JSON object there is parsed; anything else is left to the model.
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise ValueError("must be a JSON object") from None
    return value


class SearchUploadForm(SearchOptions):
    """The form fields of ``POST /v1/search/upload`` (besides the ``file`` part).

    Form values arrive as strings, so this model converts them (``k=5``,
    ``include_metadata=false``); ``exclude`` may repeat. Unknown fields are refused.
    """

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    search_params: Annotated[SearchParams | None, BeforeValidator(_json_object)] = Field(
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


class ScorePair(_Request):
    """Two sides whose similarity is wanted."""

    left: QueryInput
    right: QueryInput


class ScoreRequest(_Request):
    """``POST /v1/score``: cosine similarity of each pair, in order."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"pairs": [{"left": {"text": "a dog on a couch"}, "right": {"item": EXAMPLE_ITEM}}]}
            ]
        }
    )

    pairs: list[ScorePair] = Field(min_length=1, description="1..max_score_pairs pairs.")
    variant: str | None = Field(default=None, description="Encoder variant; default if omitted.")

    def sides(self) -> list[tuple[str, QueryInput]]:
        """Every side in request order (left, right of each pair), with its location."""
        return [
            (f"pairs.{index}.{name}", side)
            for index, pair in enumerate(self.pairs)
            for name, side in (("left", pair.left), ("right", pair.right))
        ]

    def core_sides(self) -> list[QuerySide]:
        """Every side in request order, as the search core takes them."""
        return [side.side(where) for where, side in self.sides()]

    def check_limits(self, settings: Settings) -> None:
        """Raise ``ServiceError`` when a settings limit is exceeded: invalid_input (422) for the
        number of pairs, of image sides and for text length, payload_too_large (413) for an
        image's base64 length. Nothing is decoded or encoded."""
        if len(self.pairs) > settings.max_score_pairs:
            raise ServiceError(
                ErrorCode.INVALID_INPUT,
                f"pairs: {len(self.pairs)} pairs, more than "
                f"max_score_pairs={settings.max_score_pairs}",
            )
        sides = self.sides()
        images = sum(isinstance(side, ImageQuery) for _, side in sides)
        _check_image_count("pairs", images, settings)
        for where, side in sides:
            _check_query_side(where, side, settings)


class EmbedTexts(_Request):
    """``POST /v1/embed`` with texts: one embedding each, from the variant's text tower."""

    texts: list[QueryText] = Field(min_length=1, description="1..max_embed_inputs texts.")
    variant: str | None = Field(default=None, description="Encoder variant; default if omitted.")

    def check_limits(self, settings: Settings) -> None:
        """Raise ``ServiceError`` invalid_input (422) for the number of texts or a text's
        length. Nothing is encoded."""
        if len(self.texts) > settings.max_embed_inputs:
            raise ServiceError(
                ErrorCode.INVALID_INPUT,
                f"texts: {len(self.texts)} texts, more than "
                f"max_embed_inputs={settings.max_embed_inputs}",
            )
        for index, text in enumerate(self.texts):
            if error := text_too_long(f"texts.{index}", text, settings.max_text_chars):
                raise error


class EmbedImages(_Request):
    """``POST /v1/embed`` with images: one embedding each, from the variant's image tower."""

    images: list[Base64Image] = Field(
        min_length=1, description="1..max_images_per_request base64 image files."
    )
    variant: str | None = Field(default=None, description="Encoder variant; default if omitted.")

    def check_limits(self, settings: Settings) -> None:
        """Raise ``ServiceError`` invalid_input (422) for the number of images, an image
        refusal payload_too_large (413) for an image's base64 length. Nothing is decoded."""
        _check_image_count("images", len(self.images), settings)
        for index, image in enumerate(self.images):
            check_base64_length(f"images.{index}", image, settings)


_embed_kind = one_key_tag({"texts": EmbedTexts, "images": EmbedImages})


EmbedRequest = Annotated[
    Annotated[EmbedTexts, Tag("texts")] | Annotated[EmbedImages, Tag("images")],
    Discriminator(
        _embed_kind,
        custom_error_type="embed_kind",
        custom_error_message="give exactly one of 'texts' or 'images'",
    ),
    Body(examples=[{"texts": ["a dog on a couch"]}]),
]
"""``POST /v1/embed``: ``{"texts": [...]}`` or ``{"images": [...]}`` (with an optional
``variant``), a tagged union the OpenAPI document states as ``oneOf``."""


# -- responses ------------------------------------------------------------------------------------


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


class SearchResponse(BaseModel):
    """Hits ordered by score descending, then bundle row ascending (the tie rule)."""

    results: list[SearchResult]
    collection: str
    variant: str
    bundle: str
    bundle_version: str
    next_offset: int | None = Field(
        default=None,
        description="The offset of the next page; null when this page reaches the last result.",
    )
    search_params: AppliedSearchParams = Field(
        default_factory=lambda: AppliedSearchParams(),
        description="The search parameters used (the collection's defaults unless the request "
        "overrode them); {} for a flat index.",
    )
    timings_ms: Timings


class SearchPageResult(BaseModel):
    """One search's answer in a bulk response (a search response without timings)."""

    results: list[SearchResult]
    collection: str
    variant: str
    bundle: str
    bundle_version: str
    next_offset: int | None
    search_params: AppliedSearchParams = Field(
        default_factory=lambda: AppliedSearchParams(),
        description="The search parameters used; {} for a flat index.",
    )


class BulkError(BaseModel):
    """Why one search of a bulk request failed."""

    code: str
    message: str


class BulkItem(BaseModel):
    """The answer to one search of a bulk request: ``status`` 200 with its ``result``, or the
    status and ``error`` a lone POST /v1/search would have answered."""

    status: int
    result: SearchPageResult | None = None
    error: BulkError | None = None


class BulkSearchResponse(BaseModel):
    """One answer per search, in request order, and the request's stage times."""

    responses: list[BulkItem]
    timings_ms: Timings


class ScoreResponse(BaseModel):
    """One cosine similarity per requested pair, in request order."""

    scores: list[float]
    variant: str
    bundle_version: str | None = Field(
        description="Version of the bundle whose stored vectors were used (comma-joined when "
        "several); null when every side was a text."
    )
    timings_ms: Timings


class EmbedResponse(BaseModel):
    """Float32 embeddings ``[len(texts or images), dim]`` as JSON numbers, L2-normalised rows,
    in request order."""

    embeddings: list[list[float]]
    dim: int
    variant: str


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
        "variant can answer it (422 listing the qualified names when several can)."
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


class CollectionsResponse(BaseModel):
    """Every served collection."""

    collections: list[CollectionInfo]


class StatusResponse(BaseModel):
    """Liveness / readiness answer."""

    status: str


class ErrorDetail(BaseModel):
    """What went wrong; ``code`` is one of the codes in docs/contracts.md."""

    code: str
    message: str
    request_id: str


class ErrorResponse(BaseModel):
    """The one error shape of every non-2xx answer."""

    error: ErrorDetail


# -- admin ----------------------------------------------------------------------------------------

BundleName = Annotated[
    str, Field(min_length=1, max_length=128, description="A served bundle's name.")
]
BundleVersion = Annotated[
    str,
    Field(
        pattern=VERSION_PATTERN.pattern,
        description="A version folder of the bundle (need not be the one CURRENT names).",
    ),
]


class ReloadRequest(_Request):
    """``POST /v1/admin/reload``: which bundle version(s) to load. Empty (or no body): read every
    served bundle's CURRENT again. ``bundle`` alone: that bundle's CURRENT. ``bundle`` and
    ``version``: that version."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{}, {"bundle": "coco-captions"}],
            # 'version' needs 'bundle' (a name, not null): the document says what the check says.
            "dependentSchemas": {
                "version": {"required": ["bundle"], "properties": {"bundle": {"type": "string"}}}
            },
        }
    )

    bundle: BundleName | None = None
    version: BundleVersion | None = None

    @model_validator(mode="after")
    def _version_needs_bundle(self) -> ReloadRequest:
        if self.version is not None and self.bundle is None:
            raise ValueError("'version' needs 'bundle'")
        return self


class ReloadedBundle(BaseModel):
    """One served bundle after a reload."""

    bundle: str
    previous_version: str
    version: str
    changed: bool = Field(description="Whether another version serves now.")


class ReloadResponse(BaseModel):
    """What the reload did; a new store serves from now on when any bundle ``changed``."""

    bundles: list[ReloadedBundle]
    load_ms: float = Field(description="Time spent loading and verifying, in milliseconds.")
    workers: int = Field(
        description="Worker processes serving these versions when the answer was sent: all of "
        "them, unless one could not load them or had not within reload_broadcast_timeout_s "
        "(the log names it)."
    )
