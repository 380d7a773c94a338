"""Facts: degrees, canonical relations, JSON round trips."""

from __future__ import annotations

import pytest

from scenes.captions import Caption
from scenes.facts import (
    DEGREE_UNITS,
    BackgroundFact,
    CountFact,
    Descriptor,
    Fact,
    ObjectFact,
    RelationFact,
    degree_units,
    fact_from_json,
    fact_to_json,
    holds,
)
from scenes.scene import Scene


def test_degree_is_full_exactly_when_a_fact_holds(
    world: tuple[list[Scene], list[Caption]],
) -> None:
    scenes, captions = world
    for caption in captions[::4]:
        for scene in scenes[::3]:
            for fact in caption.facts:
                units = degree_units(fact, scene)
                assert 0 <= units <= DEGREE_UNITS
                assert (units == DEGREE_UNITS) == holds(fact, scene)


def test_surface_relations_are_canonicalised() -> None:
    red_circle, blue_star = Descriptor("circle", "red"), Descriptor("star", "blue")
    left = RelationFact.canonical(red_circle, "left_of", blue_star)
    assert RelationFact.canonical(blue_star, "right_of", red_circle) == left
    above = RelationFact.canonical(red_circle, "above", blue_star)
    assert RelationFact.canonical(blue_star, "below", red_circle) == above
    assert RelationFact.canonical(red_circle, "next_to", blue_star) == RelationFact.canonical(
        blue_star, "next_to", red_circle
    )
    with pytest.raises(ValueError, match="unknown relation"):
        RelationFact.canonical(red_circle, "inside", blue_star)


def test_facts_round_trip_through_json() -> None:
    facts: list[Fact] = [
        ObjectFact(Descriptor("heart", None, "large", "left")),
        RelationFact(Descriptor("circle"), "above", Descriptor(None, "red")),
        CountFact(Descriptor(), 3),
        BackgroundFact("striped", None),
    ]
    assert [fact_from_json(fact_to_json(fact)) for fact in facts] == facts
