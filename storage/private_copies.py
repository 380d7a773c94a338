"""Private copies: the bundle versions a server maps, copied first into a folder it owns.

A bundle's vectors, flat index codes, on-disk inverted lists and thumbnails are memory-mapped.
When a mapped file is truncated or rewritten in place under a running server — an operator's
``cp`` over it, a builder writing into the wrong folder, a full disk — the next touch of a lost
page raises SIGBUS, and the whole process dies: Python cannot turn that signal into an
exception (its handler would run after the faulting instruction, which the kernel restarts
forever). Unlinking or renaming a mapped file is harmless (the mapping keeps the inode); only
changing its bytes is not.

So the server maps only files it owns: :meth:`PrivateCopies.adopt` copies a version's files into
``<root>/<bundle>/<version>/`` (read-only, in a folder only its owner may enter) before the
loader verifies and maps them, so what is hashed is exactly what is mapped, and nothing another
process does to the bundles root reaches a served page. A version already copied (by this
process, or by another worker of the same server sharing ``root``) is reused.

Several processes share one ``root`` safely: each holds a shared ``flock`` on
``<root>/<bundle>/<version>.lock`` while it serves that version; :meth:`PrivateCopies.keep`
releases what a process no longer serves and deletes a copy once no process holds its lock
(lock files stay: unlinking one that another process waits on would split the lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Final

from storage.layout import MANIFEST_FILE

_OWNER_ONLY: Final = 0o700
_READ_ONLY: Final = 0o444
_STAGING_PREFIX: Final = "."
_LOCK_SUFFIX: Final = ".lock"
OWNER_FILE: Final = "owner.pid"
"""In a root made by :meth:`PrivateCopies.temporary`: the process that made it."""
TEMPORARY_PREFIX: Final = "crisscross-copies-"


class PrivateCopyError(OSError):
    """A version could not be copied (a missing file, a full disk)."""


def _listed_files(source: Path) -> list[str]:
    """The manifest and every file it hashes (read without trusting anything else in it)."""
    try:
        manifest = json.loads((source / MANIFEST_FILE).read_bytes())
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PrivateCopyError(
            f"{source}: cannot read the files of {MANIFEST_FILE}: {exc}"
        ) from exc
    if not isinstance(files, dict):
        raise PrivateCopyError(f"{source}: {MANIFEST_FILE} files is not a mapping")
    names = [MANIFEST_FILE]
    for name in files:
        if not isinstance(name, str) or Path(name).name != name or name.startswith("."):
            raise PrivateCopyError(f"{source}: {MANIFEST_FILE} lists a file outside the bundle")
        names.append(name)
    return names


class PrivateCopies:
    """Copies of bundle versions under ``root`` (see the module)."""

    def __init__(self, root: Path, *, owned: bool = False) -> None:
        """``owned``: this object made ``root`` and removes it in :meth:`close`."""
        self.root = root
        self.owned = owned
        root.mkdir(mode=_OWNER_ONLY, parents=True, exist_ok=True)
        os.chmod(root, _OWNER_ONLY)
        self._held: dict[Path, int] = {}  # version copy -> descriptor of its shared lock
        # One thread at a time adopts, lets go or closes: a close waits for a copy under way
        # and every adopt after it is refused.
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def temporary(cls, parent: Path | None = None) -> PrivateCopies:
        """A fresh root under ``parent`` (default: the system's temporary folder), removed by
        :meth:`close`; roots left there by processes that died first are removed now."""
        base = Path(parent or tempfile.gettempdir())
        sweep_orphans(base)
        root = Path(tempfile.mkdtemp(prefix=TEMPORARY_PREFIX, dir=base))
        (root / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
        return cls(root, owned=True)

    def copy_of(self, source: Path) -> Path:
        """Where ``source`` (``<bundles_root>/<bundle>/<version>``) is copied to."""
        return self.root / source.parent.name / source.name

    def adopt(self, source: Path) -> Path:
        """The private copy of version folder ``source``, made now unless it exists; this
        process holds it (until :meth:`keep` leaves it out). Raises :class:`PrivateCopyError`."""
        with self._lock:
            if self._closed:
                raise PrivateCopyError(f"{source}: the copies are closed (the server is stopping)")
            return self._adopt(source)

    def _adopt(self, source: Path) -> Path:
        target = self.copy_of(source)
        if target in self._held:
            return target
        target.parent.mkdir(mode=_OWNER_ONLY, exist_ok=True)
        lock = os.open(
            target.parent / f"{target.name}{_LOCK_SUFFIX}", os.O_RDWR | os.O_CREAT, 0o600
        )
        try:
            fcntl.flock(lock, fcntl.LOCK_SH)  # waits while another process deletes this copy
            if not target.is_dir():
                self._copy(source, target)
        except BaseException:
            os.close(lock)
            raise
        self._held[target] = lock
        return target

    def _copy(self, source: Path, target: Path) -> None:
        staging = Path(
            tempfile.mkdtemp(prefix=f"{_STAGING_PREFIX}{target.name}.", dir=target.parent)
        )
        try:
            for name in _listed_files(source):
                copied = staging / name
                try:
                    shutil.copyfile(source / name, copied)  # in the kernel (sendfile)
                except OSError as exc:
                    raise PrivateCopyError(f"{source}: cannot copy {name}: {exc}") from exc
                os.chmod(copied, _READ_ONLY)
            os.chmod(staging, 0o500)
            try:
                os.rename(staging, target)
            except OSError:
                if not target.is_dir():  # not another worker's copy that won the race
                    raise
        finally:
            if staging.exists():
                _remove(staging)

    def keep(self, sources: set[Path]) -> None:
        """Stop holding every copy whose source is not in ``sources``; delete each one that no
        other process holds either."""
        wanted = {self.copy_of(source) for source in sources}
        with self._lock:
            for target in [held for held in self._held if held not in wanted]:
                self._release(target)

    def _release(self, target: Path) -> None:
        lock = self._held.pop(target)
        try:
            fcntl.flock(lock, fcntl.LOCK_UN)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # another process serves it still: it deletes the copy later
            if target.is_dir():
                _remove(target)
        finally:
            os.close(lock)

    def close(self) -> None:
        """Release every copy and refuse to adopt more; remove the root when this object made
        it. Idempotent."""
        with self._lock:
            self._closed = True
            for target in list(self._held):
                self._release(target)
            if self.owned:
                _remove(self.root)


def _remove(folder: Path) -> None:
    """Delete ``folder`` and what it holds (read-only files and folders included). Deleting a
    file another mapping still reads is safe: the mapping keeps its inode."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            with contextlib.suppress(OSError):
                os.chmod(path, _OWNER_ONLY)
    shutil.rmtree(folder, ignore_errors=True)


def sweep_orphans(base: Path) -> list[Path]:
    """Remove the roots under ``base`` that :meth:`PrivateCopies.temporary` made for processes
    no longer alive (a server killed before it could remove its own); returns them."""
    removed = []
    for root in base.glob(f"{TEMPORARY_PREFIX}*"):
        try:
            pid = int((root / OWNER_FILE).read_text(encoding="ascii"))
        except (OSError, ValueError):
            continue
        if _alive(pid):
            continue
        _remove(root)
        removed.append(root)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True
