"""Atoms: the small units of meaning that graded similarity and coverage are counted in.

A caption and a scene are each turned into a *set* of atoms — single attributes ("circle"),
bound attribute pairs ("red circle", "large circle"), relations between shapes ("circle
left_of star"), counts and background properties. Atoms are tuples whose first element is the
atom's kind; every kind has two integer weights:

- ``similarity``: used by the weighted Dice overlap behind STS (caption–caption) and SIS
  (image–image);
- ``coverage``: used by SITS to measure how much of an image a caption describes.

Integer weights keep every graded score an exact rational, so the generator (numpy) and the
oracle (plain Python) compute bit-identical values.

Invariant (tested): if every fact of a caption holds in a scene, the caption's atoms are a
subset of the scene's atoms.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from scenes.facts import (
    CountFact,
    Descriptor,
    Fact,
    ObjectFact,
    RelationFact,
)
from scenes.scene import Scene

Atom = tuple[str, ...]

# kind → (similarity weight, coverage weight). Bound shape+colour pairs carry the most weight:
# they are what tells two scenes (or a caption and a scene) apart.
ATOM_WEIGHTS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        "shape": (2, 1),
        "colour": (1, 1),
        "size": (1, 0),
        "region": (1, 0),
        "shape+colour": (3, 3),
        "shape+size": (1, 1),
        "shape+region": (1, 1),
        "colour+size": (1, 0),
        "colour+region": (1, 0),
        "relation": (1, 0),
        "relation+shapes": (2, 1),
        "count": (1, 1),
        "count+shape": (1, 0),
        "count+colour": (1, 0),
        "background-pattern": (1, 1),
        "background-colour": (1, 1),
        "background": (1, 0),
    }
)
_PAIRS = (
    ("shape", "colour"),
    ("shape", "size"),
    ("shape", "region"),
    ("colour", "size"),
    ("colour", "region"),
)


def similarity_weight(atom: Atom) -> int:
    """The atom's weight in STS/SIS overlap."""
    return ATOM_WEIGHTS[atom[0]][0]


def coverage_weight(atom: Atom) -> int:
    """The atom's weight in SITS coverage."""
    return ATOM_WEIGHTS[atom[0]][1]


def descriptor_atoms(descriptor: Descriptor) -> set[Atom]:
    """Atoms of one (partial) object description: its stated attributes and stated pairs."""
    stated = dict(descriptor.stated)
    atoms: set[Atom] = set(stated.items())
    for first, second in _PAIRS:
        if first in stated and second in stated:
            atoms.add((f"{first}+{second}", stated[first], stated[second]))
    return atoms


def _relation_shape_atom(first: str, relation: str, second: str) -> Atom:
    if relation == "next_to" and second < first:
        first, second = second, first
    return ("relation+shapes", first, relation, second)


def fact_atoms(fact: Fact) -> set[Atom]:
    """Atoms asserted by one fact (see the module docstring)."""
    if isinstance(fact, ObjectFact):
        return descriptor_atoms(fact.descriptor)
    if isinstance(fact, RelationFact):
        atoms = descriptor_atoms(fact.subject) | descriptor_atoms(fact.object)
        atoms.add(("relation", fact.relation))
        if fact.subject.shape is not None and fact.object.shape is not None:
            atoms.add(_relation_shape_atom(fact.subject.shape, fact.relation, fact.object.shape))
        return atoms
    if isinstance(fact, CountFact):
        stated = dict(fact.descriptor.stated)
        atoms = descriptor_atoms(fact.descriptor) if fact.count > 0 else set()
        if not stated:
            atoms.add(("count", str(fact.count)))
        elif set(stated) == {"shape"} and fact.count > 0:
            atoms.add(("count+shape", stated["shape"], str(fact.count)))
        elif set(stated) == {"colour"} and fact.count > 0:
            atoms.add(("count+colour", stated["colour"], str(fact.count)))
        return atoms
    atoms = set()
    if fact.pattern is not None:
        atoms.add(("background-pattern", fact.pattern))
    if fact.colour is not None:
        atoms.add(("background-colour", fact.colour))
    if fact.pattern is not None and fact.colour is not None:
        atoms.add(("background", fact.pattern, fact.colour))
    return atoms


@dataclass(frozen=True)
class AtomSet:
    """A set of atoms with its two masses precomputed (items are compared many times)."""

    atoms: frozenset[Atom]
    similarity_mass: int
    coverage_mass: int

    @classmethod
    def of(cls, atoms: Iterable[Atom]) -> AtomSet:
        """Wrap atoms, computing Σ similarity and Σ coverage weights."""
        frozen = frozenset(atoms)
        return cls(frozen, similarity_mass(frozen), coverage_mass(frozen))


def caption_atoms(facts: Iterable[Fact]) -> AtomSet:
    """The union of the atoms of a caption's facts."""
    atoms: set[Atom] = set()
    for fact in facts:
        atoms |= fact_atoms(fact)
    return AtomSet.of(atoms)


def scene_atoms(scene: Scene) -> AtomSet:
    """Every atom that is true of ``scene``."""
    atoms: set[Atom] = set()
    for item in scene.objects:
        atoms |= descriptor_atoms(Descriptor.of(item))
    for relation in scene.relations:
        atoms.add(("relation", relation.relation))
        atoms.add(
            _relation_shape_atom(
                scene.objects[relation.subject].shape,
                relation.relation,
                scene.objects[relation.object].shape,
            )
        )
    atoms.add(("count", str(len(scene.objects))))
    for shape, count in Counter(item.shape for item in scene.objects).items():
        atoms.add(("count+shape", shape, str(count)))
    for colour, count in Counter(item.colour for item in scene.objects).items():
        atoms.add(("count+colour", colour, str(count)))
    background = scene.background
    atoms.add(("background-pattern", background.pattern))
    atoms.add(("background-colour", background.colour))
    atoms.add(("background", background.pattern, background.colour))
    return AtomSet.of(atoms)


def similarity_mass(atoms: Iterable[Atom]) -> int:
    """Σ similarity weights."""
    return sum(ATOM_WEIGHTS[atom[0]][0] for atom in atoms)


def coverage_mass(atoms: Iterable[Atom]) -> int:
    """Σ coverage weights."""
    return sum(ATOM_WEIGHTS[atom[0]][1] for atom in atoms)
