"""The process layout: how many workers the ``workers`` setting means, and what a worker is."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.process_layout import AUTO_MAX_WORKERS, ProcessLayout, resolve_workers, usable_cores


@pytest.mark.parametrize(
    ("cores", "expected"),
    [(1, 1), (2, 1), (4, 1), (5, 1), (8, 2), (16, 4), (64, AUTO_MAX_WORKERS)],
)
def test_automatic_workers_follow_the_cores(cores: int, expected: int) -> None:
    assert resolve_workers(0, cores) == expected


def test_a_requested_count_is_kept_whatever_the_cores() -> None:
    assert resolve_workers(3, 2) == 3
    assert resolve_workers(1, 64) == 1


def test_usable_cores_is_at_least_one() -> None:
    assert usable_cores() >= 1


def test_a_single_process_shares_nothing() -> None:
    layout = ProcessLayout()
    assert (layout.workers, layout.worker, layout.shared) == (1, 0, False)
    assert layout.metrics_dir is None
    assert layout.reload_dir is None


def test_workers_of_several_share_one_run_folder(tmp_path: Path) -> None:
    layout = ProcessLayout(workers=2, worker=1, run_dir=tmp_path)
    assert layout.shared
    assert layout.metrics_dir == tmp_path / "metrics"
    assert layout.reload_dir == tmp_path / "reload"


@pytest.mark.parametrize(
    ("workers", "worker", "shared"),
    [(0, 0, False), (2, 2, True), (2, -1, True), (2, 0, False), (1, 0, True)],
)
def test_an_impossible_layout_is_refused(
    workers: int, worker: int, shared: bool, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"worker|run folder"):
        ProcessLayout(workers=workers, worker=worker, run_dir=tmp_path if shared else None)


def test_a_worker_beats_into_its_own_file_and_a_single_process_nowhere(tmp_path: Path) -> None:
    ProcessLayout().beat()  # nothing to touch
    assert ProcessLayout().heartbeat_file() is None
    layout = ProcessLayout(workers=3, worker=2, run_dir=tmp_path)
    layout.beat()
    assert layout.heartbeat_file() == tmp_path / "heartbeats" / "2"
    assert (tmp_path / "heartbeats" / "2").is_file()
    assert layout.heartbeat_file(0) == tmp_path / "heartbeats" / "0"
