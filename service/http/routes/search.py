"""``POST /v1/search`` (JSON: a text, an image or a stored item) and ``POST /v1/search/upload``
(multipart: an image file): nearest items of a collection."""

from __future__ import annotations

from typing import Any

import pydantic_core
from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import ValidationError
from starlette.datastructures import FormData, UploadFile

from service.engine.query.images import ImagePayload, refuse_oversized_file
from service.engine.query.query import ImageSide, SearchQuery
from service.engine.search.searcher import Answer
from service.exceptions import DomainError, ImageRefusedError, quoted
from service.http.consistency import MinSeqHeader, read_consistently
from service.http.dependencies import (
    CatalogDep,
    ContextDep,
    StateDep,
    require_json,
    require_multipart,
)
from service.http.errors import ErrorCode, ServiceError, item_error
from service.http.limits import check_limits, check_vector_lengths
from service.http.routes import AUTH_ERRORS, JSON_BODY_ERRORS, error_responses
from service.http.routes.json_route import JsonRoute
from service.http.schemas.bulk import BulkSearchRequest, BulkSearchResponse
from service.http.schemas.search import (
    SearchRequest,
    SearchResponse,
    SearchUploadForm,
)
from service.http.validation_messages import body_schema, validation_message, validation_param
from service.request_context import RequestContext
from service.settings import BULK_ROUTE, UPLOAD_ROUTE

router = APIRouter(tags=["search"], route_class=JsonRoute)
# The multipart upload route reads its form itself: a plain FastAPI route.
upload_router = APIRouter(tags=["search"])

UPLOAD_FILE_FIELD = "file"
# Form fields besides the file and the repeatable 'exclude': collection, k, variant,
# include_metadata, offset, filter, search_params.
_UPLOAD_PLAIN_FIELDS = 7
# Longest value of one plain form field (an id, a collection or variant name, k).
_UPLOAD_FIELD_MAX_BYTES = 64 * 1024


def _page_result(answer: Answer, include_metadata: bool) -> dict[str, Any]:
    # Plain dicts, serialised without a validation pass: a third cheaper than a model per hit.
    page = answer.page
    return {
        "results": [
            {
                "id": hit.item_id,
                "score": hit.score,
                "rank": hit.rank,
                "metadata": dict(hit.metadata) if include_metadata else None,
            }
            for hit in page.hits
        ],
        "collection": answer.collection,
        "variant": answer.variant,
        "bundle": answer.bundle,
        "bundle_version": answer.bundle_version,
        "next_offset": page.next_offset,
        "search_params": page.params.as_dict(),
        "mode": page.mode,
        "missing_shards": list(answer.missing),
    }


def _timings(context: RequestContext) -> dict[str, float]:
    """The request's :class:`~service.http.schemas.Timings`, as a plain dict."""
    return {
        "decode": context.decode_ms or 0.0,
        "queue": context.queue_ms or 0.0,
        "encode": context.encode_ms or 0.0,
        "search": context.search_ms or 0.0,
        "total": context.elapsed_ms(),
    }


def _response(context: RequestContext, answer: Answer, include_metadata: bool) -> Response:
    document = _page_result(answer, include_metadata)
    document["timings_ms"] = _timings(context)
    # Plain values of known types, serialised in pydantic's core without a validation pass
    # (validating the model took a tenth of the event loop's time per search); the contract
    # tests check answers against SearchResponse.
    return Response(pydantic_core.to_json(document), media_type="application/json")


