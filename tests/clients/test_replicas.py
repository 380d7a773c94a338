"""The clients against replicas, over httpx.MockTransport: every item write carries an
``Idempotency-Key`` (one per request, per batch of a long upsert) that its retries send
unchanged; a 421 ``not_leader`` is followed once to the leader it names; the replication error
codes are their own classes; ``?acks=`` per call, per client and from CRISSCROSS_ACKS; reads of
collections the client wrote send ``X-Min-Seq`` (read-your-writes), reads before any write
none; the replica-set methods and models."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import crisscross_client as cc
from crisscross_client import models as m

FOLLOWER = "http://follower:8001"
LEADER = "http://leader:8000"
LIVE_INFO: dict[str, Any] = {
    "name": "v",
    "dim": 2,
    "variant": None,
    "fields": {},
    "count": 0,
    "seq": 0,
    "rows": 0,
    "base_count": 0,
    "base_version": None,
    "index": "Flat",
    "log_bytes": 0,
    "created": "2026-11-29T00:00:00Z",
}
STATUS: dict[str, Any] = {
    "replica": "r1",
    "url": FOLLOWER,
    "role": "follower",
    "term": 3,
    "leader": LEADER,
    "replica_set_size": 3,
    "members": [LEADER, FOLLOWER],
    "collections": {"v": 7},
    "followers": [],
    "lag": {"v": 0},
    "last_error": None,
}
SEARCH_ANSWER: dict[str, Any] = {
    "results": [],
    "collection": "v",
    "variant": None,
    "bundle": "live",
    "bundle_version": "live",
    "next_offset": None,
    "timings_ms": {"encode": 0.0, "search": 0.5, "total": 1.0},
}


def _error(
    status: int, code: str, headers: dict[str, str] | None = None, message: str = "refused"
) -> httpx.Response:
    body = {"error": {"code": code, "message": message, "request_id": "r-1"}}
    return httpx.Response(status, json=body, headers=headers)


def _not_leader(leader: str | None = LEADER) -> httpx.Response:
    return _error(421, "not_leader", None if leader is None else {"x-leader": leader})


def _answer_of(request: httpx.Request) -> dict[str, Any]:
    """The success answer of the route ``request`` calls."""
    path = request.url.path
    if path.endswith("/items/delete"):
        return {"seq": 5, "deleted": 1}
    if path.endswith("/items/get"):
        return {"items": [], "seq": 5}
    if path.endswith("/items/scroll"):
        return {"items": [], "next_cursor": None}
    if path.endswith("/items/count"):
        return {"count": 0}
    if path.endswith("/items"):
        return {"seq": 4, "upserted": len(json.loads(request.content)["items"])}
    if "/items/" in path:
        return {"seq": 6}
    if path == "/v1/search/bulk":
        count = len(json.loads(request.content)["searches"])
        return {
            "responses": [{"status": 200, "result": SEARCH_ANSWER}] * count,
            "timings_ms": SEARCH_ANSWER["timings_ms"],
        }
    if path.startswith("/v1/search"):
        return SEARCH_ANSWER
    if path.startswith("/v1/replication"):
        return {"collections": {"v": 7}} if path.endswith("/position") else STATUS
    if request.method == "DELETE":
        return {"dropped": path.rsplit("/", 1)[-1]}
    return LIVE_INFO


class Service:
    """A handler recording every request; it answers each from ``script`` first (one entry
    per request: an answer, or an exception raised as a transport error), then with the
    route's success answer."""

    def __init__(self, *script: httpx.Response | Exception) -> None:
        self.script = list(script)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.script:
            answer = self.script.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer
        return httpx.Response(200, json=_answer_of(request))

    def sent_keys(self) -> list[str | None]:
        return [request.headers.get("idempotency-key") for request in self.requests]

    def min_seqs(self) -> list[str | None]:
        return [request.headers.get("x-min-seq") for request in self.requests]


def _client(service: Service, max_retries: int = 3, **kwargs: Any) -> cc.Client:
    """A sync client of ``service`` at the follower's URL that does not sleep between
    retries."""
    policy = cc.RetryPolicy(max_retries=max_retries, jitter=lambda: 0.0)
    options: dict[str, Any] = {"retry": policy, "sleep": lambda _: None, **kwargs}
    return cc.Client(FOLLOWER, transport=httpx.MockTransport(service), **options)


