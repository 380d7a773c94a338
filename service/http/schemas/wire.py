"""The wire types every request shares: strict models, texts that are not blank, base64 images,
JSON Schema integers, finite vectors, one-key tagged unions and the examples the document
shows."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
)

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


PositiveJsonInteger = Annotated[int, Field(ge=1), BeforeValidator(_integral)]
"""A :data:`JsonInteger` of at least 1. The bound sits inside the type so that the document
states it (``minimum``) where the field is optional too: ``Field(ge=1)`` on
``JsonInteger | None`` reaches the validator but leaves a bare ``ge`` in the document, which
JSON Schema ignores."""


MAX_DIMENSION = 65_536
"""The largest embedding dimension a live collection may have."""
DimensionInteger = Annotated[int, Field(ge=1, le=MAX_DIMENSION), BeforeValidator(_integral)]
"""An embedding dimension: a :data:`JsonInteger` from 1 to :data:`MAX_DIMENSION`."""


class StrictRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# The document's examples name what `make serve` serves (the demo's bundles): a caption of the
# Karpathy val split (coco-captions), an image of the scenes test split (scenes and
# scenes-efficientnet), and fields both kinds of collection have (image_id, filename).
EXAMPLE_CAPTION_ID = "COCO_val2014:sentid:474921"
EXAMPLE_IMAGE_ID = "scenes_test_000030000001.png"


EXAMPLE_ITEM: dict[str, JsonValue] = {"collection": "captions", "id": EXAMPLE_CAPTION_ID}


EXAMPLE_FILTER: dict[str, JsonValue] = {
    "and": [
        {"field": "image_id", "range": {"gte": 100000, "lt": 500000}},
        {"not": {"field": "filename", "eq": "COCO_val2014_000000184613.jpg"}},
    ]
}


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


def one_key_tag(members: Mapping[str, type[BaseModel]]) -> Callable[[Any], str | None]:
    """The discriminator of a union whose members each hold one required key named for its tag:
    a dict's tag is the one member key it holds (None: none or several), a model's its class's."""

    def tag(value: Any) -> str | None:
        if isinstance(value, dict):
            given = [key for key in members if key in value]
            return given[0] if len(given) == 1 else None
        return next((key for key, cls in members.items() if isinstance(value, cls)), None)

    return tag


def json_object(value: Any) -> Any:
    # A form field is text: a JSON object there is parsed; anything else is left to the model.
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise ValueError("must be a JSON object") from None
    return value
