"""``POST /v1/embed``: texts or images, and their embeddings."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body
from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    Tag,
)

from service.http.schemas.wire import Base64Image, QueryText, StrictRequest, one_key_tag


class EmbedTexts(StrictRequest):
    """``POST /v1/embed`` with texts: one embedding each, from the variant's text tower."""

    texts: list[QueryText] = Field(min_length=1, description="1..max_embed_inputs texts.")
    variant: str | None = Field(default=None, description="Encoder variant; default if omitted.")


class EmbedImages(StrictRequest):
    """``POST /v1/embed`` with images: one embedding each, from the variant's image tower."""

    images: list[Base64Image] = Field(
        min_length=1, description="1..max_images_per_request base64 image files."
    )
    variant: str | None = Field(default=None, description="Encoder variant; default if omitted.")


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


class EmbedResponse(BaseModel):
    """Float32 embeddings ``[len(texts or images), dim]`` as JSON numbers, L2-normalised rows,
    in request order."""

    embeddings: list[list[float]]
    dim: int
    variant: str
