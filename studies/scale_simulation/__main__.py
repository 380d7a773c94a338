"""``python -m scale_simulation``: the same command as ``scripts/scale_simulation.py``."""

from __future__ import annotations

from scale_simulation.command_line import main

if __name__ == "__main__":
    raise SystemExit(main())
