"""The replicas' calls over HTTP (httpx), with the server's follow key: the routes of
:mod:`service.http.routes.replication` on the other side."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

import anyio
import httpx

from service.engine.replication.link import (
    Ballot,
    DownloadedBase,
    LeaderMovedError,
    LinkError,
    MemberView,
    Vote,
)
from service.engine.replication.wire import (
    FetchAnswer,
    FetchRequest,
    WireError,
    decode_answer,
    request_document,
)
from storage.live.base_transfer import unpack_base

# A follower fetches about once a second (long polls): httpx's line per request is noise.
logging.getLogger("httpx").setLevel(logging.WARNING)

LEADER_HEADER = "x-leader"
BASE_SEQ_HEADER = "x-base-seq"
BASE_VERSION_HEADER = "x-base-version"
BASE_COLLECTION_HEADER = "x-base-collection"
BASE_TIMEOUT_S = 600.0
"""Longest a base download may take (a large collection over a slow link)."""


class HttpReplicaLink:
    """:class:`~service.engine.replication.link.ReplicaLink` over HTTP."""

    def __init__(self, key: str | None) -> None:
        headers = {} if key is None else {"Authorization": f"Bearer {key}"}
        self._client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0))

    async def _call(
        self, method: str, url: str, timeout_s: float, json: Any = None
    ) -> httpx.Response:
        try:
            response = await self._client.request(method, url, json=json, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise LinkError(f"{url}: {type(exc).__name__}: {exc}") from None
        if response.status_code == 421:
            raise LeaderMovedError(_message(response), response.headers.get(LEADER_HEADER))
        if response.status_code != 200:
            raise LinkError(f"{url}: {response.status_code} {_message(response)}")
        return response

    async def fetch(self, leader: str, request: FetchRequest, timeout_s: float) -> FetchAnswer:
        url = f"{leader.rstrip('/')}/v1/replication/fetch"
        response = await self._call("POST", url, timeout_s, request_document(request))
        try:
            return decode_answer(response.content)
        except WireError as exc:
            raise LinkError(f"{url}: {exc}") from None

    async def download_base(self, leader: str, name: str, into: Path) -> DownloadedBase:
        url = f"{leader.rstrip('/')}/v1/replication/collections/{name}/base"
        spool = into / "base.tar"
        into.mkdir(parents=True, exist_ok=True)
        try:
            async with self._client.stream("GET", url, timeout=BASE_TIMEOUT_S) as response:
                if response.status_code == 421:
                    await response.aread()
                    raise LeaderMovedError(_message(response), response.headers.get(LEADER_HEADER))
                if response.status_code != 200:
                    await response.aread()
                    raise LinkError(f"{url}: {response.status_code} {_message(response)}")
                seq = int(response.headers[BASE_SEQ_HEADER])
                version = response.headers.get(BASE_VERSION_HEADER) or None
                collection = response.headers[BASE_COLLECTION_HEADER]
                async with await anyio.open_file(spool, "wb") as out:
                    async for chunk in response.aiter_bytes():
                        await out.write(chunk)
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            raise LinkError(f"{url}: {type(exc).__name__}: {exc}") from None

        def unpack() -> DownloadedBase:
            try:
                with spool.open("rb") as stream:
                    received = unpack_base(stream, into / "files", version)
            except ValueError as exc:
                raise LinkError(f"{url}: {exc}") from None
            finally:
                spool.unlink(missing_ok=True)
            return DownloadedBase(received, seq, collection)

        return await anyio.to_thread.run_sync(unpack)

    async def position(self, leader: str, timeout_s: float) -> dict[str, int]:
        url = f"{leader.rstrip('/')}/v1/replication/position"
        response = await self._call("GET", url, timeout_s)
        try:
            return {str(k): int(v) for k, v in response.json()["collections"].items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise LinkError(f"{url}: {exc}") from None

    async def vote(self, member: str, vote: Vote, timeout_s: float) -> Ballot:
        url = f"{member.rstrip('/')}/v1/replication/vote"
        body = {
            "term": vote.term,
            "candidate": vote.candidate,
            "positions": {
                name: {"uid": p.uid, "after": p.after, "term": p.term}
                for name, p in vote.positions.items()
            },
        }
        response = await self._call("POST", url, timeout_s, body)
        try:
            document = response.json()
            return Ballot(
                bool(document["granted"]),
                int(document["term"]),
                str(document.get("replica", "")),
                document.get("reason"),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise LinkError(f"{url}: {exc}") from None

    async def status(self, member: str, timeout_s: float) -> MemberView:
        url = f"{member.rstrip('/')}/v1/replication"
        response = await self._call("GET", url, timeout_s)
        try:
            document = response.json()
            leader = document.get("leader")
            return MemberView(
                str(document["role"]),
                int(document["term"]),
                None if leader is None else str(leader),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise LinkError(f"{url}: {exc}") from None

    async def follow(self, member: str, leader: str, timeout_s: float) -> None:
        url = f"{member.rstrip('/')}/v1/replication/follow"
        await self._call("POST", url, timeout_s, {"leader": leader})

    async def close(self) -> None:
        await self._client.aclose()


def _message(response: httpx.Response) -> str:
    with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
        return str(response.json()["error"]["message"])
    return response.text[:200]
