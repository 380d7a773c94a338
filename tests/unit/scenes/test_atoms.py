"""Atoms: a true caption's atoms are a subset of its scene's."""

from __future__ import annotations

from scenes.atoms import caption_atoms, scene_atoms
from scenes.captions import Caption
from scenes.facts import (
    holds,
)
from scenes.scene import Scene


def test_atoms_of_a_true_caption_are_always_a_subset_of_the_scene(
    world: tuple[list[Scene], list[Caption]],
) -> None:
    scenes, captions = world
    for caption in captions[::3]:
        atoms = caption_atoms(caption.facts).atoms
        for scene in scenes:
            if all(holds(fact, scene) for fact in caption.facts):
                assert atoms <= scene_atoms(scene).atoms
