"""Caption generation: five varied captions per scene, each with the facts it asserts.

Captions differ the way COCO co-captions do: in wording (synonyms, templates, articles,
plurals, casing, punctuation), in detail (which attributes each object gets) and in scope —
some describe the whole scene, others a single object, a single relation, a subset of the
objects or just the counts. Every fact is read off the scene the caption is written for, so a
caption is always true of its own image.

Kinds (one caption of each image is always ``full``):

- ``full``: every object, up to two relations, optionally the object count and background;
- ``objects``: two of the objects;
- ``object``: one object with colour (and maybe size, position, background);
- ``relation``: one relation between two objects;
- ``count``: how many objects of each shape (or shape and colour) there are.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar

import numpy as np

from scenes.facts import (
    BackgroundFact,
    CountFact,
    Descriptor,
    Fact,
    ObjectFact,
    RelationFact,
    canonical_facts,
)
from scenes.scene import Relation, Scene
from scenes.vocabulary import (
    BACKGROUND_COLOUR_WORDS,
    COLOUR_WORDS,
    GENERIC_NOUNS,
    NUMBER_WORDS,
    PATTERN_WORDS,
    REGION_PHRASES,
    SHAPE_NOUNS,
    SIZE_WORDS,
)

CAPTIONS_PER_IMAGE = 5
CAPTION_KINDS = ("full", "objects", "object", "relation", "count")
CAPTION_KIND_WEIGHTS = (0.42, 0.14, 0.16, 0.16, 0.12)

T = TypeVar("T")


@dataclass(frozen=True)
class Caption:
    """One caption: ``raw`` is the exact string (it may carry stray white space), ``text`` the
    same with white space folded; ``facts`` is the canonical (sorted, unique) fact tuple."""

    text: str
    raw: str
    facts: tuple[Fact, ...]
    kind: str


@dataclass(frozen=True)
class _Mention:
    """A reference to object ``index`` by a (partial) ``descriptor``."""

    index: int
    descriptor: Descriptor


@dataclass(frozen=True)
class _DetailOdds:
    """Probabilities of stating each optional attribute in a mention."""

    colour: float
    size: float
    region: float
    generic_noun: float = 0.0


_FULL_ODDS = _DetailOdds(colour=0.85, size=0.35, region=0.2, generic_noun=0.06)
_OBJECTS_ODDS = _DetailOdds(colour=0.9, size=0.3, region=0.3)
_OBJECT_ODDS = _DetailOdds(colour=1.0, size=0.5, region=0.4)
_RELATION_ODDS = _DetailOdds(colour=0.8, size=0.25, region=0.0)

_LIST_INTROS = (
    "",
    "",
    "",
    "a picture of ",
    "an image of ",
    "an image with ",
    "this picture shows ",
    "there is ",
    "we can see ",
    "a drawing of ",
    "a scene with ",
)
_OBJECT_TEMPLATES = ("{np}{bg}", "there is {np}{bg}", "a picture of {np}{bg}", "{np} is shown{bg}")


class _Draws:
    """Scalar random draws for writing captions, seeded from the image's numpy stream.

    A caption takes dozens of tiny draws; Python's Mersenne Twister makes each one ~20× cheaper
    than a numpy call. Only ``random()`` is used (its sequence for a seed is stable across
    Python versions); indices and permutations are derived from it here.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self._random = random.Random(int(rng.integers(0, 2**63 - 1)))

    def uniform(self) -> float:
        """A float in [0, 1)."""
        return self._random.random()

    def chance(self, probability: float) -> bool:
        """True with ``probability``."""
        return self._random.random() < probability

    def below(self, count: int) -> int:
        """An integer in ``range(count)``."""
        return int(self._random.random() * count)

    def pick(self, values: Sequence[T]) -> T:
        """One of ``values``, uniformly."""
        return values[self.below(len(values))]

    def permutation(self, count: int) -> list[int]:
        """A random order of ``range(count)``."""
        keys = [self._random.random() for _ in range(count)]
        return sorted(range(count), key=keys.__getitem__)

    def weighted(self, weights: Sequence[float]) -> int:
        """An index drawn with the given (normalised) weights."""
        roll, total = self._random.random(), 0.0
        for index, weight in enumerate(weights):
            total += weight
            if roll < total:
                return index
        return len(weights) - 1


