"""This process's memory from ``/proc/self``: the smaps rollup, the Rss of file mappings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def smaps_rollup() -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        text = Path("/proc/self/smaps_rollup").read_text()
    except OSError:
        return out
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            out[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return out


def mapped_rss(paths: Sequence[Path]) -> int:
    """Rss of this process's mappings of the given files (page cache pages it touches)."""
    names = {str(x.resolve()) for x in paths}
    total, current = 0, False
    try:
        lines = Path("/proc/self/smaps").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:
            current = len(head) >= 6 and head[5] in names
        elif current and head and head[0] == "Rss:":
            total += int(head[1]) * 1024
    return total


def memory_snapshot(files: Sequence[Path]) -> dict[str, int]:
    r = smaps_rollup()
    return {
        "rss": r.get("Rss", 0),
        "anon": r.get("Anonymous", 0),
        "pss_file": r.get("Pss_File", 0),
        "index_file_rss": mapped_rss(files),
    }
