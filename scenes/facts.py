"""What a caption asserts: facts, their truth and their degree of truth on any scene.

Four kinds of fact, all existential over the scene's objects:

- :class:`ObjectFact` — some object matches a :class:`Descriptor` ("a large red circle");
- :class:`RelationFact` — two distinct objects matching two descriptors stand in a relation
  ("a red circle to the left of a blue star"); ``right of``/``below`` are stored as
  ``left_of``/``above`` with the arguments swapped, and ``next_to`` with sorted arguments, so
  paraphrases give equal facts;
- :class:`CountFact` — exactly ``count`` objects match a descriptor ("two circles",
  "three shapes" with the empty descriptor);
- :class:`BackgroundFact` — the background has a pattern and/or colour.

Facts are frozen and hashable; a caption's meaning is the *set* of its facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

from scenes.scene import Scene, SceneObject

DESCRIPTOR_ATTRIBUTES = ("shape", "colour", "size", "region")
# Degrees of truth are exact multiples of 1/36: every share that occurs has a denominator of
# at most 4 (attributes, objects), and relation degrees divide a sum of such shares by 3.
DEGREE_UNITS = 36
MAX_COUNTED_OBJECTS = 4


@dataclass(frozen=True)
class Descriptor:
    """A partial description of one object; ``None`` means "not stated"."""

    shape: str | None = None
    colour: str | None = None
    size: str | None = None
    region: str | None = None

    def sort_key(self) -> tuple[str, str, str, str]:
        """A total order (unstated attributes sort first)."""
        return (self.shape or "", self.colour or "", self.size or "", self.region or "")

    @cached_property
    def stated(self) -> tuple[tuple[str, str], ...]:
        """The stated ``(attribute, value)`` pairs, in :data:`DESCRIPTOR_ATTRIBUTES` order
        (computed once: descriptors are matched against objects millions of times)."""
        values = (self.shape, self.colour, self.size, self.region)
        return tuple(
            (name, value)
            for name, value in zip(DESCRIPTOR_ATTRIBUTES, values, strict=True)
            if value is not None
        )

    def matches(self, item: SceneObject) -> bool:
        """Whether every stated attribute equals the object's."""
        return all(getattr(item, name) == value for name, value in self.stated)

    def match_units(self, item: SceneObject) -> int:
        """Share of the stated attributes the object has, in :data:`DEGREE_UNITS` (all of
        them for the empty descriptor)."""
        stated = self.stated
        if not stated:
            return DEGREE_UNITS
        hits = sum(int(getattr(item, name) == value) for name, value in stated)
        return hits * DEGREE_UNITS // len(stated)

    def to_json(self) -> dict[str, str | None]:
        """``{"shape", "colour", "size", "region"}`` with ``null`` for unstated attributes."""
        return {
            "shape": self.shape,
            "colour": self.colour,
            "size": self.size,
            "region": self.region,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Descriptor:
        """Inverse of :meth:`to_json`."""
        return cls(data.get("shape"), data.get("colour"), data.get("size"), data.get("region"))

    @classmethod
    def of(cls, item: SceneObject) -> Descriptor:
        """The full descriptor of an object."""
        return cls(item.shape, item.colour, item.size, item.region)


@dataclass(frozen=True)
class ObjectFact:
    """Some object matches ``descriptor``."""

    descriptor: Descriptor


@dataclass(frozen=True)
class RelationFact:
    """Distinct objects matching ``subject`` and ``object`` stand in ``relation``."""

    subject: Descriptor
    relation: str
    object: Descriptor

    @classmethod
    def canonical(cls, subject: Descriptor, relation: str, obj: Descriptor) -> RelationFact:
        """Build the canonical fact from any of the five surface relations (``left_of``,
        ``right_of``, ``above``, ``below``, ``next_to``)."""
        if relation == "right_of":
            return cls(obj, "left_of", subject)
        if relation == "below":
            return cls(obj, "above", subject)
        if relation == "next_to" and obj.sort_key() < subject.sort_key():
            return cls(obj, "next_to", subject)
        if relation not in ("left_of", "above", "next_to"):
            raise ValueError(f"unknown relation {relation!r}")
        return cls(subject, relation, obj)


@dataclass(frozen=True)
class CountFact:
    """Exactly ``count`` objects match ``descriptor`` (the empty descriptor counts all)."""

    descriptor: Descriptor
    count: int


@dataclass(frozen=True)
class BackgroundFact:
    """The background has ``pattern`` and ``colour`` (``None``: not stated)."""

    pattern: str | None
    colour: str | None


Fact = ObjectFact | RelationFact | CountFact | BackgroundFact


def fact_sort_key(fact: Fact) -> tuple[int, str]:
    """A total order over facts of all kinds (kind first, then the JSON text)."""
    kinds = (ObjectFact, RelationFact, CountFact, BackgroundFact)
    return (kinds.index(type(fact)), repr(fact))


def canonical_facts(facts: set[Fact] | frozenset[Fact] | list[Fact]) -> tuple[Fact, ...]:
    """A fact collection as a sorted tuple without duplicates (the stored form)."""
    return tuple(sorted(set(facts), key=fact_sort_key))


def _relation_holds(scene: Scene, subject: int, relation: str, obj: int) -> bool:
    if relation == "next_to" and subject > obj:
        subject, obj = obj, subject
    return any(
        r.subject == subject and r.relation == relation and r.object == obj for r in scene.relations
    )


def holds(fact: Fact, scene: Scene) -> bool:
    """Whether ``fact`` is true of ``scene``."""
    objects = scene.objects
    if isinstance(fact, ObjectFact):
        return any(fact.descriptor.matches(item) for item in objects)
    if isinstance(fact, RelationFact):
        return any(
            i != j
            and fact.subject.matches(a)
            and fact.object.matches(b)
            and _relation_holds(scene, i, fact.relation, j)
            for i, a in enumerate(objects)
            for j, b in enumerate(objects)
        )
    if isinstance(fact, CountFact):
        return sum(fact.descriptor.matches(item) for item in objects) == fact.count
    background = scene.background
    return (fact.pattern is None or fact.pattern == background.pattern) and (
        fact.colour is None or fact.colour == background.colour
    )


def degree_units(fact: Fact, scene: Scene) -> int:
    """How nearly ``fact`` holds, in units of 1/:data:`DEGREE_UNITS` (0 to 36); 36 iff
    :func:`holds`.

    Object: the best share of stated attributes any object has. Relation: the best mean, over
    ordered pairs of distinct objects, of the two descriptor shares and whether the relation
    holds. Count: ``1 − |actual − count| / max(actual, count)``. Background: the share of
    stated attributes that match.
    """
    objects = scene.objects
    if isinstance(fact, ObjectFact):
        return max(fact.descriptor.match_units(item) for item in objects)
    if isinstance(fact, RelationFact):
        best = 0
        for i, a in enumerate(objects):
            for j, b in enumerate(objects):
                if i != j:
                    related = DEGREE_UNITS * int(_relation_holds(scene, i, fact.relation, j))
                    total = fact.subject.match_units(a) + fact.object.match_units(b) + related
                    best = max(best, total // 3)
        return best
    if isinstance(fact, CountFact):
        actual = sum(fact.descriptor.matches(item) for item in objects)
        largest = max(actual, fact.count)
        if largest > MAX_COUNTED_OBJECTS:
            raise ValueError(f"counts above {MAX_COUNTED_OBJECTS} are not gradable")
        if largest == 0:
            return DEGREE_UNITS
        return DEGREE_UNITS - DEGREE_UNITS * abs(actual - fact.count) // largest
    stated = [
        value == actual
        for value, actual in (
            (fact.pattern, scene.background.pattern),
            (fact.colour, scene.background.colour),
        )
        if value is not None
    ]
    return DEGREE_UNITS * sum(stated) // len(stated) if stated else DEGREE_UNITS


def degree(fact: Fact, scene: Scene) -> Fraction:
    """:func:`degree_units` as a fraction in [0, 1]."""
    return Fraction(degree_units(fact, scene), DEGREE_UNITS)


def fact_to_json(fact: Fact) -> dict[str, Any]:
    """A JSON form with a ``type`` tag: ``object``, ``relation``, ``count`` or ``background``."""
    if isinstance(fact, ObjectFact):
        return {"type": "object", "descriptor": fact.descriptor.to_json()}
    if isinstance(fact, RelationFact):
        return {
            "type": "relation",
            "subject": fact.subject.to_json(),
            "relation": fact.relation,
            "object": fact.object.to_json(),
        }
    if isinstance(fact, CountFact):
        return {"type": "count", "descriptor": fact.descriptor.to_json(), "count": fact.count}
    return {"type": "background", "pattern": fact.pattern, "colour": fact.colour}


def fact_from_json(data: dict[str, Any]) -> Fact:
    """Inverse of :func:`fact_to_json`."""
    kind = data["type"]
    if kind == "object":
        return ObjectFact(Descriptor.from_json(data["descriptor"]))
    if kind == "relation":
        return RelationFact(
            Descriptor.from_json(data["subject"]),
            str(data["relation"]),
            Descriptor.from_json(data["object"]),
        )
    if kind == "count":
        return CountFact(Descriptor.from_json(data["descriptor"]), int(data["count"]))
    if kind == "background":
        return BackgroundFact(data.get("pattern"), data.get("colour"))
    raise ValueError(f"unknown fact type {kind!r}")