WRITES: dict[str, Callable[[cc.Client], object]] = {
    "upsert": lambda c: c.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}]),
    "delete-ids": lambda c: c.delete_items("v", ids=["a"]),
    "delete-filter": lambda c: c.delete_items("v", filter={"field": "k", "eq": 1}),
    "patch": lambda c: c.patch_item("v", "a", {"k": 2}),
}


# --- idempotency keys ---------------------------------------------------------------------------


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_an_item_write_sends_one_key_unchanged_on_each_retry(
    write: Callable[[cc.Client], object],
) -> None:
    # A read timeout (the write may have been applied), a 502, a replication_timeout: each
    # retried with the key of the first attempt.
    service = Service(
        httpx.ReadTimeout("slow"),
        _error(502, "bad_gateway"),
        _error(503, "replication_timeout", {"Retry-After": "1", "x-seq": "4"}),
    )
    with _client(service) as client:
        write(client)
    keys = service.sent_keys()
    assert len(keys) == 4
    assert keys[0] is not None
    assert len(keys[0]) == 32
    int(keys[0], 16)  # a uuid4 in hex
    assert set(keys) == {keys[0]}
    # The next call is another logical write: another key.
    with _client(service) as client:
        write(client)
    assert service.sent_keys()[-1] not in (None, keys[0])


def test_each_batch_of_a_bulk_upsert_has_its_own_key_kept_across_its_retries() -> None:
    items = [{"id": f"i{n}", "vector": [1.0, float(n)]} for n in range(5)]
    service = Service(httpx.ConnectError("refused"), _error(503, "no_quorum", {"Retry-After": "0"}))
    with _client(service) as client:
        answer = client.upsert("v", items, batch_size=2)
    assert answer.upserted == 5
    by_batch: dict[tuple[str, ...], set[str | None]] = {}
    for request in service.requests:
        ids = tuple(item["id"] for item in json.loads(request.content)["items"])
        by_batch.setdefault(ids, set()).add(request.headers.get("idempotency-key"))
    assert list(by_batch) == [("i0", "i1"), ("i2", "i3"), ("i4",)]
    assert [len(keys) for keys in by_batch.values()] == [1, 1, 1]
    assert len(set.union(*by_batch.values())) == 3
    assert len(service.requests) == 5  # the first batch sent three times


def test_parallel_batches_keep_their_own_keys() -> None:
    items = [{"id": f"i{n}", "vector": [1.0, float(n)]} for n in range(6)]
    service = Service()
    with _client(service) as client:
        client.upsert("v", items, batch_size=2, parallelism=3)
    assert len(set(service.sent_keys())) == 3
    assert None not in service.sent_keys()


def test_reads_and_collection_calls_send_no_key() -> None:
    service = Service()
    with _client(service) as client:
        client.search("v", vector=[1.0, 0.0])
        client.get_items("v", ["a"])
        client.create_collection("v", dim=2)
        client.add_fields("v", {"k": "integer"})
    assert service.sent_keys() == [None, None, None, None]


def test_only_the_service_certainly_refusing_retries_a_create_or_a_drop() -> None:
    service = Service(_error(503, "no_quorum", {"Retry-After": "0"}))
    with _client(service) as client:
        client.delete_collection("v")
    assert len(service.requests) == 2
    service = Service(_error(503, "replication_timeout", {"Retry-After": "0"}))
    with _client(service) as client, pytest.raises(cc.ReplicationTimeoutError):
        client.create_collection("v", dim=2)
    assert len(service.requests) == 1


def test_retries_of_a_write_stay_bounded() -> None:
    refusal = _error(503, "replication_timeout", {"Retry-After": "2", "x-seq": "9"})
    service = Service(*[refusal] * 10)
    waits: list[float] = []
    with _client(service, max_retries=2) as client, pytest.raises(cc.ReplicationTimeout) as caught:
        client.delete_items("v", ids=["a"])
    assert len(service.requests) == 3
    assert caught.value.seq == 9
    assert caught.value.retry_after == 2.0
    patched = _client(Service(*[refusal] * 10), max_retries=1, sleep=waits.append)
    with patched as client, pytest.raises(cc.ReplicationTimeout):
        client.patch_item("v", "a", {"k": 1})
    assert waits == [2.0]  # the Retry-After asked for


