"""Making a write durable: a file's bytes, or a folder's entries, forced to the disk.

A rename is atomic but not durable until the folder that holds it is fsynced (and the renamed
file's own bytes before it): every publication here fsyncs the file, renames it, then fsyncs
the folder.
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_path(path: Path) -> None:
    """fsync a file or a folder by path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(source: Path, target: Path) -> None:
    """``os.replace(source, target)`` made durable: the source's bytes, then the rename."""
    fsync_path(source)
    os.replace(source, target)
    fsync_path(target.parent)
