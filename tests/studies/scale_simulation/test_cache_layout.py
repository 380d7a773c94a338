"""File names under --cache."""

from __future__ import annotations

from pathlib import Path

from studies.scale_simulation.cache_layout import (
    Paths,
    fit_check_path,
    generator_path,
    generator_tag,
)
from studies.scale_simulation.command_line import config_from, parse_args
from studies.scale_simulation.index_kinds import kinds_for


def test_files_are_named_by_generator_scale_and_kind(tmp_path: Path) -> None:
    argv = ["--cache", str(tmp_path), "--seed", "1", "--clusters", "2", "--rank", "3"]
    cfg = config_from(parse_args([*argv, "--spread", "1.5", "--pq", "8,16"]))
    assert generator_tag(cfg) == "s1-k2-r3-x1.5"
    assert generator_path(cfg) == tmp_path / "generator-s1-k2-r3-x1.5.npz"
    assert fit_check_path(cfg) == tmp_path / "fit-check-s1-k2-r3-x1.5.json"
    p = Paths(cfg, 20_000)
    assert p.root == tmp_path / "n20000-s1-k2-r3-x1.5"
    *_, on_disk, rerank = kinds_for(20_000, cfg)
    assert p.index(rerank) == p.index(on_disk) == p.indexes / "ivf1024_pq16-on-disk.index"
    assert p.ivfdata(rerank) == p.indexes / "ivf1024_pq16-on-disk.ivfdata"
    assert p.build_info(rerank) == p.indexes / "ivf1024_pq16-on-disk--re-rank-100.build.json"
    assert p.result(rerank) == p.measure / "ivf1024_pq16-on-disk--re-rank-100.json"
    assert p.ids(on_disk) == p.measure / "ivf1024_pq16-on-disk.ids.npz"
