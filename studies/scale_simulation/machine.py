"""The facts of the machine a report was made on: platform, CPU, memory, library versions."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from studies.scale_simulation.units import GIB


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "faiss": faiss.__version__,
        "numpy": np.__version__,
        "loadavg_at_report": os.getloadavg(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["mem_total_gib"] = int(line.split()[1]) * 1024 / GIB
    except OSError:
        pass
    return info
