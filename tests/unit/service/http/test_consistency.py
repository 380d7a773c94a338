"""What a request says about replicas: X-Min-Seq read per collection, acks and idempotency keys
checked, each refusal naming its parameter."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from service.http.consistency import acks_of_request, idempotency_key_of, min_seq_of, min_seqs
from service.http.errors import ServiceError


def _request(query: str = "", headers: dict[str, str] | None = None) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return Request({"type": "http", "query_string": query.encode(), "headers": raw})


def test_min_seq_is_a_number_for_every_collection_read_or_one_per_name() -> None:
    assert min_seqs(None, ["a"]) == {}
    assert min_seqs(" ", ["a"]) == {}
    assert min_seqs("12", ["a", "b"]) == {"a": 12, "b": 12}
    assert min_seqs("a=3, b=40", ["a"]) == {"a": 3, "b": 40}


@pytest.mark.parametrize("header", ["-1", "a=", "a=b", "1.5", "a=1,,b=2"])
def test_a_bad_min_seq_is_refused_naming_the_header(header: str) -> None:
    with pytest.raises(ServiceError) as raised:
        min_seqs(header, ["a"])
    assert raised.value.param == "x-min-seq"


def test_acks_and_keys_are_checked() -> None:
    assert acks_of_request(_request("acks=all")) == "all"
    assert acks_of_request(_request()) is None
    with pytest.raises(ServiceError, match="acks: must be one of"):
        acks_of_request(_request("acks=two"))
    assert idempotency_key_of(_request(headers={"Idempotency-Key": "k-1"})) == "k-1"
    for bad in ("has space", "x" * 256, "é"):
        with pytest.raises(ServiceError, match="idempotency-key"):
            idempotency_key_of(_request(headers={"Idempotency-Key": bad}))
    assert min_seq_of(_request(headers={"X-Min-Seq": "4"})) == "4"
    with pytest.raises(ServiceError, match="longer than"):
        min_seq_of(_request(headers={"X-Min-Seq": "1" * 5000}))
