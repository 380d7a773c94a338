"""Refuse or skip: the refusals a build makes, their headlines and their lists of bad items."""

from __future__ import annotations

import pytest

from index_builder.bad_item_policy import (
    SHOWN_REFUSALS,
    BuildRefusedError,
    OnError,
    refuse_bad_items,
    refuse_decode_failures,
    refuse_if_empty,
)
from index_builder.items import BadItem, ItemOrigin, Problem

LATE = BadItem(ItemOrigin("t.csv", line=9), Problem.EMPTY_TEXT, "empty text", "b")
EARLY = BadItem(ItemOrigin("t.csv", line=2), Problem.MISSING_ID, "no id")


def test_a_refusal_lists_its_bad_items_in_order_capped() -> None:
    refused = BuildRefusedError([LATE, EARLY], read=10, headline="refused: 2")
    assert refused.bad == [EARLY, LATE]
    assert refused.lines() == ["refused: 2", "  t.csv:2: no id", "  t.csv:9: empty text (id 'b')"]
    assert str(refused) == "\n".join(refused.lines())
    many = [BadItem(ItemOrigin("t.csv", line=n), Problem.MISSING_ID, "no id") for n in range(60)]
    lines = BuildRefusedError(many, read=60, headline="x").lines()
    assert len(lines) == 1 + SHOWN_REFUSALS + 1
    assert lines[-1] == "  ... and 10 more"


def test_bad_items_refuse_only_under_refuse() -> None:
    refuse_bad_items([EARLY], 10, OnError.SKIP)
    refuse_bad_items([], 10, OnError.REFUSE)
    with pytest.raises(BuildRefusedError) as refused:
        refuse_bad_items([EARLY, LATE], 10, OnError.REFUSE)
    assert refused.value.headline == (
        "refused: 2 of 10 records are bad; nothing was embedded or written "
        "(--on-error skip leaves them out)"
    )
    assert refused.value.read == 10


def test_decode_failures_refuse_only_under_refuse() -> None:
    refuse_decode_failures([EARLY], 1, 5, OnError.SKIP, stopped=True)
    refuse_decode_failures([], 0, 5, OnError.REFUSE, stopped=False)
    with pytest.raises(BuildRefusedError, match=r"1 image\(s\) could not be decoded while embed"):
        refuse_decode_failures([EARLY], 1, 5, OnError.REFUSE, stopped=False)
    with pytest.raises(BuildRefusedError, match="the build stopped there"):
        refuse_decode_failures([EARLY], 1, 5, OnError.REFUSE, stopped=True)


def test_an_empty_collection_is_refused_under_either_policy() -> None:
    refuse_if_empty("things", 1, [], 1)
    with pytest.raises(BuildRefusedError) as refused:
        refuse_if_empty("things", 0, [EARLY], 1)
    assert refused.value.headline == (
        "nothing to index: none of the 1 records is usable; nothing written"
    )
    with pytest.raises(BuildRefusedError, match="nothing to index in images: none of the 3"):
        refuse_if_empty("images", 0, [EARLY], 3, collections=2)
