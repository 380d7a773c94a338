"""The asyncio client: :class:`AsyncClient`, the methods of
:class:`~crisscross_client.Client`, awaited.

``async with AsyncClient("http://127.0.0.1:8000", api_key="...") as client:
await client.search(...)``. Its :attr:`~AsyncClient.last_response` is kept per asyncio task.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import httpx

from crisscross_client import _requests as rq
from crisscross_client import models as m
from crisscross_client._requests import Call, Plan
from crisscross_client._settings import DEFAULT_BASE_URL, ClientSettings
from crisscross_client._transport import RetryPolicy, error_code_of, retry_after_seconds
from crisscross_client.bulk import ServiceLimits
from crisscross_client.images import ImageInput
from crisscross_client.queries import ItemInput
from crisscross_client.response_info import ResponseInfo

R = TypeVar("R")
T = TypeVar("T")


class AsyncClient:
    """An asyncio client of one Crisscross service.

    Args:
        base_url: the service root.
        api_key: a read, write or admin key, sent as ``Authorization: Bearer <key>``.
        timeout: seconds per request attempt.
        max_retries: retries after the first attempt on connection errors, 408, 429, 502,
            503 and 504 (writes that may have been applied only when idempotent).
        retry: the whole retry policy (overrides ``max_retries``).
        limits: the service's per-request limits (default: the service's defaults; see
            :meth:`load_limits`).
        headers: more headers for every request.
        max_connections: the connection pool's size.
        transport: an httpx transport instead of the network (tests: ``httpx.MockTransport``).
        sleep: how to wait between retries (tests pass a recorder).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        *,
        retry: RetryPolicy | None = None,
        limits: ServiceLimits | None = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int = 10,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._settings = ClientSettings(
            base_url, api_key, timeout, max_retries, retry, limits, headers
        )
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            base_url=self._settings.base_url,
            headers=self._settings.headers,
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            transport=transport,
        )

    # --- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def close(self) -> None:
        """Close the connection pool (the same as :meth:`aclose`)."""
        await self._http.aclose()

    @property
    def base_url(self) -> str:
        """The service root."""
        return self._settings.base_url

    @property
    def limits(self) -> ServiceLimits:
        """The per-request limits long inputs are cut by."""
        return self._settings.limits

    @limits.setter
    def limits(self, value: ServiceLimits) -> None:
        self._settings.limits = value

    @property
    def retry_policy(self) -> RetryPolicy:
        """How failed calls are retried."""
        return self._settings.retry

    @property
    def last_response(self) -> ResponseInfo | None:
        """The last call's final exchange in this asyncio task: status, headers (``x-request-id``,
        ``x-timing-*``), latency, attempts."""
        return self._settings.last.get()

    # --- sending --------------------------------------------------------------------------------

    async def _send(self, call: Call[R]) -> R:
        settings = self._settings
        policy = settings.retry
        started = time.perf_counter()
        retries = 0
        while True:
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    json=call.json,
                    content=call.content,
                    params=call.params,
                    files=call.files,
                    data=call.data,
                    headers=call.headers,
                )
            except httpx.TransportError as error:
                if call.retry and policy.retry_failure(retries, error, idempotent=call.idempotent):
                    retries += 1
                    await self._sleep(policy.backoff(retries))
                    continue
                settings.record(call, None, time.perf_counter() - started, retries + 1)
                raise settings.failure(call, error) from error
            retry_after = retry_after_seconds(response.headers.get("retry-after"))
            if not response.is_success and call.retry:
                code = error_code_of(response)
                status = response.status_code
                if policy.retry_answer(
                    retries, status, code, retry_after, idempotent=call.idempotent
                ):
                    retries += 1
                    await self._sleep(policy.wait(retries, retry_after))
                    continue
            settings.record(call, response, time.perf_counter() - started, retries + 1)
            if not response.is_success:
                raise rq.answer_error(response, retry_after)
            return call.read(response)

    async def _run(self, plan: Plan[R, T]) -> T:
        return plan.combine([await self._send(call) for call in plan.calls])

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        retry: bool = True,
    ) -> httpx.Response:
        """Send any request under the base URL, with the client's keys and retries.

        Args:
            idempotent: whether repeating it is harmless (default: for GET, HEAD, OPTIONS).
            retry: whether it may be retried at all.

        Returns:
            The 2xx answer.

        Raises:
            CrisscrossError: an error answer, or no answer.
        """
        if idempotent is None:
            idempotent = method.upper() in ("GET", "HEAD", "OPTIONS")
        call: Call[httpx.Response] = Call(
            method.upper(),
            path,
            lambda response: response,
            json=json,
            content=content,
            params=params,
            headers=headers,
            idempotent=idempotent,
            retry=retry,
        )
        return await self._send(call)

    async def load_limits(self) -> ServiceLimits:
        """Read the service's limits from its OpenAPI document (``GET /openapi.json``) and cut
        long inputs by them from now on."""
        document = rq.json_of(await self.request("GET", "/openapi.json"))
        self.limits = ServiceLimits.from_openapi(document)
        return self.limits

    # --- what is served -------------------------------------------------------------------------

    async def health(self) -> m.StatusResponse:
        """``GET /healthz``: the process is alive."""
        return await self._run(rq.served("healthz", m.StatusResponse))

    async def ready(self) -> m.StatusResponse:
        """``GET /readyz``: ready to serve (:class:`~crisscross_client.NotReady` otherwise)."""
        return await self._run(rq.served("readyz", m.StatusResponse))

    async def variants(self) -> m.VariantsResponse:
        """``GET /v1/variants``: the loaded encoder variants and the serving process."""
        return await self._run(rq.served("variants", m.VariantsResponse))

    async def collections(self) -> m.CollectionsResponse:
        """``GET /v1/collections``: the bundles' collections and the live ones."""
        return await self._run(rq.served("collections", m.CollectionsResponse))

    async def models(self) -> m.ModelsResponse:
        """``GET /v1/models``: the models ``embeddings`` takes (OpenAI shape)."""
        return await self._run(rq.served("models", m.ModelsResponse))

    # --- search ---------------------------------------------------------------------------------

    async def search(
        self,
        collection: str,
        text: str | None = None,
        vector: Sequence[float] | None = None,
        image: ImageInput | None = None,
        item: ItemInput | None = None,
        k: int = 10,
        filter: m.FilterInput | None = None,
        variant: str | None = None,
        *,
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
    ) -> m.SearchResponse:
        """``POST /v1/search``: the ``k`` nearest items of ``collection`` to exactly one of
        ``text``, ``vector``, ``image`` (path, bytes or PIL image), ``item`` (an id of
        ``collection``, or ``(collection, id)``) or ``query`` (a query model or wire dict).

        Args:
            filter: a metadata filter (a :data:`~crisscross_client.models.Filter` or its dict).
            exclude: ids left out; offset: skip this many best results (pages);
            include_metadata: false drops each hit's metadata; search_params: nprobe,
            ef_search or exact.
            mode: ``dense`` (the service's default), ``lexical`` or ``hybrid``.
            lexical: the keyword leg, ``{"text": ..., "field": ...}`` (defaults: the query's
                text, the collection's text).
            fusion: how hybrid fuses its legs, ``{"method": "rrf", "k": 60}`` or
                ``{"method": "weighted", "alpha": 0.7}`` (alpha: the dense leg's weight).
            window: candidates per leg (hybrid) or of the first stage (rerank), ≥ offset + k.
            rerank: ``{"by": "exact"}`` or ``{"by": "variant", "variant": "..."}``.
        """
        request = rq.search_request(
            collection=collection,
            text=text,
            vector=vector,
            image=image,
            item=item,
            k=k,
            filter=filter,
            variant=variant,
            exclude=exclude,
            offset=offset,
            include_metadata=include_metadata,
            search_params=search_params,
            query=query,
            mode=mode,
            lexical=lexical,
            fusion=fusion,
            window=window,
            rerank=rerank,
        )
        return await self._run(rq.search(request))

    async def search_upload(
        self,
        image: ImageInput,
        collection: str,
        k: int = 10,
        variant: str | None = None,
        *,
        exclude: Sequence[str] | None = None,
        offset: int | None = None,
        include_metadata: bool | None = None,
        search_params: m.SearchParams | Mapping[str, Any] | None = None,
    ) -> m.SearchResponse:
        """``POST /v1/search/upload``: search with an image sent as a multipart file (for
        images too large for a JSON body)."""
        plan = rq.search_upload(
            image,
            collection=collection,
            k=k,
            variant=variant,
            exclude=exclude,
            offset=offset,
            include_metadata=include_metadata,
            search_params=search_params,
        )
        return await self._run(plan)

    async def search_bulk(
        self, searches: Sequence[m.SearchRequest | Mapping[str, Any]]
    ) -> m.BulkSearchResponse:
        """``POST /v1/search/bulk`` as one request (at most ``limits.max_bulk_searches``);
        each search is answered with its own status. See :meth:`search_many`."""
        return await self._run(rq.search_bulk(searches))

    async def search_many(
        self,
        queries: Sequence[Any],
        collection: str,
        k: int = 10,
        filter: m.FilterInput | None = None,
        variant: str | None = None,
        *,
        include_metadata: bool | None = None,
        return_exceptions: bool = False,
        search_params: m.SearchParams | Mapping[str, Any] | None = None,
        mode: m.SearchMode | None = None,
        lexical: m.LexicalOptions | Mapping[str, Any] | None = None,
        fusion: m.RrfFusion | m.WeightedFusion | Mapping[str, Any] | None = None,
        window: int | None = None,
        rerank: m.ExactRerank | m.VariantRerank | Mapping[str, Any] | None = None,
    ) -> list[Any]:
        """Many searches of ``collection`` through ``POST /v1/search/bulk``, cut into requests
        that fit the service's limits (searches, images, bytes per request).

        Args:
            queries: query inputs (a text, a query model or wire dict, a ``Path``/bytes/PIL
                image, an ``ItemRef`` or ``(collection, id)``, a vector) or whole
                :class:`~crisscross_client.models.SearchRequest` objects (used as they are).
            return_exceptions: put a failed search's error in its place instead of raising it.
            search_params, mode, lexical, fusion, window, rerank: as :meth:`search`, for
                every query input (not for whole ``SearchRequest`` objects).

        Returns:
            One :class:`~crisscross_client.models.SearchPageResult` per query, in order (or
            its :class:`~crisscross_client.CrisscrossError` with ``return_exceptions``).
        """
        searches = [
            query
            if isinstance(query, m.SearchRequest)
            else rq.search_request(
                collection=collection,
                query=query,
                k=k,
                filter=filter,
                variant=variant,
                include_metadata=include_metadata,
                search_params=search_params,
                mode=mode,
                lexical=lexical,
                fusion=fusion,
                window=window,
                rerank=rerank,
            )
            for query in queries
        ]
        if not searches:
            return []
        return await self._run(
            rq.search_many(searches, self.limits, return_exceptions=return_exceptions)
        )

    async def score(
        self, pairs: Sequence[tuple[Any, Any]], variant: str | None = None
    ) -> m.ScoreResponse:
        """``POST /v1/score``: the similarity of each ``(left, right)`` pair of query inputs,
        in order (cut into requests that fit the service's limits)."""
        return await self._run(rq.score(pairs, variant, self.limits))

    async def embed_texts(
        self, texts: Sequence[str], variant: str | None = None
    ) -> m.EmbedResponse:
        """``POST /v1/embed``: one L2-normalised embedding per text, in order."""
        return await self._run(rq.embed_texts(texts, variant, self.limits))

    async def embed_images(
        self, images: Sequence[ImageInput], variant: str | None = None
    ) -> m.EmbedResponse:
        """``POST /v1/embed``: one embedding per image (path, bytes or PIL image), in order."""
        return await self._run(rq.embed_images(images, variant, self.limits))

    async def embeddings(
        self,
        input: str | Sequence[Any],
        model: str,
        encoding_format: m.EncodingFormat | None = None,
        dimensions: int | None = None,
        modality: str | None = None,
        *,
        user: str | None = None,
    ) -> m.EmbeddingsResponse:
        """``POST /v1/embeddings`` (the OpenAI shape): ``model`` is a variant name; with
        ``modality="image"`` the inputs are images (any image input)."""
        plan = rq.embeddings(
            input,
            model,
            encoding_format=encoding_format,
            dimensions=dimensions,
            modality=modality,
            user=user,
        )
        return await self._run(plan)

    async def item(self, collection: str, id: str, variant: str | None = None) -> m.ItemResponse:
        """``GET /v1/items/{collection}/{id}``: a bundle item's metadata."""
        return await self._run(rq.item(collection, id, variant))

    async def thumbnail(self, collection: str, id: str, variant: str | None = None) -> bytes:
        """``GET /v1/thumbnails/{collection}/{id}``: the item's JPEG thumbnail."""
        return await self._run(rq.thumbnail(collection, id, variant))

    # --- live collections -----------------------------------------------------------------------

    async def create_collection(
        self,
        name: str,
        variant: str | None = None,
        dim: int | None = None,
        fields: Mapping[str, m.FieldType] | None = None,
        index: str | None = None,
        *,
        from_snapshot: m.SnapshotRef | Mapping[str, str] | None = None,
        from_bundle: str | None = None,
    ) -> m.LiveCollectionInfo:
        """``POST /v1/collections`` (admin key): a live collection embedded by ``variant``, or
        of ``dim``-dimensional client vectors, with typed metadata ``fields`` and an ``index``
        factory (``Flat`` or ``IVF<n>,Flat``). Not retried once it may have been applied."""
        body = m.CreateCollectionRequest(
            name=name,
            variant=variant,
            dim=dim,
            fields=None if fields is None else dict(fields),
            index=index,
            from_snapshot=None
            if from_snapshot is None
            else m.SnapshotRef.model_validate(from_snapshot),
            from_bundle=from_bundle,
        )
        return await self._run(rq.create_collection(body))

    async def get_collection(self, name: str) -> m.LiveCollectionInfo:
        """``GET /v1/collections/{name}``."""
        return await self._run(
            rq.collection_call("get_collection", m.LiveCollectionInfo, name, idempotent=True)
        )

    async def delete_collection(self, name: str) -> m.DropResponse:
        """``DELETE /v1/collections/{name}`` (admin key)."""
        return await self._run(
            rq.collection_call("delete_collection", m.DropResponse, name, idempotent=False)
        )

    async def upsert(
        self, collection: str, items: Sequence[m.WriteItem | Mapping[str, Any]]
    ) -> m.UpsertResponse:
        """``POST /v1/collections/{name}/items``: add or replace items by id. Each item has an
        ``id``, exactly one of ``text``, ``image`` (any image input), ``vector`` or
        ``vector_base64`` (:func:`~crisscross_client.pack_vector`), and ``metadata``. Long
        lists go in batches (each all or nothing); idempotent, so retried."""
        return await self._run(rq.upsert(collection, items, self.limits))

    async def delete_items(
        self,
        collection: str,
        ids: Sequence[str] | None = None,
        filter: m.FilterInput | None = None,
    ) -> m.DeleteResponse:
        """``POST /v1/collections/{name}/items/delete``: by ``ids`` (idempotent) or every item
        a ``filter`` keeps (not retried once it may have been applied)."""
        return await self._run(rq.delete_items(collection, ids, filter, self.limits))

    async def get_items(
        self, collection: str, ids: Sequence[str], include_vectors: bool | None = None
    ) -> m.GetResponse:
        """``POST /v1/collections/{name}/items/get``: the items that exist, in order."""
        return await self._run(rq.get_items(collection, ids, include_vectors, self.limits))

    async def patch_item(
        self, collection: str, id: str, metadata: Mapping[str, Any], merge: bool | None = None
    ) -> m.PatchResponse:
        """``PATCH /v1/collections/{name}/items/{id}``: new metadata, merged (a ``None``
        removes a field) or, with ``merge=False``, replacing it."""
        return await self._run(rq.patch_item(collection, id, metadata, merge))

    async def compact(self, collection: str) -> m.CompactResponse:
        """``POST /v1/collections/{name}/compact`` (admin key)."""
        return await self._run(
            rq.collection_call("compact", m.CompactResponse, collection, idempotent=False)
        )

    async def snapshot(self, collection: str) -> m.SnapshotResponse:
        """``POST /v1/collections/{name}/snapshots`` (admin key)."""
        return await self._run(
            rq.collection_call("snapshot", m.SnapshotResponse, collection, idempotent=False)
        )

    # --- admin ----------------------------------------------------------------------------------

    async def reload(
        self, bundle: str | None = None, version: str | None = None
    ) -> m.ReloadResponse:
        """``POST /v1/admin/reload`` (admin key): load bundles' new versions and swap them in."""
        return await self._run(rq.reload(bundle, version))