def _article(phrase: str) -> str:
    return "an" if phrase[:1] in "aeiou" else "a"


def _mention(draws: _Draws, scene: Scene, index: int, odds: _DetailOdds) -> _Mention:
    item = scene.objects[index]
    generic = draws.chance(odds.generic_noun)
    # A generic noun ("a red shape") must still say something: it always keeps the colour.
    colour = item.colour if generic or draws.chance(odds.colour) else None
    size = item.size if draws.chance(odds.size) else None
    region = item.region if draws.chance(odds.region) else None
    return _Mention(index, Descriptor(None if generic else item.shape, colour, size, region))


def _noun_phrase(draws: _Draws, descriptor: Descriptor, count: int = 1) -> str:
    """ "a large red circle on the left", "two red circles", "another star" (count 0 means
    "another")."""
    plural = count >= 2
    nouns = SHAPE_NOUNS[descriptor.shape] if descriptor.shape else GENERIC_NOUNS
    noun = draws.pick(nouns)[1 if plural else 0]
    words = []
    if descriptor.size:
        words.append(draws.pick(SIZE_WORDS[descriptor.size]))
    if descriptor.colour:
        words.append(draws.pick(COLOUR_WORDS[descriptor.colour]))
    words.append(noun)
    core = " ".join(words)
    if count == 0:
        head = f"another {core}"
    elif plural:
        head = f"{NUMBER_WORDS[count]} {core}"
    else:
        head = f"{'one' if draws.chance(0.05) else _article(core)} {core}"
    if descriptor.region:
        head += " " + draws.pick(REGION_PHRASES[descriptor.region])
    return head


def _relation_phrase(
    draws: _Draws, relation: Relation, mentions: dict[int, _Mention]
) -> tuple[_Mention, str, _Mention]:
    """A surface form of a scene relation: (first mention, words, second mention)."""
    subject, obj = mentions[relation.subject], mentions[relation.object]
    if relation.relation == "left_of":
        if draws.chance(0.5):
            return subject, draws.pick(("to the left of", "left of", "on the left of")), obj
        return obj, draws.pick(("to the right of", "right of", "on the right of")), subject
    if relation.relation == "above":
        if draws.chance(0.5):
            return subject, draws.pick(("above", "over")), obj
        return obj, draws.pick(("below", "under", "beneath")), subject
    words = draws.pick(("next to", "beside", "close to"))
    return (subject, words, obj) if draws.chance(0.5) else (obj, words, subject)


_SURFACE_RELATION = MappingProxyType(
    {
        "to the left of": "left_of",
        "left of": "left_of",
        "on the left of": "left_of",
        "to the right of": "right_of",
        "right of": "right_of",
        "on the right of": "right_of",
        "above": "above",
        "over": "above",
        "below": "below",
        "under": "below",
        "beneath": "below",
        "next to": "next_to",
        "beside": "next_to",
        "close to": "next_to",
    }
)


def _background_phrase(draws: _Draws, scene: Scene) -> tuple[str, BackgroundFact]:
    background = scene.background
    roll = draws.uniform()
    pattern = background.pattern if roll < 0.75 else None
    colour = background.colour if roll >= 0.5 or pattern is None else None
    words = []
    pattern_word = draws.pick(PATTERN_WORDS[pattern]) if pattern else None
    colour_word = draws.pick(BACKGROUND_COLOUR_WORDS[colour]) if colour else None
    if pattern_word and colour_word and draws.chance(0.5):
        words = [colour_word, pattern_word]
    else:
        words = [w for w in (pattern_word, colour_word) if w]
    noun = draws.pick(("background", "background", "backdrop"))
    core = " ".join([*words, noun])
    preposition = draws.pick((" on", " on", " against", " in front of"))
    return f"{preposition} {_article(core)} {core}", BackgroundFact(pattern, colour)


