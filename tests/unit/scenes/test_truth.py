"""The vectorised truth table equals the scalar definition."""

from __future__ import annotations

import numpy as np

from scenes.captions import Caption
from scenes.facts import (
    holds,
)
from scenes.scene import Scene
from scenes.truth import fact_table, pack_scenes


def test_vectorised_truth_equals_scalar_truth(world: tuple[list[Scene], list[Caption]]) -> None:
    scenes, captions = world
    table = fact_table([caption.facts for caption in captions], pack_scenes(scenes))
    all_true = table.all_true(0, len(captions))
    counts = table.true_counts(np.arange(len(captions)))
    for row, caption in enumerate(captions):
        for column, scene in enumerate(scenes):
            truths = [holds(fact, scene) for fact in caption.facts]
            assert all_true[row, column] == all(truths)
            assert counts[row, column] == sum(truths)
