"""Request limits: the one place a validated request is held to the settings' limits.

The models (:mod:`service.http.schemas`) check what does not depend on settings; what does —
``max_k``, ``max_offset``, ``max_scroll_limit``, ``max_exclude``, ``max_window``, ``max_nprobe``,
``max_ef_search``, the filter's size, text lengths, the number of searches, pairs, texts and
images, a base64 image's length — is checked here, once per request, by :func:`check_limits`,
before anything is decoded, encoded or searched: the JSON routes' handler
(:class:`service.http.routes.json_route.JsonRoute`) calls it right after validating the body,
the upload route after reading its form. Every refusal names where in the request it is
(``searches.3.query.text``): 422 ``invalid_input``, or 413 ``payload_too_large`` for a base64
image longer than ``max_image_bytes`` allows. The one limit the catalog sets, a ``vector``'s
length where every served variant has the same dimension (the served document states it), is
:func:`check_vector_lengths`, which the search, bulk and score routes call with the catalog they
serve from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel

from service.engine.query.filter_grammar import check_filter_limits
from service.engine.query.images import check_base64_length
from service.http.errors import ErrorCode, ServiceError
from service.http.schemas.bulk import BulkSearchRequest
from service.http.schemas.collections import (
    CountRequest,
    DeleteRequest,
    GetRequest,
    ScrollRequest,
    UpsertRequest,
)
from service.http.schemas.embed import EmbedImages, EmbedTexts
from service.http.schemas.openai_compat import EmbeddingsRequest
from service.http.schemas.queries import ImageQuery, QueryInput, TextQuery, VectorQuery
from service.http.schemas.score import ScoreRequest
from service.http.schemas.search import (
    SearchOptions,
    SearchParams,
    SearchRequest,
    SearchUploadForm,
)
from service.settings import Settings


def _refuse(message: str) -> ServiceError:
    """invalid_input; ``message`` starts with where in the request the fault is
    (``searches.3.k: ...``), and that location is the error's ``param``."""
    location, _, _ = message.partition(": ")
    return ServiceError(ErrorCode.INVALID_INPUT, message, param=location)


def text_too_long(where: str, text: str, max_text_chars: int) -> ServiceError | None:
    """The invalid_input error of a text at ``where`` longer than ``max_text_chars``, or None."""
    if len(text) > max_text_chars:
        return _refuse(
            f"{where}: {len(text)} characters, more than max_text_chars={max_text_chars}"
        )
    return None


def check_page_limits(k: int, offset: int, *, max_k: int, max_offset: int, where: str = "") -> None:
    """Raise invalid_input when ``k`` or ``offset`` is past its limit."""
    if k > max_k:
        raise _refuse(f"{where}k: {k} is more than max_k={max_k}")
    if offset > max_offset:
        raise _refuse(f"{where}offset: {offset} is more than max_offset={max_offset}")


def _check_count(where: str, count: int, what: str, setting: str, limit: int) -> None:
    if count > limit:
        raise _refuse(f"{where}: {count} {what}, more than {setting}={limit}")


def _check_side(where: str, query: QueryInput, settings: Settings) -> None:
    if isinstance(query, TextQuery) and (
        error := text_too_long(f"{where}.text", query.text, settings.max_text_chars)
    ):
        raise error
    if isinstance(query, ImageQuery):
        check_base64_length(f"{where}.image", query.image, settings)


def _check_search_params(where: str, params: SearchParams, settings: Settings) -> None:
    if params.nprobe is not None and params.nprobe > settings.max_nprobe:
        raise _refuse(
            f"{where}.nprobe: {params.nprobe} is more than max_nprobe={settings.max_nprobe}"
        )
    if params.ef_search is not None and params.ef_search > settings.max_ef_search:
        raise _refuse(
            f"{where}.ef_search: {params.ef_search} is more than "
            f"max_ef_search={settings.max_ef_search}"
        )


def _check_options(options: SearchOptions, settings: Settings, prefix: str = "") -> None:
    check_page_limits(
        options.k,
        options.offset,
        max_k=settings.max_k,
        max_offset=settings.max_offset,
        where=prefix,
    )
    if options.filter is not None:
        check_filter_limits(f"{prefix}filter", options.filter, settings)
    _check_count(
        f"{prefix}exclude", len(options.exclude), "ids", "max_exclude", settings.max_exclude
    )
    if options.search_params is not None:
        _check_search_params(f"{prefix}search_params", options.search_params, settings)


def _check_search(request: SearchRequest, settings: Settings, prefix: str = "") -> None:
    _check_options(request, settings, prefix)
    _check_side(f"{prefix}query", request.query, settings)
    if request.window is not None and request.window > settings.max_window:
        raise _refuse(
            f"{prefix}window: {request.window} is more than max_window={settings.max_window}"
        )
    keywords = None if request.lexical is None else request.lexical.text
    if keywords is not None and (
        error := text_too_long(f"{prefix}lexical.text", keywords, settings.max_text_chars)
    ):
        raise error


def _check_bulk(request: BulkSearchRequest, settings: Settings) -> None:
    searches = request.searches
    _check_count(
        "searches", len(searches), "searches", "max_bulk_searches", settings.max_bulk_searches
    )
    images = sum(isinstance(search.query, ImageQuery) for search in searches)
    _check_images("searches", images, settings)
    for index, search in enumerate(searches):
        _check_search(search, settings, f"searches.{index}.")


def _check_images(where: str, count: int, settings: Settings) -> None:
    _check_count(where, count, "images", "max_images_per_request", settings.max_images_per_request)


