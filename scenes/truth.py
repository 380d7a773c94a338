"""Vectorised fact truth over a whole split: which captions are entirely true of which images.

:func:`facts.holds` answers one (fact, scene) question in Python; the generator needs every
(caption, image) pair of a split (25,000 × 5,000 at the default size) to find, for each
caption, its best image and vice versa. Scenes are packed into small integer arrays, every
*distinct* fact is evaluated once against all scenes at a time, and a caption's row is the
AND of its facts' rows. The result must equal :func:`facts.holds` exactly (tested).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from scenes.facts import (
    CountFact,
    Descriptor,
    Fact,
    ObjectFact,
    RelationFact,
)
from scenes.scene import Scene
from scenes.vocabulary import (
    BACKGROUND_COLOUR_NAMES,
    COLOURS,
    PATTERNS,
    REGIONS,
    RELATIONS,
    SHAPES,
    SIZES,
)

MAX_OBJECTS = 4
BoolArray = npt.NDArray[np.bool_]
# Attribute → value → small integer code (the value's position in its vocabulary tuple).
_CODES: Mapping[str, Mapping[str, int]] = MappingProxyType(
    {
        attribute: MappingProxyType({name: code for code, name in enumerate(values)})
        for attribute, values in (
            ("shape", SHAPES),
            ("colour", COLOURS),
            ("size", SIZES),
            ("region", REGIONS),
        )
    }
)


@dataclass(frozen=True)
class SceneArrays:
    """A split's scenes as arrays. Object attributes are ``[n_scenes, MAX_OBJECTS]`` int8
    codes (``-1``: no object in that slot). ``related[r]`` is ``[n_scenes]`` uint16 with bit
    ``4·i + j`` set where relation ``RELATIONS[r]`` holds from slot i to slot j (``next_to`` in
    both directions). ``pattern``/``background_colour`` are ``[n_scenes]`` int8 codes."""

    attributes: dict[str, npt.NDArray[np.int8]]
    related: tuple[npt.NDArray[np.uint16], ...]
    pattern: npt.NDArray[np.int8]
    background_colour: npt.NDArray[np.int8]

    @property
    def size(self) -> int:
        """Number of scenes."""
        return int(self.pattern.shape[0])


def pack_scenes(scenes: Sequence[Scene]) -> SceneArrays:
    """Pack scenes (at most :data:`MAX_OBJECTS` objects each) into :class:`SceneArrays`."""
    count = len(scenes)
    attributes = {name: np.full((count, MAX_OBJECTS), -1, dtype=np.int8) for name in _CODES}
    related = tuple(np.zeros(count, dtype=np.uint16) for _ in RELATIONS)
    pattern = np.empty(count, dtype=np.int8)
    background_colour = np.empty(count, dtype=np.int8)
    for row, scene in enumerate(scenes):
        if len(scene.objects) > MAX_OBJECTS:
            raise ValueError(f"a scene has {len(scene.objects)} objects (max {MAX_OBJECTS})")
        for slot, item in enumerate(scene.objects):
            for name, codes in _CODES.items():
                attributes[name][row, slot] = codes[getattr(item, name)]
        for relation in scene.relations:
            table = related[RELATIONS.index(relation.relation)]
            table[row] |= 1 << (MAX_OBJECTS * relation.subject + relation.object)
            if relation.relation == "next_to":
                table[row] |= 1 << (MAX_OBJECTS * relation.object + relation.subject)
        pattern[row] = PATTERNS.index(scene.background.pattern)
        background_colour[row] = BACKGROUND_COLOUR_NAMES.index(scene.background.colour)
    return SceneArrays(attributes, related, pattern, background_colour)


def _outer_table() -> npt.NDArray[np.uint16]:
    """``[16, 16]``: for slot masks a and b (4 bits each), the 16-bit mask of slot pairs
    (i, j) with bit i of a and bit j of b set, at bit ``4·i + j``."""
    table = np.zeros((1 << MAX_OBJECTS, 1 << MAX_OBJECTS), dtype=np.uint16)
    for a in range(1 << MAX_OBJECTS):
        for b in range(1 << MAX_OBJECTS):
            bits = 0
            for i in range(MAX_OBJECTS):
                for j in range(MAX_OBJECTS):
                    if a >> i & 1 and b >> j & 1:
                        bits |= 1 << (MAX_OBJECTS * i + j)
            table[a, b] = bits
    return table


class FactEvaluator:
    """Evaluates facts against every scene of a :class:`SceneArrays` at once.

    A descriptor becomes a 4-bit slot mask per scene (bit i: object i matches); a relation
    fact is then one table lookup (the pairs of matching slots) ANDed with the scene's
    relation bits, and a count fact is a popcount. Slot masks are remembered per descriptor.
    """

    def __init__(self, arrays: SceneArrays) -> None:
        self._arrays = arrays
        self._present = arrays.attributes["shape"] >= 0
        self._slot_bits = (1 << np.arange(MAX_OBJECTS)).astype(np.uint8)
        self._outer = _outer_table()
        self._popcount = np.array(
            [bin(value).count("1") for value in range(1 << MAX_OBJECTS)], dtype=np.int64
        )
        self._slot_masks: dict[Descriptor, npt.NDArray[np.uint8]] = {}

    def slot_mask(self, descriptor: Descriptor) -> npt.NDArray[np.uint8]:
        """``[n_scenes]`` uint8: bit i set where object slot i matches ``descriptor``."""
        packed = self._slot_masks.get(descriptor)
        if packed is None:
            mask = self._present.copy()
            for name, value in descriptor.stated:
                mask &= self._arrays.attributes[name] == _CODES[name][value]
            packed = (mask * self._slot_bits[None, :]).sum(axis=1, dtype=np.uint8)
            self._slot_masks[descriptor] = packed
        return packed

    def truth(self, fact: Fact) -> BoolArray:
        """``[n_scenes]``: where ``fact`` holds (the vectorised :func:`facts.holds`)."""
        result: BoolArray
        if isinstance(fact, ObjectFact):
            result = self.slot_mask(fact.descriptor) != 0
        elif isinstance(fact, RelationFact):
            pairs = self._outer[self.slot_mask(fact.subject), self.slot_mask(fact.object)]
            result = (pairs & self._arrays.related[RELATIONS.index(fact.relation)]) != 0
        elif isinstance(fact, CountFact):
            result = self._popcount[self.slot_mask(fact.descriptor)] == fact.count
        else:
            result = np.ones(self._arrays.size, dtype=bool)
            if fact.pattern is not None:
                result &= self._arrays.pattern == PATTERNS.index(fact.pattern)
            if fact.colour is not None:
                colour = BACKGROUND_COLOUR_NAMES.index(fact.colour)
                result &= self._arrays.background_colour == colour
        return result


@dataclass(frozen=True)
class FactTable:
    """Truth of every distinct fact of a caption collection against every scene.

    ``rows`` is ``[n_facts + 1, n_scenes]`` bool whose last row is all true (padding);
    ``caption_facts`` is ``[n_captions, max_facts]`` indices into ``rows``, padded with the
    all-true row; ``fact_counts`` is ``[n_captions]``.
    """

    rows: BoolArray
    caption_facts: npt.NDArray[np.int64]
    fact_counts: npt.NDArray[np.int64]

    def all_true(self, start: int, stop: int) -> BoolArray:
        """``[stop - start, n_scenes]``: captions ``start:stop`` entirely true of each scene.

        ANDs one fact column at a time, over only the captions that have that many facts, so
        no ``[captions, facts, scenes]`` intermediate is built.
        """
        facts = self.caption_facts[start:stop]
        counts = self.fact_counts[start:stop]
        result: BoolArray = self.rows[facts[:, 0]]
        for column in range(1, facts.shape[1]):
            longer = np.flatnonzero(counts > column)
            if longer.size == 0:
                break
            result[longer] &= self.rows[facts[longer, column]]
        return result

    def true_counts(self, captions: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """``[len(captions), n_scenes]``: how many facts of each caption hold in each scene."""
        gathered = self.rows[self.caption_facts[captions]]
        padding = self.caption_facts.shape[1] - self.fact_counts[captions]
        result: npt.NDArray[np.int64] = gathered.sum(axis=1) - padding[:, None]
        return result

    def blocks(self, block: int) -> Iterator[tuple[int, BoolArray]]:
        """``(start, all_true(start, start + block))`` over all captions."""
        total = self.caption_facts.shape[0]
        for start in range(0, total, block):
            yield start, self.all_true(start, min(total, start + block))


def fact_table(caption_facts: Sequence[Sequence[Fact]], scenes: SceneArrays) -> FactTable:
    """Evaluate every distinct fact of ``caption_facts`` against ``scenes``."""
    evaluator = FactEvaluator(scenes)
    index: dict[Fact, int] = {}
    rows: list[BoolArray] = []
    width = max((len(facts) for facts in caption_facts), default=0)
    table = np.empty((len(caption_facts), max(width, 1)), dtype=np.int64)
    counts = np.empty(len(caption_facts), dtype=np.int64)
    for row, facts in enumerate(caption_facts):
        for column, fact in enumerate(facts):
            position = index.get(fact)
            if position is None:
                position = index[fact] = len(rows)
                rows.append(evaluator.truth(fact))
            table[row, column] = position
        counts[row] = len(facts)
    padding = len(rows)
    rows.append(np.ones(scenes.size, dtype=bool))
    for row, facts in enumerate(caption_facts):
        table[row, len(facts) :] = padding
    return FactTable(np.stack(rows), table, counts)
