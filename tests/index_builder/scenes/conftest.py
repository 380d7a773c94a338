"""A small generated corpus shared by the scenes tests (generated once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from index_builder.scenes.generate import GenerationConfig, generate_scenes

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
