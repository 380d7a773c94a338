"""The OpenAI-compatible surface: ``POST /v1/embeddings`` and ``GET /v1/models``.

The request and answer shapes of OpenAI's embeddings API, so the official ``openai`` package and
every framework's "OpenAI-compatible embedder" work unchanged: ``model`` names a served variant,
``input`` is a string or a list of strings, ``encoding_format`` is ``float`` or ``base64``
(little-endian float32, what the ``openai`` package asks for when its caller names none). Two
extensions, infinity's convention: ``modality: "image"`` embeds images (``input`` then holds
data URIs or base64 image files) with the variant's image tower.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from service.http.schemas.wire import QueryText, StrictRequest

_TOKEN_IDS_MESSAGE = (
    "input holds token ids; send the texts themselves: token ids from another tokenizer mean "
    "nothing to this service's encoders (LangChain's OpenAIEmbeddings: set "
    "check_embedding_ctx_length=False)"
)


def _is_token_ids(value: Any) -> bool:
    """Whether ``value`` is a list of integers or a list of lists of integers."""
    if not isinstance(value, list) or not value:
        return False
    rows = value if all(isinstance(row, list) for row in value) else [value]
    return all(
        row and all(isinstance(cell, int) and not isinstance(cell, bool) for cell in row)
        for row in rows
    )


def _string_or_list(schema: dict[str, Any]) -> None:
    """State ``input`` as OpenAI does: one string, or a list of them (in place)."""
    array = dict(schema)
    schema.clear()
    schema["description"] = array.pop("description", "")
    schema["anyOf"] = [dict(array.get("items", {"type": "string"})), array]


class EmbeddingsRequest(StrictRequest):
    """``POST /v1/embeddings``: OpenAI's embeddings request, with ``modality`` for images."""

    model: str = Field(
        min_length=1,
        max_length=200,
        description="A served variant's name (GET /v1/models lists them); unknown: 404.",
    )
    input: list[QueryText] = Field(
        description="A text, or a list of 1..max_embed_inputs texts; with modality 'image', "
        "image files as data URIs (data:image/png;base64,...) or plain base64, "
        "1..max_images_per_request. Token-id arrays are refused (422): they mean nothing to "
        "this service's tokenizers.",
        min_length=1,
        json_schema_extra=_string_or_list,
    )
    encoding_format: Literal["float", "base64"] = Field(
        default="float",
        description="'float': JSON numbers; 'base64': the little-endian float32 bytes of each "
        "embedding, base64-encoded (what the openai package asks for by default).",
    )
    dimensions: int | None = Field(
        default=None,
        ge=1,
        description="Keep the first n values of each embedding and renormalise them. Only where "
        "the variant was trained for such cuts (GET /v1/models: matryoshka_dims) or n is its "
        "full dimension; any other n is refused (422).",
    )
    user: str | None = Field(
        default=None, max_length=256, description="Accepted for compatibility and ignored."
    )
    modality: Literal["text", "image"] = Field(
        default="text",
        description="Extension (infinity's): 'image' embeds images with the variant's image tower.",
    )

    @field_validator("input", mode="before")
    @classmethod
    def _one_or_many_texts(cls, value: Any) -> Any:
        if _is_token_ids(value):
            raise ValueError(_TOKEN_IDS_MESSAGE)
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _data_uris_are_base64(self) -> EmbeddingsRequest:
        if self.modality == "image":
            for index, value in enumerate(self.input):
                _image_base64_of(index, value)
        return self

    @property
    def inputs(self) -> list[str]:
        """The inputs; with modality 'image', each image's base64 (a data URI's prefix taken
        off)."""
        if self.modality == "image":
            return [_image_base64_of(n, value) for n, value in enumerate(self.input)]
        return list(self.input)


def _image_base64_of(index: int, value: str) -> str:
    """The base64 of an image input: a data URI's data (``data:image/png;base64,...``), or the
    input itself; ValueError for a data URI that is not base64."""
    if not value.startswith("data:"):
        return value
    header, comma, data = value.partition(",")
    if not comma or not header.endswith(";base64"):
        raise ValueError(f"input.{index}: a data URI must be 'data:<media type>;base64,<data>'")
    return data


class Embedding(BaseModel):
    """One input's embedding."""

    object: Literal["embedding"] = "embedding"
    index: int = Field(description="The input's position in the request.")
    embedding: list[float] | str = Field(
        description="JSON numbers, or base64 of little-endian float32 (encoding_format)."
    )


class EmbeddingsUsage(BaseModel):
    """Tokens the text tower was fed: after truncation at the variant's max_tokens, special
    tokens included; images count none."""

    prompt_tokens: int
    total_tokens: int


class EmbeddingsResponse(BaseModel):
    """OpenAI's embeddings answer: one :class:`Embedding` per input, in request order."""

    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str = Field(description="The variant that embedded the inputs.")
    usage: EmbeddingsUsage


class Model(BaseModel):
    """A served variant, as OpenAI's models API lists a model (with Crisscross's facts)."""

    id: str = Field(description="The variant's name: the 'model' of /v1/embeddings.")
    object: Literal["model"] = "model"
    created: int = Field(description="When the variant was loaded (Unix seconds).")
    owned_by: str = "crisscross"
    dim: int = Field(description="Embedding dimension.")
    towers: list[str] = Field(description="'text', 'image' or both (modality).")
    matryoshka_dims: list[int] = Field(
        description="Dimensions below dim the variant may be cut to with 'dimensions'."
    )
    max_tokens: int | None = Field(description="The text tower's truncation length in tokens.")
    max_inputs: int | None = Field(
        default=None,
        description="Most texts one /v1/embeddings request may hold for this model "
        "(max_embed_inputs; OpenAI's own limit is 2048); null without a text tower. The body "
        "must also fit max_body_bytes.",
    )
    max_image_inputs: int | None = Field(
        default=None,
        description="Most images one /v1/embeddings request with modality 'image' may hold "
        "(max_images_per_request); null without an image tower.",
    )


class ModelList(BaseModel):
    """``GET /v1/models``: the served variants."""

    object: Literal["list"] = "list"
    data: list[Model]