@router.post(
    "/v1/search",
    response_model=SearchResponse,
    responses=JSON_BODY_ERRORS,
    dependencies=[Depends(require_json)],
    summary="Search a collection with a text, an image or a stored item",
)
async def search(
    body: SearchRequest,
    state: StateDep,
    catalog: CatalogDep,
    context: ContextDep,
    min_seq: MinSeqHeader = None,
) -> Response:
    """Top-``k`` items by cosine similarity, ordered by score descending then bundle row
    ascending. ``k`` above the collection's size (after ``exclude``) returns every row.

    Any query kind searches either collection (text→images, image→captions, item→item...); a
    ``vector`` query searches with the client's own embedding (the variant's dimension,
    finite, non-zero; normalised here).
    Limits are checked before anything is decoded or encoded: a base64 image over
    ``max_image_bytes`` is 413, an image query on a variant without an image tower 409
    ``tower_missing``. Images larger than the JSON body limit allows go to
    ``POST /v1/search/upload``.

    On a replica of a live collection the search sees at least ``X-Min-Seq`` (by default on a
    follower: every write the leader had answered when the search began)."""
    check_vector_lengths(body, state.searcher.vector_dims(catalog))
    await read_consistently(state, [body.collection], min_seq)
    answer = await state.searcher.search(context, catalog, body.to_query())
    return _response(context, answer, body.include_metadata)


@router.post(
    BULK_ROUTE,
    response_model=BulkSearchResponse,
    # What a lone search would refuse with 404 or 409 fails that search only (its own status).
    responses=error_responses(*AUTH_ERRORS, 413, 415, 422, 503),
    dependencies=[Depends(require_json)],
    summary="Many searches in one request",
)
async def search_bulk(
    body: BulkSearchRequest,
    state: StateDep,
    catalog: CatalogDep,
    context: ContextDep,
    min_seq: MinSeqHeader = None,
) -> Response:
    """Each search is a ``POST /v1/search`` body; the answers come in request order, each with
    the status a lone search would have had: 200 with its ``result``, or its own ``error``
    (unknown collection, a filter that does not fit, an image that cannot be decoded...) while
    the others are answered. Limits concern the whole request and are checked before anything
    runs (422/413): ``max_bulk_searches``, ``max_images_per_request``,
    ``max_bulk_body_bytes``, each search's own limits and a vector of a length no served
    variant has; an
    overloaded encoder refuses the whole request (503). Texts are encoded together and
    searches of one collection run as one faiss call, so a bulk request costs far less than as
    many single ones."""
    check_vector_lengths(body, state.searcher.vector_dims(catalog))
    names = list(dict.fromkeys(search.collection for search in body.searches))
    await read_consistently(state, names, min_seq)
    answers = await state.searcher.search_many(context, catalog, body.queries())
    items: list[dict[str, Any]] = [{} for _ in range(body.count)]
    for position in range(body.count):
        if (errors := body.refused(position)) is not None:
            schema = body_schema(BulkSearchRequest)
            error = {
                "code": ErrorCode.INVALID_INPUT.value,
                "message": validation_message(errors, schema),
                "param": validation_param(errors, schema),
            }
            items[position] = {"status": 422, "result": None, "error": error}
    answered = zip(body.positions, body.searches, answers, strict=True)
    for position, search, answer in answered:
        if isinstance(answer, DomainError):
            status, error = item_error(answer)
            items[position] = {"status": status, "result": None, "error": error}
        else:
            result = _page_result(answer, search.include_metadata)
            items[position] = {"status": 200, "result": result, "error": None}
    # Built here from plain values of known types and serialised without a validation pass: at
    # 256 searches x k=1000 validating the response model took 0.8 s, serialising it 0.14 s.
    # The contract test checks answers against BulkSearchResponse.
    document = {"responses": items, "timings_ms": _timings(context)}
    return Response(pydantic_core.to_json(document), media_type="application/json")


