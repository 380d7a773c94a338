"""Writing a directory so that it appears complete or not at all."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

PUBLISHED_DIRECTORY_MODE: Final = 0o755

logger = logging.getLogger(__name__)


@contextmanager
def staged_directory(target: Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield an empty staging folder next to ``target``; on success it becomes ``target``.

    On a clean exit every file is fsynced and the folder renamed to ``target`` (one atomic
    rename on the same filesystem). On an exception the staging folder is deleted and ``target``
    is untouched. An existing ``target`` raises ``FileExistsError`` unless ``overwrite``; then it
    is moved aside just before the rename and deleted after it.
    """
    target = Path(target).absolute()
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists; pass overwrite=True (--force) to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.staging-"))
    # mkdtemp creates the folder private (0700); the published folder must be readable by the
    # service, which may run as another user.
    staging.chmod(PUBLISHED_DIRECTORY_MODE)
    try:
        yield staging
        _fsync_tree(staging)
        _replace_directory(staging, target, overwrite=overwrite)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _fsync_path(target.parent)
    logger.info("wrote %s", target)


def _replace_directory(staging: Path, target: Path, *, overwrite: bool) -> None:
    """Rename ``staging`` to ``target``, moving an old ``target`` aside first when allowed."""
    if not target.exists():
        staging.rename(target)
        return
    if not overwrite:
        raise FileExistsError(f"{target} appeared while it was being written")
    retired = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
    # rename() onto an existing empty directory is atomic on POSIX and swaps the old one out.
    target.rename(retired)
    staging.rename(target)
    shutil.rmtree(retired, ignore_errors=True)


def _fsync_tree(root: Path) -> None:
    """fsync every file and folder under ``root`` so the rename publishes durable contents."""
    for folder, _subfolders, files in os.walk(root):
        for name in files:
            _fsync_path(Path(folder) / name)
        _fsync_path(Path(folder))


def _fsync_path(path: Path) -> None:
    """fsync one file or directory."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
