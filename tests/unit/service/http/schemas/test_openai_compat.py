"""The OpenAI-compatible request: one text or many, token ids refused, data URIs, the schema."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from service.http.schemas.openai_compat import EmbeddingsRequest


def test_a_lone_string_is_one_input() -> None:
    request = EmbeddingsRequest.model_validate({"model": "m", "input": "a cat"})
    assert request.inputs == ["a cat"]
    assert (request.encoding_format, request.modality, request.dimensions) == (
        "float",
        "text",
        None,
    )


@pytest.mark.parametrize("ids", [[1, 2, 3], [[1, 2], [3]]])
def test_token_ids_are_refused_saying_why(ids: list[object]) -> None:
    with pytest.raises(ValidationError, match="token ids"):
        EmbeddingsRequest.model_validate({"model": "m", "input": ids})


@pytest.mark.parametrize("value", [[], [True, False], [1, "a"], [[]]])
def test_other_non_texts_are_plain_validation_errors(value: list[object]) -> None:
    with pytest.raises(ValidationError) as refused:
        EmbeddingsRequest.model_validate({"model": "m", "input": value})
    assert "token ids" not in str(refused.value)


def test_image_inputs_lose_a_data_uri_prefix() -> None:
    request = EmbeddingsRequest.model_validate(
        {"model": "m", "input": ["data:image/png;base64,QUJD", "REVG"], "modality": "image"}
    )
    assert request.inputs == ["QUJD", "REVG"]


def test_a_data_uri_that_is_not_base64_is_refused() -> None:
    with pytest.raises(ValidationError, match="data URI"):
        EmbeddingsRequest.model_validate(
            {"model": "m", "input": "data:image/png,QUJD", "modality": "image"}
        )


def test_texts_keep_a_data_prefix_as_text() -> None:
    request = EmbeddingsRequest.model_validate({"model": "m", "input": "data:not an image"})
    assert request.inputs == ["data:not an image"]


def test_the_schema_states_one_string_or_a_list() -> None:
    schema = EmbeddingsRequest.model_json_schema()["properties"]["input"]
    kinds = [member["type"] for member in schema["anyOf"]]
    assert kinds == ["string", "array"]
    assert schema["anyOf"][1]["minItems"] == 1
