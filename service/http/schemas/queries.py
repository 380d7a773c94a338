"""One side of a query on the wire — ``{"text"}``, ``{"image"}``, ``{"item"}`` or ``{"vector"}``
— and its view in the engine (:mod:`service.engine.query.query`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    Discriminator,
    Field,
    Tag,
)

from service.engine.query.images import ImagePayload
from service.engine.query.query import (
    ImageSide,
    ItemSide,
    TextSide,
    VectorSide,
)
from service.http.schemas.wire import (
    EXAMPLE_CAPTION_ID,
    EXAMPLE_IMAGE_ID,
    EXAMPLE_ITEM,
    Base64Image,
    QueryText,
    QueryVector,
    StrictRequest,
    one_key_tag,
)


class ItemRef(StrictRequest):
    """A stored item, by collection and id (e.g. ``captions`` / ``COCO_val2014:sentid:474921``)."""

    # The demo serves two collections named 'images' (bundles scenes and scenes-efficientnet):
    # the image example names its collection qualified, so that it is not ambiguous there.
    collection: str = Field(examples=["captions", "scenes:images"])
    id: str = Field(examples=[EXAMPLE_CAPTION_ID, EXAMPLE_IMAGE_ID])


class TextQuery(StrictRequest):
    """A text, embedded by the variant's text tower."""

    text: QueryText

    def side(self, where: str) -> TextSide:
        """The search core's view of this side; ``where`` locates it in the request."""
        return TextSide(self.text, f"{where}.text")


class ImageQuery(StrictRequest):
    """An image file in base64, embedded by the variant's image tower."""

    image: Base64Image

    def side(self, where: str) -> ImageSide:
        """The search core's view of this side; ``where`` locates it in the request."""
        return ImageSide(ImagePayload(f"{where}.image", self.image))


class ItemQuery(StrictRequest):
    """A stored item: its bundle vector, from either collection of the variant."""

    item: ItemRef

    def side(self, where: str) -> ItemSide:
        """The search core's view of this side; ``where`` locates it in the request."""
        return ItemSide(self.item.collection, self.item.id, f"{where}.item")


class VectorQuery(StrictRequest):
    """An embedding the client made itself with the same variant."""

    vector: QueryVector

    def side(self, where: str) -> VectorSide:
        """The search core's view of this side; ``where`` locates it in the request."""
        return VectorSide(self.vector, f"{where}.vector")


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
