"""The cached CIDEr-D matrix of a split: reused while the captions file's hash matches, rebuilt
otherwise; where the cache lives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from evaluation.data.cider_cache import SETTINGS, default_cache_dir, load_or_build_cider
from formats.layout import captions_path
from tests.fakes.tiny_data import TinyDataset


def test_cache_is_reused_while_the_captions_hash_matches(tiny: TinyDataset, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = load_or_build_cider(tiny.data_dir, tiny.split, cache, show_progress=False)
    assert first.built
    assert first.scores.shape == (60, 12)
    assert first.scores.dtype == np.float32
    meta = json.loads(first.path.with_suffix(".json").read_text(encoding="utf-8"))
    assert meta["captions_sha256"] == first.sha256
    again = load_or_build_cider(tiny.data_dir, tiny.split, cache, show_progress=False)
    assert not again.built
    np.testing.assert_array_equal(np.asarray(again.scores), first.scores)
    # a changed captions file has another hash: rebuilt, in a file of its own
    source = captions_path(tiny.data_dir, tiny.split)
    source.write_text(source.read_text(encoding="utf-8").replace("dog", "wolf"), encoding="utf-8")
    changed = load_or_build_cider(tiny.data_dir, tiny.split, cache, show_progress=False)
    assert changed.built
    assert changed.sha256 != first.sha256
    assert changed.path != first.path
    # the default cache lives next to the (writable) data
    beside = load_or_build_cider(tiny.data_dir, tiny.split, show_progress=False)
    assert beside.path.parent == tiny.data_dir / "cider"


def test_the_report_entry_names_file_hash_shape_and_settings(
    tiny: TinyDataset, tmp_path: Path
) -> None:
    cached = load_or_build_cider(tiny.data_dir, tiny.split, tmp_path, show_progress=False)
    entry = cached.as_report()
    assert entry["cache_file"] == str(cached.path)
    assert entry["captions_sha256"] == cached.sha256
    assert (entry["shape"], entry["dtype"]) == ([60, 12], "float32")
    assert entry["settings"] == dict(SETTINGS)


def test_default_cache_falls_back_when_the_data_folder_is_read_only(tmp_path: Path) -> None:
    data = tmp_path / "shared"
    data.mkdir()
    assert default_cache_dir(data) == data / "cider"
    data.chmod(0o555)
    try:
        assert default_cache_dir(data) == Path("artifacts/cache/cider")
    finally:
        data.chmod(0o755)
