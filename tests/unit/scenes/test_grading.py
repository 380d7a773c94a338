"""Graded scores: block scorers equal the scalar functions; ranges and anchors."""

from __future__ import annotations

import numpy as np

from scenes.atoms import caption_atoms, scene_atoms
from scenes.captions import Caption
from scenes.facts import (
    holds,
)
from scenes.grading import (
    STS_DISTINCT_CAP,
    sis_block,
    sis_hundredths,
    sis_overlap_hundredths,
    sits_hundredths,
    sits_true_hundredths,
    sits_true_hundredths_array,
    sts_block,
    sts_hundredths,
    sts_overlap_hundredths,
)
from scenes.scene import Scene


def test_block_scorers_equal_the_scalar_functions() -> None:
    rng = np.random.default_rng(0)
    mass_rows = rng.integers(1, 160, size=60).astype(np.float32)
    mass_columns = rng.integers(1, 160, size=70).astype(np.float32)
    limit = np.minimum(mass_rows[:, None], mass_columns[None, :])
    shared = np.floor(rng.random((60, 70)) * (limit + 1)).astype(np.float32)
    shared[0, :] = limit[0, :]  # identical-mass and full-overlap cases
    sts = sts_block(shared.copy(), mass_rows, mass_columns)
    sis = sis_block(shared.copy(), mass_rows, mass_columns)
    for i in range(60):
        for j in range(70):
            s, total = int(shared[i, j]), int(mass_rows[i] + mass_columns[j])
            assert sts[i, j] == sts_overlap_hundredths(s, total)
            assert sis[i, j] == sis_overlap_hundredths(s, total)
    covered = np.arange(0, 90)[:, None]
    image = np.arange(1, 90)[None, :]
    table = sits_true_hundredths_array(covered, image)
    for c in range(90):
        for m in range(max(c, 1), 90):
            assert table[c, m - 1] == sits_true_hundredths(c, m)


def test_score_ranges_and_anchors(world: tuple[list[Scene], list[Caption]]) -> None:
    scenes, captions = world
    atoms = [caption_atoms(caption.facts) for caption in captions]
    own = sits_hundredths(captions[0].facts, atoms[0], scenes[0], scene_atoms(scenes[0]))
    assert 300 <= own <= 500
    facts = [frozenset(caption.facts) for caption in captions]
    assert sts_hundredths(facts[0], facts[0], atoms[0], atoms[0]) == 500
    assert sis_hundredths(scene_atoms(scenes[0]), scene_atoms(scenes[0])) == 500
    for a in range(0, 60, 7):
        for b in range(1, 60, 11):
            value = sts_hundredths(facts[a], facts[b], atoms[a], atoms[b])
            same = facts[a] == facts[b]
            assert value == 500 if same else 0 <= value <= STS_DISTINCT_CAP
            for scene in scenes[:20]:
                value = sits_hundredths(captions[a].facts, atoms[a], scene, scene_atoms(scene))
                true = all(holds(fact, scene) for fact in captions[a].facts)
                assert 300 <= value <= 500 if true else 0 <= value <= 260