# --- 421 not_leader -----------------------------------------------------------------------------


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_a_write_refused_by_a_follower_goes_to_the_leader_it_names_with_its_key(
    write: Callable[[cc.Client], object],
) -> None:
    service = Service(_not_leader())
    with _client(service) as client:
        write(client)
        info = client.last_response
    first, second = service.requests
    assert str(first.url).startswith(f"{FOLLOWER}/v1/collections/v/")
    assert str(second.url) == str(first.url).replace(FOLLOWER, LEADER)
    assert second.content == first.content
    assert second.headers["idempotency-key"] == first.headers["idempotency-key"]
    assert second.headers.get("authorization") == first.headers.get("authorization")
    assert info is not None
    assert info.url.startswith(LEADER)
    assert info.attempts == 2


def test_the_leader_is_followed_once_per_call_and_retries_stay_with_it() -> None:
    # follower 421 -> leader 503 no_quorum (retried at the leader) -> leader 200
    service = Service(_not_leader(), _error(503, "no_quorum", {"Retry-After": "0"}))
    with _client(service) as client:
        client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])
        # the next call starts at the client's own root again
        client.patch_item("v", "a", {"k": 1})
    hosts = [request.url.host for request in service.requests]
    assert hosts == ["follower", "leader", "leader", "follower"]
    # a second 421 (the leader moved again) is raised, naming the new leader
    service = Service(_not_leader(), _not_leader("http://other:8002"))
    with _client(service) as client, pytest.raises(cc.NotLeaderError) as caught:
        client.delete_items("v", ids=["a"])
    assert len(service.requests) == 2
    assert caught.value.leader == "http://other:8002"
    assert caught.value.url is not None
    assert caught.value.url.startswith(LEADER)


@pytest.mark.parametrize("leader", [None, "not a url", "ftp://leader:21"])
def test_a_421_without_a_usable_leader_is_raised(leader: str | None) -> None:
    service = Service(_not_leader(leader))
    with _client(service) as client, pytest.raises(cc.NotLeader) as caught:
        client.patch_item("v", "a", {"k": 1})
    assert len(service.requests) == 1
    assert caught.value.status == 421
    assert caught.value.code == "not_leader"
    assert caught.value.leader == leader


def test_collection_changes_follow_the_leader_too() -> None:
    calls: list[Callable[[cc.Client], object]] = [
        lambda c: c.create_collection("v", dim=2),
        lambda c: c.delete_collection("v"),
        lambda c: c.add_fields("v", {"k": "integer"}),
    ]
    for call in calls:
        service = Service(_not_leader())
        with _client(service) as client:
            call(client)
        assert [request.url.host for request in service.requests] == ["follower", "leader"]


def test_replica_set_commands_are_never_sent_on() -> None:
    for call in (lambda c: c.promote(), lambda c: c.follow("http://x:1")):
        service = Service(_not_leader())
        with _client(service) as client, pytest.raises(cc.NotLeaderError):
            call(client)
        assert len(service.requests) == 1


def test_the_async_client_follows_the_leader() -> None:
    service = Service(_not_leader())

    async def scenario() -> int:
        async with cc.AsyncClient(FOLLOWER, transport=httpx.MockTransport(service)) as client:
            return (await client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])).seq

    assert asyncio.run(scenario()) == 4
    assert [request.url.host for request in service.requests] == ["follower", "leader"]
    assert len(set(service.sent_keys())) == 1


