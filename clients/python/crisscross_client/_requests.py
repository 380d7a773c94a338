"""What each client method sends and how its answer is read, shared by the sync and the async
client: a method builds a :class:`~crisscross_client._calls.Plan` (one or more
:class:`~crisscross_client._calls.Call`, and how their answers combine); the clients only send.

Here: search, score, embed, bundle items and thumbnails, what is served, reload and the replica
set's calls. The builders of the calls on live collections (with their item writes'
``Idempotency-Key`` and ``?acks=``) are in :mod:`crisscross_client._collection_requests`.
Reads name the live collections they read, for read-your-writes
(:mod:`crisscross_client._written_seqs`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter

from crisscross_client import models as m
from crisscross_client._calls import (
    ROUTES,
    Call,
    Plan,
    answer_error,
    json_of,
    model_call,
    raw_bytes,
    reader,
    route_path,
    single,
)
from crisscross_client.bulk import ServiceLimits, cut, json_size
from crisscross_client.errors import BadResponseError, error_class
from crisscross_client.images import ImageInput, image_base64, image_file
from crisscross_client.queries import image_count, one_query, to_query

__all__ = ["ROUTES", "UPLOAD_FORM_FIELDS", "Call", "Plan", "answer_error", "json_of"]

M = TypeVar("M", bound=BaseModel)

UPLOAD_FORM_FIELDS = frozenset(
    {"file", "collection", "k", "variant", "exclude", "include_metadata", "offset", "search_params"}
)
"""The form fields :func:`search_upload` may send (``POST /v1/search/upload``)."""

# --- search -----------------------------------------------------------------------------------

_FUSION: TypeAdapter[m.RrfFusion | m.WeightedFusion] = TypeAdapter(m.Fusion)
_RERANK: TypeAdapter[m.ExactRerank | m.VariantRerank] = TypeAdapter(m.Rerank)


def search_request(
    *,
    collection: str,
    text: str | None = None,
    vector: Sequence[float] | None = None,
    image: ImageInput | None = None,
    item: Any = None,
    k: int | None = None,
    filter: m.FilterInput | None = None,
    variant: str | None = None,
    exclude: Sequence[str] | None = None,
    offset: int | None = None,
    include_metadata: bool | None = None,
    search_params: m.SearchParams | Mapping[str, Any] | None = None,
    query: Any = None,
    mode: m.SearchMode | None = None,
    lexical: m.LexicalOptions | Mapping[str, Any] | None = None,
    fusion: m.RrfFusion | m.WeightedFusion | Mapping[str, Any] | None = None,
    window: int | None = None,
    rerank: m.ExactRerank | m.VariantRerank | Mapping[str, Any] | None = None,
) -> m.SearchRequest:
    """The body of one search (``POST /v1/search`` or one search of a bulk request).

    Raises:
        pydantic.ValidationError: a field is not what the API takes (a mode, fusion or rerank
            it does not know, ``alpha`` outside [0, 1], ``window`` < 1, ...).
    """
    side = one_query(
        collection=collection, text=text, image=image, item=item, vector=vector, query=query
    )
    return m.SearchRequest(
        collection=collection,
        query=side,
        k=k,
        variant=variant,
        exclude=None if exclude is None else list(exclude),
        include_metadata=include_metadata,
        offset=offset,
        filter=filter,
        search_params=None
        if search_params is None
        else m.SearchParams.model_validate(search_params),
        mode=mode,
        lexical=None if lexical is None else m.LexicalOptions.model_validate(lexical),
        fusion=None if fusion is None else _FUSION.validate_python(fusion),
        window=window,
        rerank=None if rerank is None else _RERANK.validate_python(rerank),
    )


def search(request: m.SearchRequest) -> Plan[m.SearchResponse, m.SearchResponse]:
    """``POST /v1/search``."""
    return single(model_call("search", m.SearchResponse, request, reads=(request.collection,)))


def search_bulk(
    searches: Sequence[m.SearchRequest | Mapping[str, Any]],
) -> Plan[m.BulkSearchResponse, m.BulkSearchResponse]:
    """``POST /v1/search/bulk`` of ``searches`` as one request."""
    requests = [m.SearchRequest.model_validate(search) for search in searches]
    body = m.BulkSearchRequest(searches=requests)
    reads = _collections_of(requests)
    return single(model_call("search_bulk", m.BulkSearchResponse, body, reads=reads))


def _collections_of(searches: Sequence[m.SearchRequest]) -> tuple[str, ...]:
    """The collections ``searches`` read, each once, in order."""
    return tuple(dict.fromkeys(search.collection for search in searches))


def search_many(
    searches: Sequence[m.SearchRequest],
    limits: ServiceLimits,
    *,
    return_exceptions: bool,
) -> Plan[m.BulkSearchResponse, list[Any]]:
    """``searches`` as bulk requests that fit ``limits``; the result is one entry per search,
    in order: its :class:`~crisscross_client.models.SearchPageResult`, or (with
    ``return_exceptions``) the :class:`CrisscrossError` of that search alone."""
    bodies = [search.body() for search in searches]
    runs = cut(
        list(zip(searches, bodies, strict=True)),
        max_count=limits.max_bulk_searches,
        max_bytes=limits.max_bulk_body_bytes,
        size=lambda pair: json_size(pair[1]),
        max_images=limits.max_images_per_request,
        images=lambda pair: image_count(pair[0].query),
    )
    calls = [
        Call(
            "POST",
            ROUTES["search_bulk"].path,
            reader(m.BulkSearchResponse),
            json={"searches": [body for _, body in run]},
            reads=_collections_of([search for search, _ in run]),
        )
        for run in runs
    ]
    counts = [len(call.json["searches"]) for call in calls]

    def combine(answers: list[m.BulkSearchResponse]) -> list[Any]:
        entries: list[Any] = []
        for answer, count in zip(answers, counts, strict=True):
            if len(answer.responses) != count:
                raise BadResponseError(
                    f"asked {count} searches, got {len(answer.responses)} answers"
                )
            for index, item in enumerate(answer.responses, start=len(entries)):
                if item.status == 200 and item.result is not None:
                    entries.append(item.result)
                    continue
                error = item.error or m.BulkError(code="error", message="no result")
                failure = error_class(item.status, error.code)(
                    f"search {index}: {error.message}",
                    status=item.status,
                    code=error.code,
                    method="POST",
                    url=ROUTES["search_bulk"].path,
                    param=error.param,
                )
                if not return_exceptions:
                    raise failure
                entries.append(failure)
        return entries

    return Plan(calls, combine)


def search_upload(
    image: ImageInput,
    *,
    collection: str,
    k: int | None = None,
    variant: str | None = None,
    exclude: Sequence[str] | None = None,
    offset: int | None = None,
    include_metadata: bool | None = None,
    search_params: m.SearchParams | Mapping[str, Any] | None = None,
) -> Plan[m.SearchResponse, m.SearchResponse]:
    """``POST /v1/search/upload``: the image as a multipart file."""
    file = image_file(image)
    form: list[tuple[str, str]] = [("collection", collection)]
    if k is not None:
        form.append(("k", str(k)))
    if variant is not None:
        form.append(("variant", variant))
    if offset is not None:
        form.append(("offset", str(offset)))
    if include_metadata is not None:
        form.append(("include_metadata", "true" if include_metadata else "false"))
    if search_params is not None:
        params = m.SearchParams.model_validate(search_params).body()
        form.append(("search_params", json.dumps(params)))
    data: dict[str, Any] = dict(form)
    if exclude:
        data["exclude"] = list(exclude)
    assert {"file", *data} <= UPLOAD_FORM_FIELDS
    return single(
        Call(
            "POST",
            ROUTES["search_upload"].path,
            reader(m.SearchResponse),
            files={"file": (file.filename, file.data, file.content_type)},
            data=data,
            reads=(collection,),
        )
    )


# --- score and embed ---------------------------------------------------------------------------


def score(
    pairs: Sequence[tuple[Any, Any]], variant: str | None, limits: ServiceLimits
) -> Plan[m.ScoreResponse, m.ScoreResponse]:
    """``POST /v1/score`` of ``pairs`` (``(left, right)`` query inputs), cut by ``limits``;
    the scores come back in order."""
    sides = [m.ScorePair(left=to_query(left), right=to_query(right)) for left, right in pairs]
    bodies = [pair.body() for pair in sides]
    runs = cut(
        list(zip(sides, bodies, strict=True)),
        max_count=limits.max_score_pairs,
        max_bytes=limits.max_body_bytes,
        size=lambda pair: json_size(pair[1]),
        max_images=limits.max_images_per_request,
        images=lambda pair: image_count(pair[0].left) + image_count(pair[0].right),
    )
    calls = [
        model_call(
            "score",
            m.ScoreResponse,
            m.ScoreRequest(pairs=[pair for pair, _ in run], variant=variant),
        )
        for run in runs
    ]

    def combine(answers: list[m.ScoreResponse]) -> m.ScoreResponse:
        first = answers[0]
        scores = [value for answer in answers for value in answer.scores]
        if len(scores) != len(sides):
            raise BadResponseError(f"asked for {len(sides)} scores, got {len(scores)}")
        return first.model_copy(update={"scores": scores})

    return Plan(calls, combine)


def _combine_embeddings(expected: int) -> Callable[[list[m.EmbedResponse]], m.EmbedResponse]:
    def combine(answers: list[m.EmbedResponse]) -> m.EmbedResponse:
        vectors = [vector for answer in answers for vector in answer.embeddings]
        if len(vectors) != expected:
            raise BadResponseError(f"asked for {expected} embeddings, got {len(vectors)}")
        return answers[0].model_copy(update={"embeddings": vectors})

    return combine


def embed_texts(
    texts: Sequence[str], variant: str | None, limits: ServiceLimits
) -> Plan[m.EmbedResponse, m.EmbedResponse]:
    """``POST /v1/embed`` of ``texts``, cut by ``limits``."""
    if isinstance(texts, str):
        raise TypeError("texts is a list of strings, not one string")
    runs = cut(
        list(texts),
        max_count=limits.max_embed_inputs,
        max_bytes=limits.max_body_bytes,
        size=json_size,
    )
    calls = [
        model_call("embed_texts", m.EmbedResponse, m.EmbedTexts(texts=run, variant=variant))
        for run in runs
    ]
    return Plan(calls, _combine_embeddings(len(texts)))


def embed_images(
    images: Sequence[ImageInput], variant: str | None, limits: ServiceLimits
) -> Plan[m.EmbedResponse, m.EmbedResponse]:
    """``POST /v1/embed`` of ``images``, cut by ``limits``."""
    encoded = [image_base64(image) for image in images]
    runs = cut(
        encoded,
        max_count=limits.max_images_per_request,
        max_bytes=limits.max_body_bytes,
        size=len,
    )
    calls = [
        model_call("embed_images", m.EmbedResponse, m.EmbedImages(images=run, variant=variant))
        for run in runs
    ]
    return Plan(calls, _combine_embeddings(len(encoded)))


def embeddings(
    input: str | Sequence[Any],
    model: str,
    *,
    encoding_format: m.EncodingFormat | None,
    dimensions: int | None,
    modality: str | None,
    user: str | None,
) -> Plan[m.EmbeddingsResponse, m.EmbeddingsResponse]:
    """``POST /v1/embeddings`` (OpenAI shape); with ``modality="image"`` the inputs may be any
    image input and are sent as base64 files."""
    value: str | list[str]
    if isinstance(input, str):
        value = input
    elif modality == "image":
        value = [item if isinstance(item, str) else image_base64(item) for item in input]
    else:
        value = [str(item) for item in input]
    body = m.EmbeddingsRequest(
        model=model,
        input=value,
        encoding_format=encoding_format,
        dimensions=dimensions,
        user=user,
        modality=modality,
    )
    return single(model_call("embeddings", m.EmbeddingsResponse, body))


# --- items and thumbnails ------------------------------------------------------------------------


def item(collection: str, id: str, variant: str | None) -> Plan[m.ItemResponse, m.ItemResponse]:
    """``GET /v1/items/{collection}/{id}``."""
    params = None if variant is None else {"variant": variant}
    return single(model_call("item", m.ItemResponse, params=params, collection=collection, id=id))


def thumbnail(collection: str, id: str, variant: str | None) -> Plan[bytes, bytes]:
    """``GET /v1/thumbnails/{collection}/{id}``: JPEG bytes."""
    params = None if variant is None else {"variant": variant}
    return single(
        Call("GET", route_path("thumbnail", collection=collection, id=id), raw_bytes, params=params)
    )


# --- what is served and admin -------------------------------------------------------------


def served(route: str, answer: type[M]) -> Plan[M, M]:
    """A ``GET`` of a route without parameters."""
    return single(model_call(route, answer))


def reload(bundle: str | None, version: str | None) -> Plan[m.ReloadResponse, m.ReloadResponse]:
    """``POST /v1/admin/reload``."""
    body = m.ReloadRequest(bundle=bundle, version=version)
    return single(model_call("reload", m.ReloadResponse, body, idempotent=False))


# --- replica sets --------------------------------------------------------------------------


def promote() -> Plan[m.ReplicationStatus, m.ReplicationStatus]:
    """``POST /v1/replication/promote`` (not idempotent: each asks the members for a new
    term; never sent on to another server)."""
    return single(model_call("promote", m.ReplicationStatus, idempotent=False))


def follow(leader: str) -> Plan[m.ReplicationStatus, m.ReplicationStatus]:
    """``POST /v1/replication/follow`` (idempotent: following the same leader twice is
    following it; never sent on to another server)."""
    body = m.FollowBody(leader=leader)
    return single(model_call("follow", m.ReplicationStatus, body))