def _join(items: list[str], draws: _Draws) -> str:
    if len(items) == 1:
        return items[0]
    comma = "," if len(items) > 2 and draws.chance(0.4) else ""
    return ", ".join(items[:-1]) + f"{comma} and " + items[-1]


def _finish(draws: _Draws, sentence: str, facts: set[Fact], kind: str) -> Caption:
    """Casing, final period and the occasional stray white space of hand-typed captions."""
    text = sentence.strip()
    if draws.chance(0.9):
        text = text[0].upper() + text[1:]
    if draws.chance(0.85):
        text += "."
    raw = text
    roll = draws.uniform()
    if roll < 0.03:
        raw = text + " "
    elif roll < 0.05:
        position = text.find(" ")
        raw = text[:position] + "  " + text[position + 1 :] if position > 0 else text
    elif roll < 0.055:
        raw = text + "\n"
    return Caption(text=text, raw=raw, facts=canonical_facts(facts), kind=kind)


def _maybe_background(draws: _Draws, scene: Scene, probability: float, facts: set[Fact]) -> str:
    if not draws.chance(probability):
        return ""
    phrase, fact = _background_phrase(draws, scene)
    facts.add(fact)
    return phrase


def _full_caption(draws: _Draws, scene: Scene) -> Caption:
    count = len(scene.objects)
    order = draws.permutation(count)
    mentions = {i: _mention(draws, scene, i, _FULL_ODDS) for i in order}
    facts: set[Fact] = {ObjectFact(m.descriptor) for m in mentions.values()}
    items: list[str] = []
    used: set[int] = set()

    # Plurals: mentions with equal descriptors become "two red circles" when exactly that
    # many objects of the scene match the descriptor (so the count is a true fact).
    groups: dict[Descriptor, list[int]] = {}
    for i in order:
        groups.setdefault(mentions[i].descriptor, []).append(i)
    for descriptor, members in groups.items():
        matching = sum(descriptor.matches(item) for item in scene.objects)
        if len(members) >= 2 and matching == len(members) and draws.chance(0.8):
            items.append(_noun_phrase(draws, descriptor, count=len(members)))
            facts.add(CountFact(descriptor, len(members)))
            used.update(members)

    relations = [r for r in scene.relations if r.subject not in used and r.object not in used]
    for _ in range(draws.below(3)):
        relations = [r for r in relations if r.subject not in used and r.object not in used]
        if not relations:
            break
        relation = draws.pick(relations)
        first, words, second = _relation_phrase(draws, relation, mentions)
        facts.add(
            RelationFact.canonical(first.descriptor, _SURFACE_RELATION[words], second.descriptor)
        )
        subject_phrase = _noun_phrase(draws, first.descriptor)
        items.append(f"{subject_phrase} {words} {_noun_phrase(draws, second.descriptor)}")
        used.update((relation.subject, relation.object))

    seen: set[Descriptor] = set()
    for i in order:
        if i in used:
            continue
        descriptor = mentions[i].descriptor
        items.append(_noun_phrase(draws, descriptor, count=0 if descriptor in seen else 1))
        seen.add(descriptor)
    items = [items[k] for k in draws.permutation(len(items))]

    background = _maybe_background(draws, scene, 0.35, facts)
    listing = _join(items, draws)
    if draws.chance(0.2):
        facts.add(CountFact(Descriptor(), count))
        noun = draws.pick(("shapes", "objects", "figures"))
        return _finish(draws, f"{NUMBER_WORDS[count]} {noun}{background}: {listing}", facts, "full")
    intro = draws.pick(_LIST_INTROS)
    if intro == "there is " and listing.split(" ", 1)[0] in NUMBER_WORDS:
        intro = "there are "
    return _finish(draws, f"{intro}{listing}{background}", facts, "full")


def _objects_caption(draws: _Draws, scene: Scene) -> Caption:
    chosen = sorted(draws.permutation(len(scene.objects))[:2])
    mentions = [_mention(draws, scene, i, _OBJECTS_ODDS) for i in chosen]
    facts: set[Fact] = {ObjectFact(m.descriptor) for m in mentions}
    same = mentions[0].descriptor == mentions[1].descriptor
    items = [
        _noun_phrase(draws, mentions[0].descriptor),
        _noun_phrase(draws, mentions[1].descriptor, count=0 if same else 1),
    ]
    background = _maybe_background(draws, scene, 0.2, facts)
    sentence = f"{draws.pick(_LIST_INTROS)}{_join(items, draws)}{background}"
    return _finish(draws, sentence, facts, "objects")