# --- error classes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "cls", "short", "base"),
    [
        (421, "not_leader", cc.NotLeaderError, cc.NotLeader, cc.CrisscrossError),
        (503, "no_quorum", cc.NoQuorumError, cc.NoQuorum, cc.ServiceUnavailableError),
        (
            503,
            "replication_timeout",
            cc.ReplicationTimeoutError,
            cc.ReplicationTimeout,
            cc.ServiceUnavailableError,
        ),
        (
            503,
            "replica_behind",
            cc.ReplicaBehindError,
            cc.ReplicaBehind,
            cc.ServiceUnavailableError,
        ),
        (409, "promotion_refused", cc.PromotionRefusedError, cc.PromotionRefused, cc.ConflictError),
    ],
)
def test_each_replication_code_is_its_own_class(
    status: int, code: str, cls: type[cc.CrisscrossError], short: type, base: type
) -> None:
    assert cc.errors.error_class(status, code) is cls
    assert short is cls
    assert issubclass(cls, base)
    assert cls.__name__ in cc.__all__
    service = Service(_error(status, code, {"x-leader": "", "x-seq": "12"}))
    with _client(service, max_retries=0) as client, pytest.raises(cls) as caught:
        client.health()
    assert (caught.value.status, caught.value.code) == (status, code)


def test_the_headers_of_a_replication_error_are_read() -> None:
    timeout = cc.errors.error_from_answer(
        503, {"error": {"code": "replication_timeout"}}, "", headers={"x-seq": "41"}
    )
    assert isinstance(timeout, cc.ReplicationTimeoutError)
    assert timeout.seq == 41
    bad_seq = cc.errors.error_from_answer(
        503, {"error": {"code": "replication_timeout"}}, "", headers={"x-seq": "x"}
    )
    assert isinstance(bad_seq, cc.ReplicationTimeoutError)
    assert bad_seq.seq is None
    moved = cc.errors.error_from_answer(
        421, {"error": {"code": "not_leader"}}, "", headers={"x-leader": LEADER}
    )
    assert isinstance(moved, cc.NotLeaderError)
    assert moved.leader == LEADER
    # a 421 of another code (a proxy's) is a plain 4xx; a code under another status is not
    # its class
    assert cc.errors.error_class(421, None) is cc.BadRequestError
    assert cc.errors.error_class(500, "no_quorum") is cc.ServerError


def test_an_upsert_error_keeps_the_replication_error() -> None:
    refusal = _error(503, "replication_timeout", {"Retry-After": "0", "x-seq": "3"})
    service = Service(*[refusal] * 10)
    items = [{"id": f"i{n}", "vector": [1.0, 0.0]} for n in range(3)]
    with _client(service, max_retries=1) as client, pytest.raises(cc.UpsertError) as caught:
        client.upsert("v", items, batch_size=2)
    assert isinstance(caught.value.error, cc.ReplicationTimeoutError)
    assert caught.value.error.seq == 3
    assert caught.value.code == "replication_timeout"


def test_a_promotion_refused_is_raised() -> None:
    service = Service(_error(409, "promotion_refused"))
    with _client(service) as client, pytest.raises(cc.PromotionRefusedError):
        client.promote()
    assert len(service.requests) == 1


# --- acks ---------------------------------------------------------------------------------------


def _acks(service: Service) -> list[str | None]:
    return [request.url.params.get("acks") for request in service.requests]


def test_acks_per_call_and_the_clients_default() -> None:
    service = Service()
    with _client(service) as client:
        assert client.acks is None
        for write in WRITES.values():
            write(client)
        client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}], acks="all")
        client.delete_items("v", ids=["a"], acks="leader")
        client.patch_item("v", "a", {"k": 1}, acks="majority")
    assert _acks(service) == [None] * 4 + ["all", "leader", "majority"]
    service = Service()
    with _client(service, acks="leader") as client:
        assert client.acks == "leader"
        for write in WRITES.values():
            write(client)
        client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}], acks="all")
        client.with_options(acks="majority").patch_item("v", "a", {"k": 1})
        client.search("v", vector=[1.0, 0.0])  # reads take none
        assert "acks='leader'" in repr(client)
    assert _acks(service) == ["leader"] * 4 + ["all", "majority", None]


def test_acks_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_ACKS", "all")
    service = Service()
    with _client(service) as client:
        assert client.acks == "all"
        client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])
    with _client(service, acks="leader") as client:  # the argument wins
        client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])
    assert _acks(service) == ["all", "leader"]
    monkeypatch.setenv("CRISSCROSS_ACKS", "")
    with _client(service) as client:
        assert client.acks is None
    monkeypatch.setenv("CRISSCROSS_ACKS", "quorum")
    with pytest.raises(ValueError, match="CRISSCROSS_ACKS"):
        _client(service)


