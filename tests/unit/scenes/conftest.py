"""Shared by the scenes tests: a small generated corpus (once per session) and a world of sampled
scenes with their captions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scenes.captions import Caption, generate_captions
from scenes.generate import GenerationConfig, generate_scenes
from scenes.scene import Scene, sample_scene

SMALL_SIZES = {"train": 40, "val": 160, "test": 100}


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``train`` 40, ``val`` 160 and ``test`` 100 images, judgments for all three splits."""
    root = tmp_path_factory.mktemp("scenes") / "corpus"
    generate_scenes(
        GenerationConfig(
            out=root,
            seed=7,
            sizes=SMALL_SIZES,
            workers=1,
            judgment_splits=("train", "val", "test"),
            progress=False,
        )
    )
    return root


@pytest.fixture(scope="session")
def world() -> tuple[list[Scene], list[Caption]]:
    """80 sampled scenes (seeded) and their generated captions."""
    scenes: list[Scene] = []
    captions: list[Caption] = []
    for seed in range(80):
        rng = np.random.default_rng([5, seed])
        scene = sample_scene(rng)
        scenes.append(scene)
        captions.extend(generate_captions(scene, rng))
    return scenes, captions
