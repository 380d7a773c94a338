"""Request and response models of the HTTP API v1 (docs/contracts.md).

Requests are strict (``k`` must be a JSON integer: not ``"5"``, ``5.0`` or ``true``) and refuse
unknown fields. Rules that do not depend on settings live in the models; the limits that do
(``max_k``, ``max_text_chars``, ...) are checked by each request's ``check_limits`` before any
encoding, so one request model serves every configuration.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, model_validator

from index_builder.bundle import VERSION_PATTERN
from service.errors import ErrorCode, ServiceError
from service.images import check_base64_length
from service.settings import Settings


def _text_is_usable(text: str) -> str:
    if not text.strip():
        raise ValueError("must contain a non-whitespace character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # JSON may carry lone surrogates ("\ud800"); no tokenizer accepts them.
        raise ValueError("must be valid Unicode (it holds an unpaired surrogate)") from None
    return text


QueryText = Annotated[str, AfterValidator(_text_is_usable)]
"""A text to embed: not blank, encodable as UTF-8. Its length limit is a setting."""

Base64Image = Annotated[
    str,
    Field(
        min_length=1,
        description="The image file's bytes (JPEG, PNG, WEBP or GIF) in standard, padded base64, "
        "without a data: prefix; at most max_image_bytes once decoded.",
    ),
]
"""An image file in base64. Its size limits are settings, checked before it is decoded."""


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


EXAMPLE_CAPTION_ID = "COCO_val2014:sentid:770337"
EXAMPLE_ITEM: dict[str, JsonValue] = {"collection": "captions", "id": EXAMPLE_CAPTION_ID}


class ItemRef(_Request):
    """A stored item, by collection and id (e.g. ``captions`` / ``COCO_val2014:sentid:770337``)."""

    collection: str = Field(examples=["captions", "images"])
    id: str = Field(examples=[EXAMPLE_CAPTION_ID, "COCO_val2014_000000184613.jpg"])


QueryKind = Literal["text", "image", "item", "vector"]
QUERY_KINDS: tuple[QueryKind, ...] = ("text", "image", "item", "vector")


FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
"""A JSON number that is finite (``NaN``, ``Infinity`` are refused with 422)."""

QueryVector = Annotated[
    list[FiniteFloat],
    Field(
        min_length=1,
        description="Your own embedding in the variant's space: exactly dim finite numbers with a "
        "non-zero norm; it is L2-normalised before searching.",
    ),
]


class QueryInput(_Request):
    """One side of a query: exactly one of ``text`` (embedded by the variant's text tower),
    ``image`` (base64 file bytes, embedded by its image tower), ``item`` (the item's stored
    vector, from either collection) or ``vector`` (an embedding the client made itself with the
    same variant)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"text": "a dog on a couch"}, {"item": EXAMPLE_ITEM}]}
    )

    text: QueryText | None = None
    image: Base64Image | None = None
    item: ItemRef | None = None
    vector: QueryVector | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> QueryInput:
        given = [name for name in QUERY_KINDS if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of 'text', 'image', 'item' or 'vector' (got {len(given)})"
            )
        return self

    @property
    def kind(self) -> QueryKind:
        """Which of the four the side holds."""
        for name in QUERY_KINDS:
            if getattr(self, name) is not None:
                return name
        raise AssertionError("a validated QueryInput holds one side")  # pragma: no cover


def _too_long(where: str, text: str, settings: Settings) -> ServiceError | None:
    if len(text) > settings.max_text_chars:
        return ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{where}: {len(text)} characters, more than max_text_chars={settings.max_text_chars}",
        )
    return None


def _check_query_side(where: str, query: QueryInput, settings: Settings) -> None:
    if query.text is not None and (error := _too_long(f"{where}.text", query.text, settings)):
        raise error
    if query.image is not None:
        check_base64_length(f"{where}.image", query.image, settings)


def _check_image_count(where: str, count: int, settings: Settings) -> None:
    if count > settings.max_images_per_request:
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{where}: {count} images, more than "
            f"max_images_per_request={settings.max_images_per_request}",
        )


class SearchOptions(_Request):
    """What a search asks for besides its query (shared by the JSON and the upload route)."""

    collection: str = Field(
        description="Collection to search: 'captions' or 'images'.",
        examples=["captions", "images"],
    )
    k: int = Field(
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

    def check_limits(self, settings: Settings) -> None:
        """Raise ``ServiceError`` invalid_input when a settings limit is exceeded."""
        if self.k > settings.max_k:
            raise ServiceError(
                ErrorCode.INVALID_INPUT, f"k: {self.k} is more than max_k={settings.max_k}"
            )
        if len(self.exclude) > settings.max_exclude:
            raise ServiceError(
                ErrorCode.INVALID_INPUT,
                f"exclude: {len(self.exclude)} ids, more than max_exclude={settings.max_exclude}",
            )


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


class SearchUploadForm(SearchOptions):
    """The form fields of ``POST /v1/search/upload`` (besides the ``file`` part).

    Form values arrive as strings, so this model converts them (``k=5``,
    ``include_metadata=false``); ``exclude`` may repeat. Unknown fields are refused.
    """

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)


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
        _check_image_count("pairs", sum(side.image is not None for _, side in sides), settings)
        for where, side in sides:
            _check_query_side(where, side, settings)


class EmbedRequest(_Request):
    """``POST /v1/embed``: embeddings of texts or of images (exactly one of the two)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"texts": ["a dog on a couch"]}]})

    texts: list[QueryText] | None = Field(
        default=None, min_length=1, description="1..max_embed_inputs texts."
    )
    images: list[Base64Image] | None = Field(
        default=None, min_length=1, description="1..max_images_per_request base64 image files."
    )
    variant: str | None = Field(default=None, description="Encoder variant; default if omitted.")

    @model_validator(mode="after")
    def _exactly_one(self) -> EmbedRequest:
        if (self.texts is None) == (self.images is None):
            raise ValueError("give exactly one of 'texts' or 'images'")
        return self

    def check_limits(self, settings: Settings) -> None:
        """Raise ``ServiceError`` when a settings limit is exceeded: invalid_input (422) for the
        number of texts or images and for text length, payload_too_large (413) for an image's
        base64 length. Nothing is decoded or encoded."""
        if self.texts is not None:
            if len(self.texts) > settings.max_embed_inputs:
                raise ServiceError(
                    ErrorCode.INVALID_INPUT,
                    f"texts: {len(self.texts)} texts, more than "
                    f"max_embed_inputs={settings.max_embed_inputs}",
                )
            for index, text in enumerate(self.texts):
                if error := _too_long(f"texts.{index}", text, settings):
                    raise error
        if self.images is not None:
            _check_image_count("images", len(self.images), settings)
            for index, image in enumerate(self.images):
                check_base64_length(f"images.{index}", image, settings)


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


class VariantsResponse(BaseModel):
    """Every loaded variant."""

    variants: list[VariantInfo]


class CollectionInfo(BaseModel):
    """A served collection."""

    name: str
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

    model_config = ConfigDict(json_schema_extra={"examples": [{}, {"bundle": "coco-captions"}]})

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
