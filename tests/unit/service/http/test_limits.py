"""check_limits: every settings limit of every request type, each refusal naming its place."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from service.exceptions import ImageRefusedError, InvalidQueryError
from service.http.errors import ErrorCode, ServiceError
from service.http.limits import check_limits
from service.http.schemas.bulk import BulkSearchRequest
from service.http.schemas.embed import EmbedImages, EmbedTexts
from service.http.schemas.score import ScoreRequest
from service.http.schemas.search import SearchRequest, SearchUploadForm
from service.settings import Settings

SETTINGS = Settings(
    max_k=10,
    max_offset=20,
    max_exclude=2,
    max_nprobe=8,
    max_ef_search=100,
    max_text_chars=12,
    max_bulk_searches=3,
    max_score_pairs=2,
    max_embed_inputs=2,
    max_images_per_request=1,
    max_filter_conditions=2,
    max_image_bytes=30,
)
TEXT = {"text": "a dog"}


def search(**changes: Any) -> dict[str, Any]:
    return {"query": TEXT, "collection": "captions", **changes}


def refusal(request: BaseModel) -> str:
    with pytest.raises((ServiceError, InvalidQueryError, ImageRefusedError)) as caught:
        check_limits(request, SETTINGS)
    return str(caught.value)


def test_a_request_within_every_limit_passes() -> None:
    check_limits(
        SearchRequest.model_validate(
            search(k=10, offset=20, exclude=["a", "b"], search_params={"nprobe": 8})
        ),
        SETTINGS,
    )
    check_limits(EmbedTexts.model_validate({"texts": ["twelve chars"] * 2}), SETTINGS)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (search(k=11), "k: 11 is more than max_k=10"),
        (search(offset=21), "offset: 21 is more than max_offset=20"),
        (search(exclude=["a", "b", "c"]), "exclude: 3 ids, more than max_exclude=2"),
        (search(search_params={"nprobe": 9}), "search_params.nprobe: 9 is more than max_nprobe=8"),
        (search(search_params={"ef_search": 101}), "max_ef_search=100"),
        (search(query={"text": "thirteen char"}), "query.text: 13 characters"),
        (
            search(filter={"and": [{"field": "a", "exists": True}] * 3}),
            "filter: 4 conditions, more than max_filter_conditions=2",
        ),
        (search(query={"image": "A" * 44}), "query.image: 44 base64 characters"),
    ],
)
def test_a_search_over_a_limit_is_refused_where_it_is(body: dict[str, Any], message: str) -> None:
    assert message in refusal(SearchRequest.model_validate(body))


def test_a_search_over_a_limit_is_a_422_and_an_image_over_its_bytes_a_413() -> None:
    with pytest.raises(ServiceError) as caught:
        check_limits(SearchRequest.model_validate(search(k=11)), SETTINGS)
    assert caught.value.code is ErrorCode.INVALID_INPUT
    with pytest.raises(ImageRefusedError) as refused:
        check_limits(SearchRequest.model_validate(search(query={"image": "A" * 44})), SETTINGS)
    assert refused.value.reason == "too_many_bytes"


def test_a_bulk_refusal_names_the_search() -> None:
    bulk = {"searches": [search(), search(k=11)]}
    assert refusal(BulkSearchRequest.model_validate(bulk)).startswith("searches.1.k: 11")
    nested = {"searches": [search(filter={"not": {"not": {"field": "a", "exists": True}}})]}
    assert "searches.0.filter: 3 conditions" in refusal(BulkSearchRequest.model_validate(nested))
    too_many = {"searches": [search()] * 4}
    assert "4 searches, more than max_bulk_searches=3" in refusal(
        BulkSearchRequest.model_validate(too_many)
    )
    images = {"searches": [search(query={"image": "AAAA"})] * 2}
    assert "searches: 2 images, more than max_images_per_request=1" in refusal(
        BulkSearchRequest.model_validate(images)
    )


def test_score_embed_and_upload_limits() -> None:
    pairs = {"pairs": [{"left": TEXT, "right": TEXT}] * 3}
    assert "pairs: 3 pairs, more than max_score_pairs=2" in refusal(
        ScoreRequest.model_validate(pairs)
    )
    long_side = {"pairs": [{"left": TEXT, "right": {"text": "thirteen char"}}]}
    assert "pairs.0.right.text: 13 characters" in refusal(ScoreRequest.model_validate(long_side))
    assert "texts: 3 texts, more than max_embed_inputs=2" in refusal(
        EmbedTexts.model_validate({"texts": ["a"] * 3})
    )
    assert "images: 2 images" in refusal(EmbedImages.model_validate({"images": ["AAAA"] * 2}))
    form = SearchUploadForm.model_validate({"collection": "images", "k": "11"})
    assert "k: 11 is more than max_k=10" in refusal(form)
