"""The replication routes' bodies: bounded, a leader URL that is one."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from service.http.schemas.replication import FetchBody, FollowBody, VoteBody


def test_bodies_are_bounded_and_strict() -> None:
    body = FetchBody.model_validate({"replica": "r", "term": 0, "positions": {}})
    assert body.wait_ms == 0
    with pytest.raises(ValidationError):
        FetchBody.model_validate({"replica": "r", "term": 0, "wait_ms": 60_000})
    with pytest.raises(ValidationError):
        FetchBody.model_validate({"replica": "r", "term": -1})
    with pytest.raises(ValidationError):
        VoteBody.model_validate({"term": 0, "candidate": "http://x"})
    with pytest.raises(ValidationError):
        FetchBody.model_validate({"replica": "r", "term": 0, "extra": 1})


@pytest.mark.parametrize(
    "leader", ["ftp://host:1", "host:8000", "", "http://h\u00e9:1", "http://a b"]
)
def test_a_leader_must_be_an_http_url(leader: str) -> None:
    with pytest.raises(ValidationError):
        FollowBody.model_validate({"leader": leader})
    assert FollowBody.model_validate({"leader": "http://127.0.0.1:8000"}).leader