def test_an_unknown_acks_is_refused_before_anything_is_sent() -> None:
    service = Service()
    with pytest.raises(ValueError, match="acks"):
        _client(service, acks="most")
    with _client(service) as client:
        with pytest.raises(ValueError, match="acks"):
            client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}], acks="two")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="acks"):
            client.with_options(acks="two")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="acks"):
            client.create_collection("v", dim=2, acks="two")  # type: ignore[arg-type]
    assert service.requests == []


def test_a_collection_is_created_with_its_acks_and_shows_its_replicas() -> None:
    replicas = [
        {"url": LEADER, "role": "leader", "seq": 7},
        {"url": FOLLOWER, "role": "follower", "seq": 5},
    ]
    service = Service(httpx.Response(201, json=LIVE_INFO | {"acks": "all", "replicas": replicas}))
    with _client(service) as client:
        info = client.create_collection("v", dim=2, acks="all")
    assert json.loads(service.requests[0].content) == {"name": "v", "dim": 2, "acks": "all"}
    assert info.acks == "all"
    assert info.replicas == [
        m.ReplicaPosition(url=LEADER, role="leader", seq=7),
        m.ReplicaPosition(url=FOLLOWER, role="follower", seq=5),
    ]
    assert m.LiveCollectionInfo.model_validate(LIVE_INFO).replicas == []  # an older service


# --- read-your-writes ---------------------------------------------------------------------------

READS: dict[str, Callable[[cc.Client], object]] = {
    "search": lambda c: c.search("v", vector=[1.0, 0.0]),
    "search_many": lambda c: c.search_many([[1.0, 0.0]], "v"),
    "search_bulk": lambda c: c.search_bulk([{"collection": "v", "query": {"vector": [1.0, 0.0]}}]),
    "search_upload": lambda c: c.search_upload(b"\x89PNG\r\n\x1a\nxx", "v"),
    "get_items": lambda c: c.get_items("v", ["a"]),
    "scroll_items": lambda c: c.scroll_items("v"),
    "iter_items": lambda c: list(c.iter_items("v")),
    "count_items": lambda c: c.count_items("v"),
}


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
def test_a_read_asks_for_the_clients_writes_and_none_before(
    read: Callable[[cc.Client], object],
) -> None:
    service = Service()
    with _client(service) as client:
        read(client)
        client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])  # seq 4
        read(client)
        client.delete_items("v", ids=["a"])  # seq 5
        read(client)
        client.patch_item("other", "a", {"k": 1})  # another collection: seq 6 there
        read(client)
        assert client.written_seqs == {"v": 5, "other": 6}
    reads = [
        request.headers.get("x-min-seq")
        for request in service.requests
        if "idempotency-key" not in request.headers
    ]
    assert reads == [None, "v=4", "v=5", "v=5"]


def test_a_bulk_search_names_every_collection_written_among_those_it_reads() -> None:
    service = Service()
    searches = [
        {"collection": name, "query": {"vector": [1.0, 0.0]}} for name in ("a", "b", "c", "a")
    ]
    with _client(service) as client:
        client.upsert("c", [{"id": "x", "vector": [1.0, 0.0]}])
        client.patch_item("a", "x", {"k": 1})
        client.upsert("elsewhere", [{"id": "x", "vector": [1.0, 0.0]}])
        client.search_bulk(searches)
        client.search_many([[1.0, 0.0], [0.0, 1.0]], "b")
    assert service.min_seqs()[-2:] == ["a=6,c=4", None]


def test_the_highest_seq_is_kept_whatever_order_answers_come_in() -> None:
    service = Service(
        httpx.Response(200, json={"seq": 9, "upserted": 1}),
        httpx.Response(200, json={"seq": 8, "upserted": 1}),
    )
    with _client(service) as client:
        client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])
        client.upsert("v", [{"id": "b", "vector": [1.0, 0.0]}])
        assert client.written_seqs == {"v": 9}


def test_a_replication_timeout_is_remembered_as_written() -> None:
    """The write holds on the leader (x-seq): the next read asks for it."""
    refusal = _error(503, "replication_timeout", {"Retry-After": "0", "x-seq": "11"})
    service = Service(refusal)
    with _client(service, max_retries=0) as client:
        with pytest.raises(cc.UpsertError) as caught:
            client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])
        assert isinstance(caught.value.error, cc.ReplicationTimeoutError)
        client.count_items("v")
    assert service.min_seqs()[-1] == "v=11"


