"""The benchmark client's machine, as every report records it."""

from __future__ import annotations

import os
import platform


def environment_info() -> dict[str, object]:
    """The benchmark client's machine: CPU count, platform string, Python version."""
    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def load_average() -> list[float] | None:
    """The machine's 1/5/15-minute load averages (runnable processes), if the OS tells."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return None
