"""Where the service runs: how many worker processes, and which one this is.

One worker (the default on small machines) is the plain process ``python -m service serve``
starts. With more, a supervisor (:mod:`service.runtime.workers`) spawns them on one listening socket
and hands each a :class:`ProcessLayout` naming its index and the run folder they share: the
Prometheus multiprocess files (:mod:`service.metrics`) and the reload broadcast
(:mod:`service.lifecycle.reload_broadcast`) live there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

# Automatic layout: one worker per this many cores, above AUTO_SINGLE_WORKER_CORES cores.
CORES_PER_WORKER: Final = 4
AUTO_SINGLE_WORKER_CORES: Final = 4
AUTO_MAX_WORKERS: Final = 8


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, which a container's cpuset narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def resolve_workers(requested: int, cores: int) -> int:
    """The worker count for the ``workers`` setting: ``requested`` when above 0, else 1 on up to
    :data:`AUTO_SINGLE_WORKER_CORES` cores and one per :data:`CORES_PER_WORKER` cores above
    (at most :data:`AUTO_MAX_WORKERS`)."""
    if requested > 0:
        return requested
    if cores <= AUTO_SINGLE_WORKER_CORES:
        return 1
    return max(1, min(AUTO_MAX_WORKERS, cores // CORES_PER_WORKER))


@dataclass(frozen=True)
class ProcessLayout:
    """This process's place: worker ``worker`` (0-based) of ``workers``. ``run_dir`` is the
    folder the workers share; None for a single process, which shares nothing."""

    workers: int = 1
    worker: int = 0
    run_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.workers < 1 or not 0 <= self.worker < self.workers:
            raise ValueError(f"worker {self.worker} of {self.workers} is not a worker")
        if (self.workers > 1) != (self.run_dir is not None):
            raise ValueError("several workers share a run folder; a single process has none")

    @property
    def shared(self) -> bool:
        """Whether other workers serve beside this process."""
        return self.run_dir is not None

    @property
    def metrics_dir(self) -> Path | None:
        """Where the workers' Prometheus multiprocess files go (None for a single process)."""
        return None if self.run_dir is None else self.run_dir / "metrics"

    @property
    def reload_dir(self) -> Path | None:
        """Where the workers' reload orders go (None for a single process)."""
        return None if self.run_dir is None else self.run_dir / "reload"

    def heartbeat_file(self, worker: int | None = None) -> Path | None:
        """The file worker ``worker`` (default: this one) touches while its event loop runs
        (None for a single process)."""
        if self.run_dir is None:
            return None
        return self.run_dir / "heartbeats" / str(self.worker if worker is None else worker)

    def beat(self) -> None:
        """Touch this worker's heartbeat file (a no-op for a single process)."""
        path = self.heartbeat_file()
        if path is not None:
            path.parent.mkdir(exist_ok=True)
            path.touch()

    @property
    def pid(self) -> int:
        """This process's id."""
        return os.getpid()