def test_a_failed_write_and_a_failed_read_leave_the_memory_as_it_was() -> None:
    service = Service(_error(422, "invalid_input"), _error(404, "not_found"))
    with _client(service) as client:
        with pytest.raises(cc.InvalidInputError):
            client.delete_items("v", ids=["a"])
        with pytest.raises(cc.NotFoundError):
            client.get_items("v", ["a"])
        assert client.written_seqs == {}


def test_creating_or_dropping_a_collection_forgets_its_seqs() -> None:
    service = Service()
    with _client(service) as client:
        client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])
        client.upsert("w", [{"id": "a", "vector": [1.0, 0.0]}])
        client.delete_collection("v")
        assert client.written_seqs == {"w": 4}
        client.search("v", vector=[1.0, 0.0])
        client.create_collection("w", dim=2)
        client.search("w", vector=[1.0, 0.0])
    assert service.min_seqs()[-1] is None
    assert service.min_seqs()[-3] is None


def test_read_your_writes_can_be_turned_off() -> None:
    service = Service()
    with _client(service, read_your_writes=False) as client:
        assert not client.read_your_writes
        client.upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])
        client.search("v", vector=[1.0, 0.0])
        client.get_items("v", ["a"])
        assert client.written_seqs == {"v": 4}  # still known, not sent
        assert "read_your_writes=False" in repr(client)
    assert service.min_seqs() == [None, None, None]


def test_copies_share_what_was_written_and_a_replica_behind_is_retried() -> None:
    behind = _error(503, "replica_behind", {"Retry-After": "0"})
    service = Service()
    with _client(service) as client:
        client.with_options(timeout=5).upsert("v", [{"id": "a", "vector": [1.0, 0.0]}])
        service.script.append(behind)
        client.with_options(max_retries=1).count_items("v")
    assert service.min_seqs()[1:] == ["v=4", "v=4"]  # the retry asks for the same


def test_the_async_client_reads_its_writes() -> None:
    service = Service()

    async def scenario() -> dict[str, int]:
        async with cc.AsyncClient(FOLLOWER, transport=httpx.MockTransport(service)) as client:
            await client.get_items("v", ["a"])
            items = [{"id": f"i{n}", "vector": [1.0, 0.0]} for n in range(4)]
            await client.upsert("v", items, batch_size=2, parallelism=2)
            await client.search("v", vector=[1.0, 0.0])
            async for _ in client.iter_items("v"):
                pass
            return client.written_seqs

    assert asyncio.run(scenario()) == {"v": 4}
    assert service.min_seqs()[0] is None
    assert service.min_seqs()[-2:] == ["v=4", "v=4"]


# --- the replica-set methods --------------------------------------------------------------------


def test_the_replica_set_methods_send_their_requests_and_read_their_answers() -> None:
    service = Service()
    with _client(service, api_key="admin") as client:
        status = client.replication_status()
        position = client.replication_position()
        promoted = client.promote()
        following = client.follow(LEADER)
    assert isinstance(status, m.ReplicationStatus)
    assert (status.role, status.leader, status.collections) == ("follower", LEADER, {"v": 7})
    assert position.collections == {"v": 7}
    assert promoted.term == following.term == 3
    sent = [(request.method, request.url.path) for request in service.requests]
    assert sent == [
        ("GET", "/v1/replication"),
        ("GET", "/v1/replication/position"),
        ("POST", "/v1/replication/promote"),
        ("POST", "/v1/replication/follow"),
    ]
    assert json.loads(service.requests[3].content) == {"leader": LEADER}
    assert service.requests[2].content == b""


def test_a_promotion_is_not_retried_once_it_may_have_been_applied() -> None:
    service = Service(httpx.ReadTimeout("slow"))
    with _client(service) as client, pytest.raises(cc.Timeout):
        client.promote()
    assert len(service.requests) == 1
    service = Service(httpx.ReadTimeout("slow"))
    with _client(service) as client:
        client.follow(LEADER)  # following the same leader twice is following it
    assert len(service.requests) == 2