def _check_score(request: ScoreRequest, settings: Settings) -> None:
    _check_count("pairs", len(request.pairs), "pairs", "max_score_pairs", settings.max_score_pairs)
    sides = request.sides()
    _check_images("pairs", sum(isinstance(side, ImageQuery) for _, side in sides), settings)
    for where, side in sides:
        _check_side(where, side, settings)


def _check_embed_texts(request: EmbedTexts, settings: Settings) -> None:
    texts = request.texts
    _check_count("texts", len(texts), "texts", "max_embed_inputs", settings.max_embed_inputs)
    for index, text in enumerate(texts):
        if error := text_too_long(f"texts.{index}", text, settings.max_text_chars):
            raise error


def _check_embed_images(request: EmbedImages, settings: Settings) -> None:
    _check_images("images", len(request.images), settings)
    for index, image in enumerate(request.images):
        check_base64_length(f"images.{index}", image, settings)


def _check_embeddings(request: EmbeddingsRequest, settings: Settings) -> None:
    inputs = request.inputs
    if request.modality == "image":
        _check_images("input", len(inputs), settings)
        for index, image in enumerate(inputs):
            check_base64_length(f"input.{index}", image, settings)
        return
    _check_count("input", len(inputs), "texts", "max_embed_inputs", settings.max_embed_inputs)
    for index, text in enumerate(inputs):
        if error := text_too_long(f"input.{index}", text, settings.max_text_chars):
            raise error


def _check_ids(where: str, ids: list[str], settings: Settings) -> None:
    _check_count(where, len(ids), "ids", "max_write_items", settings.max_write_items)
    for index, item_id in enumerate(ids):
        if len(item_id) > settings.max_id_chars:
            raise _refuse(
                f"{where}.{index}: {len(item_id)} characters, more than "
                f"max_id_chars={settings.max_id_chars}"
            )


def _check_upsert(request: UpsertRequest, settings: Settings) -> None:
    items = request.items
    _check_ids("items", [item.id for item in items], settings)
    _check_images("items", sum(item.image is not None for item in items), settings)
    for index, item in enumerate(items):
        if item.text is not None and (
            error := text_too_long(f"items.{index}.text", item.text, settings.max_text_chars)
        ):
            raise error
        if item.image is not None:
            check_base64_length(f"items.{index}.image", item.image, settings)


def _check_delete(request: DeleteRequest, settings: Settings) -> None:
    if request.ids is not None:
        _check_ids("ids", request.ids, settings)
    if request.filter is not None:
        check_filter_limits("filter", request.filter, settings)


def _check_get(request: GetRequest, settings: Settings) -> None:
    _check_ids("ids", request.ids, settings)


def _check_scroll(request: ScrollRequest, settings: Settings) -> None:
    if request.limit > settings.max_scroll_limit:
        raise _refuse(
            f"limit: {request.limit} is more than max_scroll_limit={settings.max_scroll_limit}"
        )
    if request.filter is not None:
        check_filter_limits("filter", request.filter, settings)


def _check_items_count(request: CountRequest, settings: Settings) -> None:
    if request.filter is not None:
        check_filter_limits("filter", request.filter, settings)


_CHECKS: dict[type[BaseModel], Callable[[Any, Settings], None]] = {
    UpsertRequest: _check_upsert,
    DeleteRequest: _check_delete,
    GetRequest: _check_get,
    ScrollRequest: _check_scroll,
    CountRequest: _check_items_count,
    SearchRequest: _check_search,
    SearchUploadForm: _check_options,
    BulkSearchRequest: _check_bulk,
    ScoreRequest: _check_score,
    EmbedTexts: _check_embed_texts,
    EmbedImages: _check_embed_images,
    EmbeddingsRequest: _check_embeddings,
}


def _query_sides(request: BaseModel) -> list[tuple[str, QueryInput]]:
    """Every query side of a search, bulk or score request, with its location."""
    if isinstance(request, SearchRequest):
        return [("query", request.query)]
    if isinstance(request, BulkSearchRequest):
        return [(f"searches.{n}.query", search.query) for n, search in enumerate(request.searches)]
    if isinstance(request, ScoreRequest):
        return request.sides()
    return []


def check_vector_lengths(request: BaseModel, dims: Iterable[int]) -> None:
    """Raise invalid_input for a ``vector`` side whose length is not the one dimension every
    served variant embeds in (``dims``: the served variants' dimensions). The served document
    then states that length, so such a request breaks it whatever it names; where variants
    differ the document cannot, and the engine refuses a vector that does not fit the variant
    it reaches (409 ``dimension_mismatch``)."""
    served = set(dims)
    if len(served) != 1:
        return
    (dim,) = served
    for where, side in _query_sides(request):
        if isinstance(side, VectorQuery) and len(side.vector) != dim:
            raise _refuse(
                f"{where}.vector: {len(side.vector)} numbers, but every served variant embeds "
                f"in {dim} dimensions"
            )


def check_limits(request: BaseModel, settings: Settings) -> None:
    """Hold ``request`` to the settings' limits (see the module); a request type without
    limits passes. Raises :class:`ServiceError` (422), or a domain error the HTTP layer maps:
    :class:`~service.exceptions.InvalidQueryError` (422) for a filter over its size,
    :class:`~service.exceptions.ImageRefusedError` (413) for a base64 image too long."""
    check = _CHECKS.get(type(request))
    if check is not None:
        check(request, settings)