def _upload_form(form: FormData) -> tuple[UploadFile, SearchUploadForm]:
    """The file part and the validated fields of an upload form; ``ServiceError``
    invalid_input naming the field at fault. Empty field values count as not given."""
    files = form.getlist(UPLOAD_FILE_FIELD)
    if not files:
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{UPLOAD_FILE_FIELD}: missing; send the image as the multipart file part "
            f"{UPLOAD_FILE_FIELD!r} (with a filename)",
            param=UPLOAD_FILE_FIELD,
        )
    if len(files) > 1 or not isinstance(files[0], UploadFile):
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{UPLOAD_FILE_FIELD}: must be exactly one file part (Content-Disposition with a "
            "filename), not a plain field",
            param=UPLOAD_FILE_FIELD,
        )
    fields: dict[str, Any] = {}
    for name, value in form.multi_items():
        if name == UPLOAD_FILE_FIELD:
            continue
        if isinstance(value, UploadFile):
            raise ServiceError(
                ErrorCode.INVALID_INPUT,
                f"{quoted(name)}: must be a plain field, not a file",
                param=name,
            )
        if value == "":
            continue
        if name == "exclude":
            fields.setdefault("exclude", []).append(value)
        elif name in fields:
            raise ServiceError(
                ErrorCode.INVALID_INPUT, f"{quoted(name)}: given more than once", param=name
            )
        else:
            fields[name] = value
    try:
        options = SearchUploadForm.model_validate(fields)
    except ValidationError as error:
        errors, form_schema = error.errors(), body_schema(SearchUploadForm)
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            validation_message(errors, form_schema),
            param=validation_param(errors, form_schema),
        ) from None
    return files[0], options


# The filter's node schemas are components of the document (the JSON routes use them).
_UPLOAD_FORM_SCHEMA = SearchUploadForm.model_json_schema(
    ref_template="#/components/schemas/{model}"
)
_UPLOAD_REQUEST_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": [UPLOAD_FILE_FIELD, *_UPLOAD_FORM_SCHEMA.get("required", [])],
                "properties": {
                    UPLOAD_FILE_FIELD: {
                        "type": "string",
                        "format": "binary",
                        "description": "The image file: JPEG, PNG, WEBP or GIF, at most "
                        "max_image_bytes.",
                    },
                    **_UPLOAD_FORM_SCHEMA["properties"],
                },
            }
        }
    },
}


@upload_router.post(
    UPLOAD_ROUTE,
    response_model=SearchResponse,
    responses=JSON_BODY_ERRORS,
    openapi_extra={"requestBody": _UPLOAD_REQUEST_BODY},
    summary="Search a collection with an uploaded image file",
)
async def search_upload(
    request: Request, state: StateDep, catalog: CatalogDep, context: ContextDep
) -> Response:
    """``multipart/form-data`` with the image in the file part ``file`` and the fields
    ``collection``, ``k``, ``variant``, ``exclude`` (repeatable), ``include_metadata``,
    ``offset`` and ``search_params`` (a JSON object); answers as ``POST /v1/search``.

    The body limit of this route is ``max_upload_body_bytes`` (default ``max_image_bytes`` plus
    room for the form), counted while the body streams in; the file part is then held to
    ``max_image_bytes`` before it is read into memory. A body not declared multipart is 415.
    """
    require_multipart(request)
    settings = state.settings
    async with request.form(
        max_files=1,
        max_fields=settings.max_exclude + _UPLOAD_PLAIN_FIELDS,
        max_part_size=_UPLOAD_FIELD_MAX_BYTES,
    ) as form:
        upload, options = _upload_form(form)
        check_limits(options, settings)
        # Refused before the file is read: a collection or variant that cannot take an image.
        state.searcher.require_tower(
            catalog, options.variant, options.collection, "image", UPLOAD_FILE_FIELD
        )
        try:
            refuse_oversized_file(UPLOAD_FILE_FIELD, upload.size or 0, settings)
        except ImageRefusedError as error:
            state.metrics.images_refused.labels(error.reason).inc()
            raise
        data = await upload.read()
    query = SearchQuery(
        variant=options.variant,
        collection=options.collection,
        side=ImageSide(ImagePayload(UPLOAD_FILE_FIELD, data)),
        page=options.page(),
    )
    answer = await state.searcher.search(context, catalog, query)
    return _response(context, answer, options.include_metadata)
