"""Splitting a bundle into shard bundles and the shard map."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cluster.serve_command import register
from cluster.shard_searcher import ShardLoadError, ShardSearcher
from cluster.shard_split import (
    ShardMap,
    ShardMapError,
    locate_shards,
    read_shard_map,
    shard_ranges,
    split_bundle,
)
from storage.manifest import verify_bundle
from storage.reader import load_bundle
from tests.unit.cluster.sharded_data import BUNDLE, FINGERPRINT, VARIANT, write_hard_bundle

ROWS = 301


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return write_hard_bundle(tmp_path / "bundles", ROWS)


def test_ranges_are_contiguous_and_even() -> None:
    assert shard_ranges(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert shard_ranges(3, 3) == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(ShardMapError, match="non-empty"):
        shard_ranges(2, 3)
    with pytest.raises(ShardMapError, match=r"1\.\.256"):
        shard_ranges(10, 0)


def test_split_writes_ordinary_bundles_and_a_map(source: Path, tmp_path: Path) -> None:
    map_path = tmp_path / "maps" / "shards.json"
    shard_map = split_bundle(source.parent, "captions", 3, tmp_path / "shards", map_path)
    assert read_shard_map(map_path) == shard_map
    assert (shard_map.source_bundle, shard_map.source_version) == (BUNDLE, "v1")
    assert (shard_map.variant_name, shard_map.variant_fingerprint) == (VARIANT, FINGERPRINT)
    assert [(s.row_offset, s.count) for s in shard_map.shards] == [(0, 101), (101, 100), (201, 100)]
    whole = load_bundle(source).collections["captions"]
    for located in locate_shards(map_path, shard_map):
        entry = located.entry
        verify_bundle(located.version_dir)
        bundle = load_bundle(located.version_dir)
        assert bundle.variant_fingerprint == FINGERPRINT
        assert bundle.manifest.build_info["shard_of"]["row_offset"] == entry.row_offset
        assert bundle.manifest.build_info["shard_of"]["total_count"] == ROWS
        part = bundle.collections["captions"]
        rows = slice(entry.row_offset, entry.row_offset + entry.count)
        assert list(part.ids) == list(whole.ids)[rows]
        assert np.array_equal(part.vectors, whole.vectors[rows])
        assert [dict(m) for m in part.metadata] == [dict(m) for m in whole.metadata[rows]]
        assert part.fields == whole.fields
        assert part.factory == whole.factory


def test_the_map_names_shards_relative_to_itself(source: Path, tmp_path: Path) -> None:
    split_bundle(source, "captions", 2, tmp_path / "shards", tmp_path / "maps" / "shards.json")
    moved = tmp_path / "moved"
    moved.mkdir()
    for folder in ("maps", "shards"):
        (tmp_path / folder).rename(moved / folder)
    map_path = moved / "maps" / "shards.json"
    shard_map = read_shard_map(map_path)
    for located in locate_shards(map_path, shard_map):
        assert not Path(located.entry.path).is_absolute()
        ShardSearcher(located.entry, located.version_dir, "captions")


def test_split_refusals(source: Path, tmp_path: Path) -> None:
    with pytest.raises(ShardMapError, match="no collection 'images'"):
        split_bundle(source, "images", 2, tmp_path / "shards", tmp_path / "a.json")
    with pytest.raises(ShardMapError, match="number of shards"):
        split_bundle(source, "captions", 300, tmp_path / "shards", tmp_path / "b.json")
    split_bundle(source, "captions", 2, tmp_path / "shards", tmp_path / "c.json")
    with pytest.raises(ShardMapError, match="already exists"):
        split_bundle(source, "captions", 2, tmp_path / "shards", tmp_path / "d.json")
    with pytest.raises(ShardMapError, match="cannot read"):
        split_bundle(tmp_path / "nothing", "captions", 2, tmp_path / "shards", tmp_path / "e.json")


def test_a_map_with_gaps_or_bad_totals_is_refused(source: Path, tmp_path: Path) -> None:
    map_path = tmp_path / "shards.json"
    shard_map = split_bundle(source, "captions", 3, tmp_path / "shards", map_path)
    raw = json.loads(map_path.read_text())
    raw["shards"][1]["row_offset"] += 1
    map_path.write_text(json.dumps(raw))
    with pytest.raises(ShardMapError, match="starts at row"):
        read_shard_map(map_path)
    bad_total = shard_map.model_dump() | {"total_count": ROWS + 1}
    with pytest.raises(ValueError, match="total_count"):
        ShardMap.model_validate(bad_total)
    with pytest.raises(ShardMapError, match="no shard map"):
        read_shard_map(tmp_path / "missing.json")


def test_a_shard_refuses_a_bundle_its_map_does_not_name(source: Path, tmp_path: Path) -> None:
    map_path = tmp_path / "shards.json"
    shard_map = split_bundle(source, "captions", 2, tmp_path / "shards", map_path)
    first, second = locate_shards(map_path, shard_map)
    with pytest.raises(ShardLoadError, match="manifest sha256"):
        ShardSearcher(first.entry, second.version_dir, "captions")
    searcher = ShardSearcher(second.entry, second.version_dir, "captions")
    facts = searcher.describe()
    assert (facts.shard, facts.rows) == (second.entry.name, second.entry.count)
    params = searcher.view.params(None, "search_params")
    leg = searcher.answer("top", (np.eye(1, 8, dtype=np.float32)[0], 3, None, params))
    assert all(0 <= row < second.entry.count for row in leg.rows.tolist())  # its own rows
    with pytest.raises(ValueError, match="not 'close'"):
        searcher.answer("close", ())


def test_split_command(source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    map_path = tmp_path / "shards.json"
    args = parser.parse_args(
        ["split", "--bundle", str(source), "--shards", "2", "--out-root", str(tmp_path / "s"),
         "--map", str(map_path)]
    )  # fmt: skip
    assert args.handler(args) == 0
    assert "shard-1: rows 151..300" in capsys.readouterr().out
    assert len(read_shard_map(map_path).shards) == 2
    again = parser.parse_args(
        ["split", "--bundle", str(source), "--collection", "nope", "--shards", "2",
         "--out-root", str(tmp_path / "s"), "--map", str(map_path)]
    )  # fmt: skip
    assert again.handler(again) == 2
