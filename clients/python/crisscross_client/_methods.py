"""The public methods of :class:`~crisscross_client.Client` and
:class:`~crisscross_client.AsyncClient`, each written once.

Each method here builds the :class:`~crisscross_client._calls.Plan` of its requests (with
the shared builders of :mod:`crisscross_client._requests`); the methods on live collections are
in the mixin :class:`~crisscross_client._collection_methods.CollectionMethods`, which
:class:`ClientMethods` inherits (their builders: :mod:`crisscross_client._collection_requests`).
The decorator :func:`~crisscross_client._endpoint.endpoint` makes each a plain method of the
sync client and a coroutine method of the async one, with this signature and docstring, returning
the plan's result (see the README's "How the client is built").

Every method ends with the keyword-only parameter ``timeout: float | None = None`` (seconds per
attempt, overriding the client's): the decorator applies it to the whole plan and does not pass
it on, so the builders never read it (a new method declares it too; ``test_endpoint`` checks).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Self

import httpx

from crisscross_client import _requests as rq
from crisscross_client import models as m
from crisscross_client._calls import Call, Plan, as_is, json_of, single
from crisscross_client._collection_methods import CollectionMethods
from crisscross_client._endpoint import endpoint
from crisscross_client._settings import ClientSettings
from crisscross_client._transport import RetryPolicy
from crisscross_client.bulk import ServiceLimits
from crisscross_client.images import ImageInput
from crisscross_client.queries import ItemInput
from crisscross_client.response_info import ResponseInfo


class ClientMethods(CollectionMethods):
    """What both clients have: their settings, and every public method (see the module; those
    on live collections inherited from :class:`CollectionMethods`)."""

    _settings: ClientSettings

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
        """The last call's final exchange in this thread (sync client) or asyncio task (async
        client): status, headers (``x-request-id``, ``x-timing-*``), latency, attempts."""
        return self._settings.last.get()

    @property
    def timeout(self) -> float:
        """Seconds each attempt of a call may take (a method's ``timeout=`` overrides it)."""
        return self._settings.timeout

    @property
    def acks(self) -> m.Acks | None:
        """The ``acks`` of writes that name none (``None``: the collection's policy, else the
        server's default_acks)."""
        return self._settings.acks

    @property
    def read_your_writes(self) -> bool:
        """Whether reads of the collections this client wrote ask for its writes
        (``X-Min-Seq``), so that any replica answering them sees them."""
        return self._settings.read_your_writes

    @property
    def written_seqs(self) -> dict[str, int]:
        """Live collection → the highest sequence number this client's writes to it were
        answered with (what its reads ask for, with ``read_your_writes``)."""
        return self._settings.written.snapshot()

    def with_options(
        self,
        *,
        timeout: float | None = None,
        max_retries: int | None = None,
        acks: m.Acks | None = None,
    ) -> Self:
        """A copy of this client with another ``timeout`` (seconds per attempt), ``max_retries``
        (the rest of its retry policy kept) and/or default ``acks`` of writes, sharing its
        connection pool, key, headers, last-response record and the sequence numbers it wrote
        (read-your-writes): ``client.with_options(timeout=2).search(...)``. Closing either
        closes the pool they share."""
        changed = copy.copy(self)
        changed._settings = self._settings.with_options(
            timeout=timeout, max_retries=max_retries, acks=acks
        )
        return changed

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._settings.describe()})"

    # --- any route ------------------------------------------------------------------------------

    @endpoint
    def request(
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
        timeout: float | None = None,
    ) -> Plan[Any, httpx.Response]:
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
        call = Call(
            method.upper(),
            path,
            as_is,
            json=json,
            content=content,
            params=params,
            headers=headers,
            idempotent=idempotent,
            retry=retry,
        )
        return single(call)

    @endpoint
    def load_limits(self, *, timeout: float | None = None) -> Plan[Any, ServiceLimits]:
        """Read the service's limits from its OpenAPI document (``GET /openapi.json``) and cut
        long inputs by them from now on."""

        def adopt(answers: list[httpx.Response]) -> ServiceLimits:
            self.limits = ServiceLimits.from_openapi(json_of(answers[0]))
            return self.limits

        return Plan([Call("GET", "/openapi.json", as_is)], adopt)

    # --- what is served -------------------------------------------------------------------------

    @endpoint
    def health(self, *, timeout: float | None = None) -> Plan[Any, m.StatusResponse]:
        """``GET /healthz``: the process is alive."""
        return rq.served("healthz", m.StatusResponse)

    @endpoint
    def ready(self, *, timeout: float | None = None) -> Plan[Any, m.StatusResponse]:
        """``GET /readyz``: ready to serve (:class:`~crisscross_client.NotReady` otherwise)."""
        return rq.served("readyz", m.StatusResponse)

    @endpoint
    def variants(self, *, timeout: float | None = None) -> Plan[Any, m.VariantsResponse]:
        """``GET /v1/variants``: the loaded encoder variants and the serving process."""
        return rq.served("variants", m.VariantsResponse)

    @endpoint
    def collections(self, *, timeout: float | None = None) -> Plan[Any, m.CollectionsResponse]:
        """``GET /v1/collections``: the bundles' collections and the live ones."""
        return rq.served("collections", m.CollectionsResponse)

    @endpoint
    def models(self, *, timeout: float | None = None) -> Plan[Any, m.ModelsResponse]:
        """``GET /v1/models``: the models ``embeddings`` takes (OpenAI shape)."""
        return rq.served("models", m.ModelsResponse)

    # --- search ---------------------------------------------------------------------------------

    @endpoint
    def search(
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
        timeout: float | None = None,
    ) -> Plan[Any, m.SearchResponse]:
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
        return rq.search(request)

    @endpoint
    def search_upload(
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
        timeout: float | None = None,
    ) -> Plan[Any, m.SearchResponse]:
        """``POST /v1/search/upload``: search with an image sent as a multipart file (for
        images too large for a JSON body)."""
        return rq.search_upload(
            image,
            collection=collection,
            k=k,
            variant=variant,
            exclude=exclude,
            offset=offset,
            include_metadata=include_metadata,
            search_params=search_params,
        )

    @endpoint
    def search_bulk(
        self,
        searches: Sequence[m.SearchRequest | Mapping[str, Any]],
        *,
        timeout: float | None = None,
    ) -> Plan[Any, m.BulkSearchResponse]:
        """``POST /v1/search/bulk`` as one request (at most ``limits.max_bulk_searches``);
        each search is answered with its own status. See :meth:`search_many`."""
        return rq.search_bulk(searches)

    @endpoint
    def search_many(
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
        timeout: float | None = None,
    ) -> Plan[Any, list[Any]]:
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
            return Plan([], lambda _: [])
        return rq.search_many(searches, self.limits, return_exceptions=return_exceptions)

    @endpoint
    def score(
        self,
        pairs: Sequence[tuple[Any, Any]],
        variant: str | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[Any, m.ScoreResponse]:
        """``POST /v1/score``: the similarity of each ``(left, right)`` pair of query inputs,
        in order (cut into requests that fit the service's limits)."""
        return rq.score(pairs, variant, self.limits)

    @endpoint
    def embed_texts(
        self, texts: Sequence[str], variant: str | None = None, *, timeout: float | None = None
    ) -> Plan[Any, m.EmbedResponse]:
        """``POST /v1/embed``: one L2-normalised embedding per text, in order."""
        return rq.embed_texts(texts, variant, self.limits)

    @endpoint
    def embed_images(
        self,
        images: Sequence[ImageInput],
        variant: str | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[Any, m.EmbedResponse]:
        """``POST /v1/embed``: one embedding per image (path, bytes or PIL image), in order."""
        return rq.embed_images(images, variant, self.limits)

    @endpoint
    def embeddings(
        self,
        input: str | Sequence[Any],
        model: str,
        encoding_format: m.EncodingFormat | None = None,
        dimensions: int | None = None,
        modality: str | None = None,
        *,
        user: str | None = None,
        timeout: float | None = None,
    ) -> Plan[Any, m.EmbeddingsResponse]:
        """``POST /v1/embeddings`` (the OpenAI shape): ``model`` is a variant name; with
        ``modality="image"`` the inputs are images (any image input)."""
        return rq.embeddings(
            input,
            model,
            encoding_format=encoding_format,
            dimensions=dimensions,
            modality=modality,
            user=user,
        )

    @endpoint
    def item(
        self, collection: str, id: str, variant: str | None = None, *, timeout: float | None = None
    ) -> Plan[Any, m.ItemResponse]:
        """``GET /v1/items/{collection}/{id}``: a bundle item's metadata."""
        return rq.item(collection, id, variant)

    @endpoint
    def thumbnail(
        self, collection: str, id: str, variant: str | None = None, *, timeout: float | None = None
    ) -> Plan[Any, bytes]:
        """``GET /v1/thumbnails/{collection}/{id}``: the item's JPEG thumbnail."""
        return rq.thumbnail(collection, id, variant)

    # --- admin ----------------------------------------------------------------------------------

    @endpoint
    def reload(
        self, bundle: str | None = None, version: str | None = None, *, timeout: float | None = None
    ) -> Plan[Any, m.ReloadResponse]:
        """``POST /v1/admin/reload`` (admin key): load bundles' new versions and swap them in."""
        return rq.reload(bundle, version)

    # --- replica sets ---------------------------------------------------------------------------

    @endpoint
    def replication_status(self, *, timeout: float | None = None) -> Plan[Any, m.ReplicationStatus]:
        """``GET /v1/replication`` (any key): this server's role (leader, follower, fenced),
        term, leader, members, the sequence number its readers see per live collection, and on
        a leader its followers' positions, on a follower how far behind it is."""
        return rq.served("replication_status", m.ReplicationStatus)

    @endpoint
    def replication_position(
        self, *, timeout: float | None = None
    ) -> Plan[Any, m.PositionResponse]:
        """``GET /v1/replication/position`` (any key): the sequence number readers see on this
        server, per live collection."""
        return rq.served("replication_position", m.PositionResponse)

    @endpoint
    def promote(self, *, timeout: float | None = None) -> Plan[Any, m.ReplicationStatus]:
        """``POST /v1/replication/promote`` (admin key) to the follower this client points at:
        it asks every member for the next term and leads once a majority grants it.
        :class:`~crisscross_client.PromotionRefusedError` (409) when none does (a member holds
        writes it lacks: promote the most advanced follower). Not retried once it may have
        been applied, and never sent on to another server."""
        return rq.promote()

    @endpoint
    def follow(
        self, leader_url: str, *, timeout: float | None = None
    ) -> Plan[Any, m.ReplicationStatus]:
        """``POST /v1/replication/follow`` (admin key): the server this client points at
        follows ``leader_url`` (``http(s)://host:port``) from now on; a leader steps down, and
        copies that diverged from the new leader's log are installed again from it."""
        return rq.follow(leader_url)
