"""This process's memory from /proc/self."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from studies.scale_simulation.memory import mapped_rss, memory_snapshot, smaps_rollup


def test_the_rollup_reports_resident_memory() -> None:
    rollup = smaps_rollup()
    assert rollup["Rss"] > 0
    assert rollup["Rss"] % 1024 == 0


def test_only_the_given_files_mappings_count(tmp_path: Path) -> None:
    path = tmp_path / "rows.npy"
    np.save(path, np.ones((256, 1024), np.float32))  # 1 MiB
    assert mapped_rss([path]) == 0
    mapped = np.load(path, mmap_mode="r")
    assert float(mapped.sum()) == 256 * 1024  # touches every page
    assert mapped_rss([path]) >= 1024 * 1024
    assert mapped_rss([tmp_path / "other.npy"]) == 0
    snapshot = memory_snapshot([path])
    assert set(snapshot) == {"rss", "anon", "pss_file", "index_file_rss"}
    assert snapshot["index_file_rss"] >= 1024 * 1024
    del mapped
