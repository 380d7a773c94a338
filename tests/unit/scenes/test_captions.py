"""Generated captions: every one is true of its scene."""

from __future__ import annotations

from scenes.atoms import caption_atoms, scene_atoms
from scenes.captions import CAPTIONS_PER_IMAGE, Caption
from scenes.facts import (
    holds,
)
from scenes.scene import Scene


def test_every_caption_is_true_of_its_scene_and_its_atoms_are_the_scenes(
    world: tuple[list[Scene], list[Caption]],
) -> None:
    scenes, captions = world
    kinds = set()
    for index, caption in enumerate(captions):
        scene = scenes[index // CAPTIONS_PER_IMAGE]
        assert caption.facts
        assert all(holds(fact, scene) for fact in caption.facts)
        assert caption_atoms(caption.facts).atoms <= scene_atoms(scene).atoms
        kinds.add(caption.kind)
    assert kinds == {"full", "objects", "object", "relation", "count"}
