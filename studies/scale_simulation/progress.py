"""Progress lines on stdout, stamped with the wall-clock time."""

from __future__ import annotations

import time


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)
