"""``python -m studies.scale_simulation`` (from the checkout's root): the command
``make scale-report`` runs."""

from __future__ import annotations

from studies.scale_simulation.command_line import main

if __name__ == "__main__":
    raise SystemExit(main())
