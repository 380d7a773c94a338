"""Same seed → byte-identical corpus, whatever the number of workers or the other splits
generated; another seed → another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenes.generate import GenerationConfig, GenerationError, generate_scenes

TINY = {"train": 12, "val": 30, "test": 0}


def _files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _generate(root: Path, seed: int, workers: int = 1) -> dict[str, bytes]:
    generate_scenes(
        GenerationConfig(out=root, seed=seed, sizes=TINY, workers=workers, progress=False)
    )
    return _files(root)


def test_same_seed_gives_byte_identical_files_with_any_worker_count(tmp_path: Path) -> None:
    first = _generate(tmp_path / "a", seed=3)
    second = _generate(tmp_path / "b", seed=3, workers=2)
    assert first.keys() == second.keys()
    assert [name for name in first if first[name] != second[name]] == []
    assert "cxc/sts_val.csv" in first
    assert "bison/bison_val.csv" in first
    assert "cxc/sts_train.csv" not in first  # train gets no judgments by default


def test_a_split_alone_is_byte_identical_to_that_split_of_the_whole_corpus(
    tmp_path: Path,
) -> None:
    # `make demo` generates the split it replays alone
    whole = _generate(tmp_path / "whole", seed=3, workers=2)
    root = tmp_path / "alone"
    generate_scenes(
        GenerationConfig(out=root, seed=3, sizes={"val": 30}, workers=2, progress=False)
    )
    alone = _files(root)
    assert {name for name in whole if "train" not in name} == set(alone)
    assert [name for name in alone if name != "manifest.json" and alone[name] != whole[name]] == []


def test_another_seed_gives_other_files(tmp_path: Path) -> None:
    first = _generate(tmp_path / "a", seed=3)
    other = _generate(tmp_path / "b", seed=4)
    assert (
        first["coco-karpathy-captions/captions_val.csv"]
        != other["coco-karpathy-captions/captions_val.csv"]
    )
    png = "images/val/scenes_val_000020000001.png"
    assert first[png] != other[png]


def test_a_non_empty_folder_is_refused_unless_overwriting(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "notes.txt").write_text("mine")
    config = GenerationConfig(out=root, sizes={"val": 4}, workers=1, progress=False)
    with pytest.raises(GenerationError, match="not empty"):
        generate_scenes(config)
    generate_scenes(
        GenerationConfig(out=root, sizes={"val": 4}, workers=1, progress=False, overwrite=True)
    )
    assert (root / "notes.txt").read_text() == "mine"  # only generated paths are replaced
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["splits"] == {
        "val": {
            "images": 4,
            "captions": 20,
            "sts": manifest["splits"]["val"]["sts"],
            "sis": manifest["splits"]["val"]["sis"],
            "sits": manifest["splits"]["val"]["sits"],
            "bison": 4,
        }
    }


@pytest.mark.parametrize(
    ("sizes", "message"),
    [({"val": -1}, "out of range"), ({"dev": 3}, "unknown split"), ({"val": 1}, "at least 2")],
)
def test_bad_configurations_are_refused(
    tmp_path: Path, sizes: dict[str, int], message: str
) -> None:
    with pytest.raises(GenerationError, match=message):
        generate_scenes(GenerationConfig(out=tmp_path / "x", sizes=sizes, progress=False))