def _object_caption(draws: _Draws, scene: Scene) -> Caption:
    index = draws.below(len(scene.objects))
    mention = _mention(draws, scene, index, _OBJECT_ODDS)
    facts: set[Fact] = {ObjectFact(mention.descriptor)}
    background = _maybe_background(draws, scene, 0.3, facts)
    template = draws.pick(_OBJECT_TEMPLATES)
    sentence = template.format(np=_noun_phrase(draws, mention.descriptor), bg=background)
    return _finish(draws, sentence, facts, "object")


def _relation_caption(draws: _Draws, scene: Scene) -> Caption:
    if not scene.relations:
        return _objects_caption(draws, scene)
    relation = draws.pick(scene.relations)
    mentions = {
        i: _mention(draws, scene, i, _RELATION_ODDS) for i in (relation.subject, relation.object)
    }
    first, words, second = _relation_phrase(draws, relation, mentions)
    facts: set[Fact] = {
        ObjectFact(first.descriptor),
        ObjectFact(second.descriptor),
        RelationFact.canonical(first.descriptor, _SURFACE_RELATION[words], second.descriptor),
    }
    verb = draws.pick((" is ", " is ", " ", " sits "))
    background = _maybe_background(draws, scene, 0.15, facts)
    sentence = (
        f"{_noun_phrase(draws, first.descriptor)}{verb}{words} "
        f"{_noun_phrase(draws, second.descriptor)}{background}"
    )
    return _finish(draws, sentence, facts, "relation")


def _count_caption(draws: _Draws, scene: Scene) -> Caption:
    count = len(scene.objects)
    facts: set[Fact] = set()
    if draws.chance(0.1):
        facts.add(CountFact(Descriptor(), count))
        noun = draws.pick(("shapes", "objects", "figures"))
        background = _maybe_background(draws, scene, 0.7, facts)
        return _finish(draws, f"{NUMBER_WORDS[count]} {noun}{background}", facts, "count")
    with_colour = draws.chance(0.4)
    groups: dict[Descriptor, int] = {}
    for item in scene.objects:
        descriptor = Descriptor(item.shape, item.colour if with_colour else None)
        groups[descriptor] = groups.get(descriptor, 0) + 1
    items = []
    for descriptor in sorted(groups, key=Descriptor.sort_key):
        items.append(_noun_phrase(draws, descriptor, count=groups[descriptor]))
        facts.add(CountFact(descriptor, groups[descriptor]))
        facts.add(ObjectFact(descriptor))
    items = [items[k] for k in draws.permutation(len(items))]
    background = _maybe_background(draws, scene, 0.2, facts)
    if draws.chance(0.3):
        facts.add(CountFact(Descriptor(), count))
        noun = draws.pick(("shapes", "objects"))
        sentence = f"{NUMBER_WORDS[count]} {noun}{background}: {_join(items, draws)}"
    else:
        sentence = f"{_join(items, draws)}{background}"
    return _finish(draws, sentence, facts, "count")


def generate_captions(scene: Scene, rng: np.random.Generator) -> tuple[Caption, ...]:
    """:data:`CAPTIONS_PER_IMAGE` captions of ``scene``, at least one of kind ``full``."""
    draws = _Draws(rng)
    kinds = [CAPTION_KINDS[draws.weighted(CAPTION_KIND_WEIGHTS)] for _ in range(CAPTIONS_PER_IMAGE)]
    if "full" not in kinds:
        kinds[draws.below(CAPTIONS_PER_IMAGE)] = "full"
    makers = {
        "full": _full_caption,
        "objects": _objects_caption,
        "object": _object_caption,
        "relation": _relation_caption,
        "count": _count_caption,
    }
    return tuple(makers[kind](draws, scene) for kind in kinds)
