"""Units of the report: GiB, and short forms of counts and byte sizes."""

from __future__ import annotations

GIB = 1024**3


def human(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def fmt_gib(b: float | None) -> str:
    return "–" if b is None else f"{b / GIB:.2f}"
