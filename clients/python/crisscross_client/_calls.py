"""The requests the clients send, as data: the routes the client calls (:data:`ROUTES`), one
HTTP request and how its answer is read (:class:`Call`), a method's requests and how their
answers combine (:class:`Plan`), and the readers of answers and error answers.

:data:`ROUTES` names each route the client calls with its request and answer models; the drift
test checks them against the service's OpenAPI document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from crisscross_client import models as m
from crisscross_client.errors import BadResponseError, CrisscrossError, error_from_answer

R = TypeVar("R")
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Route:
    """A route the client calls: its method and path, and the schemas (by model) of its JSON
    request body and its answer (``None``: none, or not JSON)."""

    method: str
    path: str
    request: type[BaseModel] | None
    response: type[BaseModel] | None


ROUTES: Mapping[str, Route] = {
    "healthz": Route("GET", "/healthz", None, m.StatusResponse),
    "readyz": Route("GET", "/readyz", None, m.StatusResponse),
    "variants": Route("GET", "/v1/variants", None, m.VariantsResponse),
    "collections": Route("GET", "/v1/collections", None, m.CollectionsResponse),
    "search": Route("POST", "/v1/search", m.SearchRequest, m.SearchResponse),
    "search_bulk": Route("POST", "/v1/search/bulk", m.BulkSearchRequest, m.BulkSearchResponse),
    "search_upload": Route("POST", "/v1/search/upload", None, m.SearchResponse),
    "score": Route("POST", "/v1/score", m.ScoreRequest, m.ScoreResponse),
    "embed_texts": Route("POST", "/v1/embed", m.EmbedTexts, m.EmbedResponse),
    "embed_images": Route("POST", "/v1/embed", m.EmbedImages, m.EmbedResponse),
    "item": Route("GET", "/v1/items/{collection}/{id}", None, m.ItemResponse),
    "thumbnail": Route("GET", "/v1/thumbnails/{collection}/{id}", None, None),
    "create_collection": Route(
        "POST", "/v1/collections", m.CreateCollectionRequest, m.LiveCollectionInfo
    ),
    "get_collection": Route("GET", "/v1/collections/{name}", None, m.LiveCollectionInfo),
    "delete_collection": Route("DELETE", "/v1/collections/{name}", None, m.DropResponse),
    "upsert": Route("POST", "/v1/collections/{name}/items", m.UpsertRequest, m.UpsertResponse),
    "delete_items": Route(
        "POST", "/v1/collections/{name}/items/delete", m.DeleteRequest, m.DeleteResponse
    ),
    "get_items": Route("POST", "/v1/collections/{name}/items/get", m.GetRequest, m.GetResponse),
    "scroll_items": Route(
        "POST", "/v1/collections/{name}/items/scroll", m.ScrollRequest, m.ScrollPage
    ),
    "count_items": Route(
        "POST", "/v1/collections/{name}/items/count", m.CountRequest, m.CountResponse
    ),
    "add_fields": Route(
        "PATCH", "/v1/collections/{name}", m.AddFieldsRequest, m.LiveCollectionInfo
    ),
    "patch_item": Route(
        "PATCH", "/v1/collections/{name}/items/{id}", m.PatchRequest, m.PatchResponse
    ),
    "compact": Route("POST", "/v1/collections/{name}/compact", None, m.CompactResponse),
    "snapshot": Route("POST", "/v1/collections/{name}/snapshots", None, m.SnapshotResponse),
    "reload": Route("POST", "/v1/admin/reload", m.ReloadRequest, m.ReloadResponse),
    "embeddings": Route("POST", "/v1/embeddings", m.EmbeddingsRequest, m.EmbeddingsResponse),
    "models": Route("GET", "/v1/models", None, m.ModelsResponse),
    "replication_status": Route("GET", "/v1/replication", None, m.ReplicationStatus),
    "replication_position": Route("GET", "/v1/replication/position", None, m.PositionResponse),
    "promote": Route("POST", "/v1/replication/promote", None, m.ReplicationStatus),
    "follow": Route("POST", "/v1/replication/follow", m.FollowBody, m.ReplicationStatus),
}


def _segment(value: str) -> str:
    return quote(value, safe=":@")


def route_path(route: str, **parts: str) -> str:
    return ROUTES[route].path.format(**{key: _segment(value) for key, value in parts.items()})


@dataclass(frozen=True)
class Call(Generic[R]):
    """One HTTP request and how its answer is read.

    Attributes:
        idempotent: whether sending it twice does no more than sending it once (see
            :mod:`crisscross_client._transport`); a write carrying an ``Idempotency-Key`` in
            ``headers`` is (the service applies it once, whatever the retries).
        retry: whether it may be retried at all.
        timeout: seconds each attempt may take (``None``: the plan's, else the client's).
        writes: the live collection this write changes: the ``seq`` of its answer is
            remembered for read-your-writes (:mod:`crisscross_client._written_seqs`).
        reads: the live collections this read reads: it asks for at least the sequence
            number the client's writes to them reached (``X-Min-Seq``).
        resets: a live collection this call creates or drops: what the client remembers of
            its sequence numbers is forgotten once it is answered (a new one starts at 0).
        to_leader: whether a 421 ``not_leader`` naming the leader (``x-leader``) is followed:
            the request is sent to that leader once more.
        origin: the service root it goes to instead of the client's (the leader, after a
            421); ``None``: the client's.
    """

    method: str
    path: str
    read: Callable[[httpx.Response], R]
    json: Any = None
    content: bytes | None = None
    params: Mapping[str, str] | None = None
    files: Mapping[str, tuple[str, bytes, str]] | None = None
    data: Mapping[str, str] | None = None
    headers: Mapping[str, str] | None = None
    idempotent: bool = True
    retry: bool = True
    timeout: float | None = None
    writes: str | None = None
    reads: tuple[str, ...] = ()
    resets: str | None = None
    to_leader: bool = False
    origin: str | None = None

    def url(self, base_url: str) -> str:
        """Where it goes, given the client's ``base_url``."""
        return f"{self.origin or base_url}{self.path}"

    def http_arguments(self) -> dict[str, Any]:
        """The arguments of ``httpx.Client.request`` (or the async one's) that send it (an
        absolute URL when it has an ``origin``: httpx then ignores the client's root)."""
        return {
            "timeout": httpx.USE_CLIENT_DEFAULT if self.timeout is None else self.timeout,
            "method": self.method,
            "url": self.path if self.origin is None else self.url(self.origin),
            "json": self.json,
            "content": self.content,
            "params": self.params,
            "files": self.files,
            "data": self.data,
            "headers": self.headers,
        }


