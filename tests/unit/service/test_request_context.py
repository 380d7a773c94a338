"""The per-request context (service.request_context): the deadline, stage times that add up,
and request ids that are echoed only when sane."""

from __future__ import annotations

import math
import re

import pytest

from service.request_context import (
    SCOPE_KEY,
    RequestContext,
    RequestIds,
    choose_request_id,
    context_of,
    new_request_id,
    request_id_of,
)


def test_the_deadline_is_the_start_plus_the_timeout() -> None:
    assert RequestContext("r", started_s=10.0, timeout_s=2.5).deadline_s == 12.5
    assert math.isinf(RequestContext("r").deadline_s)


def test_stage_times_start_unset_and_add_up() -> None:
    context = RequestContext("r")
    assert (context.decode_ms, context.queue_ms, context.encode_ms, context.search_ms) == (
        None,
        None,
        None,
        None,
    )
    context.add_decode_ms(1.0)
    context.add_queue_ms(2.0)
    context.add_encode_ms(3.0)
    context.add_encode_ms(4.0)  # a request may encode more than once
    context.add_search_ms(0.5)
    context.add_search_ms(0.25)
    assert (context.decode_ms, context.queue_ms, context.encode_ms, context.search_ms) == (
        1.0,
        2.0,
        7.0,
        0.75,
    )
    assert context.elapsed_ms() >= 0


def test_a_new_request_id_is_32_hex_characters() -> None:
    assert re.fullmatch(r"[0-9a-f]{32}", new_request_id())
    assert new_request_id() != new_request_id()


def test_request_ids_of_one_source_are_distinct_32_hex_and_share_a_random_prefix() -> None:
    source, other = RequestIds(), RequestIds()
    ids = [source() for _ in range(1000)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", value) for value in ids)
    assert len(set(ids)) == len(ids)
    assert {value[:16] for value in ids} == {ids[0][:16]}
    assert other()[:16] != ids[0][:16]  # another process's source: 2**-64 to collide
    assert choose_request_id(None, 64, source)[:16] == ids[0][:16]


@pytest.mark.parametrize("offered", ["abc-123", "A.b_C-9", "x" * 64])
def test_a_sane_request_id_is_echoed(offered: str) -> None:
    assert choose_request_id(offered, 64) == offered


@pytest.mark.parametrize("offered", [None, "", "x" * 65, "has space", "new\nline", "é"])
def test_an_insane_request_id_is_replaced(offered: str | None) -> None:
    chosen = choose_request_id(offered, 64)
    assert chosen != offered
    assert re.fullmatch(r"[0-9a-f]{32}", chosen)


def test_the_context_lives_in_the_scope() -> None:
    context = RequestContext("in-scope")
    assert context_of({SCOPE_KEY: context}) is context
    assert request_id_of({SCOPE_KEY: context}) == "in-scope"
    assert context_of({}) is None
    assert context_of({SCOPE_KEY: "not a context"}) is None
    assert re.fullmatch(r"[0-9a-f]{32}", request_id_of({}))


def test_a_traced_context_hands_each_stage_with_a_start_to_its_spans() -> None:
    recorded: list[tuple[str, float, float]] = []

    class Spans:
        def stage(self, name: str, started_s: float, ended_s: float) -> None:
            recorded.append((name, started_s, ended_s))

    context = RequestContext("r", spans=Spans())
    context.add_decode_ms(1.0, 10.0)
    context.add_queue_ms(2.0, 11.0)
    context.add_encode_ms(4.0, 12.0)
    context.add_search_ms(500.0, 13.0)
    context.add_write_ms(250.0, 14.0)
    context.add_fsync_ms(125.0, 14.1)
    context.add_search_ms(0.5)  # no start: timed only
    assert recorded == [
        ("decode", 10.0, 10.001),
        ("queue", 11.0, 11.002),
        ("encode", 12.0, 12.004),
        ("search", 13.0, 13.5),
        ("write", 14.0, 14.25),
        ("fsync", 14.1, 14.225),
    ]
    assert context.search_ms == 500.5
    assert (context.write_ms, context.fsync_ms) == (250.0, 125.0)
