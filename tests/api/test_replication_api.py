"""The replication routes and parameters over HTTP, one app: the set's state, a follower's
fetch and base copy, idempotency keys, acks, X-Min-Seq, and a follower's refusal of writes
naming its leader."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.engine.replication.wire import decode_answer
from service.http.app import create_app
from service.http.errors import ErrorCode
from service.settings import Settings
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready

DIM = 4
ITEMS = {"items": [{"id": "a", "vector": [1, 0, 0, 0]}, {"id": "b", "vector": [0, 1, 0, 0]}]}


def _client(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with TestClient(app) as client:
        wait_ready(client)
        yield client


@pytest.fixture
def leader(settings: Settings, tmp_path: Path) -> Iterator[TestClient]:
    live = settings.model_copy(update={"collections_dir": tmp_path / "leader"})
    yield from _client(live)


def _create(client: TestClient) -> None:
    response = client.post("/v1/collections", json={"name": "v", "dim": DIM, "acks": "all"})
    assert response.status_code == 201, response.text
    assert response.json()["acks"] == "all"


def test_a_server_alone_leads_and_says_so(leader: TestClient) -> None:
    _create(leader)
    status = leader.get("/v1/replication").json()
    assert (status["role"], status["term"], status["replica_set_size"]) == ("leader", 0, 1)
    assert status["collections"] == {"v": 0}
    assert leader.get("/v1/replication/position").json() == {"collections": {"v": 0}}
    info = leader.get("/v1/collections/v").json()
    assert info["replicas"] == [{"url": status["url"], "role": "leader", "seq": 0}]


def test_a_retried_write_with_its_key_applies_once(leader: TestClient) -> None:
    _create(leader)
    headers = {"Idempotency-Key": "write-1"}
    first = leader.post("/v1/collections/v/items?acks=all", json=ITEMS, headers=headers)
    again = leader.post("/v1/collections/v/items?acks=all", json=ITEMS, headers=headers)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json() == {"seq": 1, "upserted": 2}
    assert leader.get("/v1/collections/v").json()["seq"] == 1
    deleted = leader.post(
        "/v1/collections/v/items/delete", json={"ids": ["a"]}, headers={"Idempotency-Key": "d"}
    )
    assert deleted.json() == {"seq": 2, "deleted": 1}
    repeat = leader.post(
        "/v1/collections/v/items/delete", json={"ids": ["a"]}, headers={"Idempotency-Key": "d"}
    )
    assert repeat.json() == {"seq": 2, "deleted": 1}  # the first answer, not "0 deleted"


@pytest.mark.parametrize(
    ("path", "headers", "param"),
    [
        ("/v1/collections/v/items?acks=two", {}, "acks"),
        ("/v1/collections/v/items", {"Idempotency-Key": "has space"}, "idempotency-key"),
    ],
)
def test_bad_replication_parameters_are_refused_before_anything_is_logged(
    leader: TestClient, path: str, headers: dict[str, str], param: str
) -> None:
    _create(leader)
    response = leader.post(path, json=ITEMS, headers=headers)
    assert response.status_code == 422
    assert response.json()["error"]["param"] == param
    assert leader.get("/v1/collections/v").json()["seq"] == 0


def test_min_seq_on_reads(leader: TestClient) -> None:
    _create(leader)
    seq = leader.post("/v1/collections/v/items", json=ITEMS).json()["seq"]
    body = {"ids": ["a"]}
    found = leader.post("/v1/collections/v/items/get", json=body, headers={"X-Min-Seq": str(seq)})
    assert [item["id"] for item in found.json()["items"]] == ["a"]
    # A leader holds every write it answered: a later number is not waited for.
    later = leader.post("/v1/collections/v/items/count", json={}, headers={"X-Min-Seq": "v=999"})
    assert later.json() == {"count": 2}
    bad = leader.post("/v1/collections/v/items/get", json=body, headers={"X-Min-Seq": "v="})
    assert bad.status_code == 422
    assert bad.json()["error"]["param"] == "x-min-seq"


def test_a_follower_fetches_records_and_copies_the_base(leader: TestClient) -> None:
    _create(leader)
    leader.post("/v1/collections/v/items", json=ITEMS)
    fetch = {"replica": "f1", "term": 0, "positions": {}}
    response = leader.post("/v1/replication/fetch", json=fetch)
    assert response.headers["content-type"] == "application/octet-stream"
    (state,) = decode_answer(response.content).collections
    assert state.install == "new on this follower"
    uid = state.spec.uid
    fetch["positions"] = {"v": {"uid": uid, "after": 0, "term": 0}}
    (state,) = decode_answer(leader.post("/v1/replication/fetch", json=fetch).content).collections
    assert state.install is None
    assert state.records
    assert leader.post("/v1/collections/v/compact").status_code == 200
    base = leader.get("/v1/replication/collections/v/base")
    assert base.status_code == 200
    assert base.headers["x-base-seq"] == "1"
    with tarfile.open(fileobj=io.BytesIO(base.content)) as archive:
        names = archive.getnames()
    assert any(name.startswith(f"base/{base.headers['x-base-version']}/") for name in names)
    later = {"replica": "f1", "term": 5, "positions": {}}
    stepped = leader.post("/v1/replication/fetch", json=later)
    assert stepped.status_code == 421  # a replica of a later term: this leader steps down
    assert leader.get("/v1/replication").json()["role"] == "fenced"
    refused = leader.post("/v1/collections/v/items", json=ITEMS)
    assert refused.status_code == 421
    assert refused.json()["error"]["code"] == "not_leader"


def test_a_server_does_not_follow_itself(leader: TestClient) -> None:
    url = leader.get("/v1/replication").json()["url"]
    response = leader.post("/v1/replication/follow", json={"leader": url})
    assert response.status_code == 422
    assert response.json()["error"]["param"] == "leader"


def test_a_follower_refuses_writes_naming_its_leader(settings: Settings, tmp_path: Path) -> None:
    follower = settings.model_copy(
        update={"collections_dir": tmp_path / "f", "follow": "http://127.0.0.1:9"}
    )
    for client in _client(follower):
        assert client.get("/v1/replication").json()["role"] == "follower"
        response = client.post("/v1/collections", json={"name": "v", "dim": DIM})
        assert response.status_code == 421
        assert response.headers["x-leader"] == "http://127.0.0.1:9"
        fetch = client.post("/v1/replication/fetch", json={"replica": "x", "term": 0})
        assert fetch.status_code == 421
        assert client.get("/v1/replication/collections/v/base").status_code == 421


def test_every_answer_names_the_replica_that_gave_it(leader: TestClient) -> None:
    _create(leader)
    answer = leader.post("/v1/collections/v/items/count", json={})
    url = leader.get("/v1/replication").json()["url"]
    assert answer.headers["x-replica"] == f"{url}; role=leader; term=0"


def test_a_promotion_no_majority_grants_is_refused(settings: Settings, tmp_path: Path) -> None:
    follower = settings.model_copy(
        update={
            "collections_dir": tmp_path / "f",
            "follow": "http://127.0.0.1:9",
            "replica_set_size": 3,
        }
    )
    for client in _client(follower):
        response = client.post("/v1/replication/promote")
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "promotion_refused"
        assert client.get("/v1/replication").json()["role"] == "follower"  # as it was


def test_a_leader_no_majority_follows_refuses_writes(settings: Settings, tmp_path: Path) -> None:
    alone = settings.model_copy(update={"collections_dir": tmp_path / "l", "replica_set_size": 3})
    for client in _client(alone):
        response = client.post("/v1/collections", json={"name": "v", "dim": DIM})
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "no_quorum"
        assert int(response.headers["retry-after"]) >= 1


def test_acknowledgements_that_do_not_come_time_out(settings: Settings, tmp_path: Path) -> None:
    leader = settings.model_copy(
        update={"collections_dir": tmp_path / "l", "replica_set_size": 3, "ack_timeout_s": 0.2}
    )
    for client in _client(leader):
        # One follower fetched: a majority of three follows, so writes are taken...
        assert client.post("/v1/replication/fetch", json={"replica": "f", "term": 0}).is_success
        _create(client)
        # ...but acks=all needs the third, which never comes.
        response = client.post("/v1/collections/v/items", json=ITEMS)
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "replication_timeout"
        assert response.headers["x-seq"] == "1"
        assert client.get("/v1/collections/v").json()["seq"] == 1  # held on the leader


def test_a_follower_behind_a_read_says_so(settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    for client in _client(settings.model_copy(update={"collections_dir": folder})):
        _create(client)
    follower = settings.model_copy(
        update={"collections_dir": folder, "follow": "http://127.0.0.1:9", "read_wait_s": 0.2}
    )
    for client in _client(follower):
        response = client.post("/v1/collections/v/items/count", json={}, headers={"X-Min-Seq": "5"})
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "replica_behind"


REPLICATION_CODES = frozenset(
    {
        ErrorCode.NOT_LEADER,
        ErrorCode.NO_QUORUM,
        ErrorCode.REPLICATION_TIMEOUT,
        ErrorCode.REPLICA_BEHIND,
        ErrorCode.PROMOTION_REFUSED,
    }
)
"""The error codes only a replica set answers (each exercised in this module)."""
