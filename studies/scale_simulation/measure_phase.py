"""The ``measure`` phase: one ``--phase measure-one`` process per built index kind, with one
OpenMP and BLAS thread, so each kind's memory is its own."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from studies.scale_simulation.cache_layout import Paths
from studies.scale_simulation.config import Config
from studies.scale_simulation.index_kinds import kinds_for
from studies.scale_simulation.locations import REPO
from studies.scale_simulation.progress import log


def phase_measure(
    cfg: Config, scales: Sequence[int], common: Sequence[str], remeasure: bool
) -> None:
    """``common``: the options the child processes share with this run (their command line)."""
    for n in scales:
        p = Paths(cfg, n)
        p.measure.mkdir(parents=True, exist_ok=True)
        for kind in kinds_for(n, cfg):
            if kind.skipped or not p.build_info(kind).is_file():
                log(f"scale {n:,}: {kind.name}: not built, not measured")
                continue
            if p.result(kind).is_file() and not remeasure:
                continue
            log(f"scale {n:,}: measuring {kind.name} ({kind.queries} queries per parameter)")
            env = dict(os.environ)
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                env[var] = "1"
            # the child imports this very package from the checkout (REPO holds it; studies are not
            # installed), from any cwd
            env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))
            command = [sys.executable, "-m", "studies.scale_simulation", *common]
            command += ["--phase", "measure-one", "--scales", str(n), "--kind", kind.name]
            subprocess.run(command, check=True, env=env)
