"""Simulation at scale (issue 17, part 4): faiss index kinds on synthetic embeddings.

The code lives in the ``scale_simulation`` package (its docstring describes the method); this
script is its entry point, the command ``reports/scale/report.md`` and ``make scale-report`` name,
the same as ``python -m scale_simulation``.

Example::

    .venv/bin/python scripts/scale_simulation.py --scales 1000000            # all phases
    .venv/bin/python scripts/scale_simulation.py --scales 1000000,10000000 --phase measure
"""

from __future__ import annotations

import sys
from pathlib import Path

# Python puts this file's folder first on sys.path, and this file would shadow the package of the
# same name: the checkout's root takes its place (the package also comes from an install).
sys.path[0] = str(Path(__file__).resolve().parent.parent)

from scale_simulation.command_line import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
