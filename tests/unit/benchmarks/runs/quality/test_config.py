"""The quality run's settings: refusals and the images folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.runs.quality.config import QualityRunConfig
from tests.fakes.tiny_data import TinyDataset


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"tasks": ("t2t", "nope")}, "unknown task"),
        ({"k": 5}, "R@10"),
        ({"limit_queries": 0}, "limit_queries"),
        ({"dataset": "flickr"}, "dataset must be one of"),
        ({"image_queries": "pixels"}, "image_queries"),
        ({"max_uploads_per_request": 1}, "max_uploads_per_request"),
        ({"cider": "on"}, "cider must be one of"),
    ],
)
def test_refusals(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QualityRunConfig(url="http://x", data_dir=Path("d"), **settings)


def test_a_small_k_is_fine_without_retrieval_tasks() -> None:
    assert QualityRunConfig(url="http://x", data_dir=Path("d"), k=5, tasks=("sts",)).k == 5


def test_the_images_folder(tiny: TinyDataset, tmp_path: Path) -> None:
    config = QualityRunConfig(url="http://x", data_dir=tiny.data_dir)
    assert config.resolved_images_dir() == tiny.images_dir
    given = QualityRunConfig(url="http://x", data_dir=tiny.data_dir, images_dir=tmp_path)
    assert given.resolved_images_dir() == tmp_path
    test_split = QualityRunConfig(url="http://x", data_dir=tiny.data_dir, split="test")
    assert test_split.resolved_images_dir() is None
    assert (config.cider, config.recall_eq1) == ("off", False)  # the command line turns them on