@dataclass(frozen=True)
class Plan(Generic[R, T]):
    """The calls one client method makes, in order, and how their answers make its result.

    Attributes:
        parallelism: how many of its calls may be in flight at once (threads of the sync
            client, tasks of the async one); each call is retried on its own. After a call
            fails no more are started, those in flight are waited for, then it raises.
        on_answer: told ``(index, answer)`` after each call's answer is read, in the caller's
            thread or task (progress); what it raises ends the plan like a failed call.
        on_failure: the exception to raise for a failed call, given that call's exception
            and the indexes of the calls answered (default: the call's exception).
        timeout: seconds each attempt of its calls may take (``None``: the client's).
    """

    calls: Sequence[Call[R]]
    combine: Callable[[list[R]], T]
    parallelism: int = 1
    on_answer: Callable[[int, R], None] | None = None
    on_failure: Callable[[Exception, list[int]], Exception] | None = None
    timeout: float | None = None


def single(call: Call[R]) -> Plan[R, R]:
    """A plan of one call whose answer is the result."""
    return Plan([call], lambda answers: answers[0])


def json_of(response: httpx.Response) -> Any:
    """The JSON body of a 2xx answer.

    Raises:
        BadResponseError: not JSON.
    """
    try:
        return response.json()
    except ValueError as error:
        raise bad_response(response, f"expected JSON, got {response.text[:200]!r}") from error


def bad_response(response: httpx.Response, message: str) -> BadResponseError:
    """The error for a 2xx ``response`` the client cannot read."""
    return BadResponseError(
        message,
        status=response.status_code,
        request_id=response.headers.get("x-request-id"),
        method=response.request.method,
        url=str(response.request.url),
    )


def reader(model: type[M]) -> Callable[[httpx.Response], M]:
    """Reads a 2xx answer as ``model``; :class:`BadResponseError` when it is not one."""

    def read(response: httpx.Response) -> M:
        try:
            return model.model_validate(json_of(response))
        except ValidationError as error:
            message = f"the answer is not a {model.__name__}: {error}"
            raise bad_response(response, message) from error

    return read


def as_is(response: httpx.Response) -> httpx.Response:
    """The answer itself (:meth:`~crisscross_client.Client.request`)."""
    return response


def raw_bytes(response: httpx.Response) -> bytes:
    """The answer's body as bytes."""
    return response.content


def model_call(
    route: str,
    answer: type[M],
    body: BaseModel | None = None,
    *,
    idempotent: bool = True,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    writes: str | None = None,
    reads: tuple[str, ...] = (),
    resets: str | None = None,
    to_leader: bool = False,
    **parts: str,
) -> Call[M]:
    """A call of ``route`` with a request model, read as ``answer`` (the route's answer
    model in :data:`ROUTES`); the keywords are :class:`Call`'s."""
    spec = ROUTES[route]
    if spec.response is not answer:
        raise ValueError(f"{route} answers {spec.response}, not {answer.__name__}")
    payload = None
    if body is not None:
        payload = body.body() if isinstance(body, m.RequestModel) else body.model_dump(mode="json")
    return Call(
        spec.method,
        route_path(route, **parts),
        reader(answer),
        json=payload,
        params=params,
        headers=headers,
        idempotent=idempotent,
        writes=writes,
        reads=reads,
        resets=resets,
        to_leader=to_leader,
    )


def answer_error(response: httpx.Response, retry_after: float | None) -> CrisscrossError:
    """The exception for an error answer."""
    try:
        body = response.json()
    except ValueError:
        body = None
    return error_from_answer(
        response.status_code,
        body,
        response.text,
        request_id=response.headers.get("x-request-id"),
        retry_after=retry_after,
        method=response.request.method,
        url=str(response.request.url),
        headers=response.headers,
    )
