"""A live collection's base, sent whole to a replica: one reader and one writer of the stream.

A follower that is new, behind its leader's base (a compaction emptied the log past it) or
diverged from the leader's log installs the leader's base and goes on from the log after it.
The stream is an uncompressed POSIX tar of ``keys.json`` (when there is one:
:mod:`storage.live.idempotency`) and ``base/<version>/<file>`` for every file of the base
version; every file is opened before the first byte is sent, so a compaction that removes the
version meanwhile cannot cut it short (an open file stays readable). The base's sequence number
and bundle collection travel beside it (HTTP headers), and the bundle's own manifest hashes
are verified when the copy opens it.
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Final

from storage.live.base import BASE_FOLDER, read_base_pointer
from storage.live.idempotency import KEYS_FILE, KeyTable, read_keys

CHUNK_BYTES: Final = 1 << 20
_BLOCK: Final = tarfile.BLOCKSIZE


@dataclass
class BaseFiles:
    """The files of one collection's base, open: the version (None: no base), the sequence
    number it holds and its bundle collection."""

    version: str | None
    seq: int
    collection: str
    files: list[tuple[str, BinaryIO, int]]
    """(name in the stream, open file, size)."""

    def chunks(self) -> Iterator[bytes]:
        """The tar stream; closes the files at its end."""
        try:
            for name, handle, size in self.files:
                info = tarfile.TarInfo(name)
                info.size = size
                info.mode = 0o644
                yield info.tobuf(format=tarfile.PAX_FORMAT)
                sent = 0
                while sent < size:
                    data = handle.read(min(CHUNK_BYTES, size - sent))
                    if not data:
                        raise OSError(f"{name} ended after {sent} of {size} bytes")
                    sent += len(data)
                    yield data
                if size % _BLOCK:
                    yield b"\0" * (_BLOCK - size % _BLOCK)
            yield b"\0" * (2 * _BLOCK)
        finally:
            self.close()

    def close(self) -> None:
        """Close every file."""
        for _, handle, _ in self.files:
            handle.close()


def open_base(folder: Path) -> BaseFiles:
    """Open the base files of the collection in ``folder`` (``OSError`` when a compaction
    replaced them meanwhile: ask again)."""
    pointer = read_base_pointer(folder)
    files: list[tuple[str, BinaryIO, int]] = []
    try:
        keys = folder / KEYS_FILE
        with contextlib.suppress(FileNotFoundError):
            keys_handle: BinaryIO = keys.open("rb")
            files.append((KEYS_FILE, keys_handle, os.fstat(keys_handle.fileno()).st_size))
        if pointer.version is not None:
            version_dir = folder / BASE_FOLDER / pointer.version
            for path in sorted(version_dir.iterdir()):
                if path.is_file():
                    handle: BinaryIO = path.open("rb")
                    name = f"{BASE_FOLDER}/{pointer.version}/{path.name}"
                    files.append((name, handle, os.fstat(handle.fileno()).st_size))
    except OSError:
        for _, handle, _ in files:
            handle.close()
        raise
    return BaseFiles(pointer.version, pointer.seq, pointer.collection, files)


@dataclass(frozen=True)
class ReceivedBase:
    """A base unpacked on the follower: its version folder (None: no base) and the keys."""

    version_dir: Path | None
    keys: KeyTable


def unpack_base(stream: BinaryIO, into: Path, version: str | None) -> ReceivedBase:
    """Unpack the tar ``stream`` (:meth:`BaseFiles.chunks`) into the folder ``into``;
    ``ValueError`` for a member outside ``keys.json`` and ``base/<version>/``, or a stream
    that is not such a tar."""
    into.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for member in archive:
                path = PurePosixPath(member.name)
                allowed = path == PurePosixPath(KEYS_FILE) or (
                    version is not None
                    and len(path.parts) == 3
                    and path.parts[:2] == (BASE_FOLDER, version)
                )
                if not member.isfile() or not allowed or ".." in path.parts:
                    raise ValueError(f"unexpected member {member.name!r} in a base stream")
                source = archive.extractfile(member)
                assert source is not None
                target = into.joinpath(*path.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    while data := source.read(CHUNK_BYTES):
                        out.write(data)
    except tarfile.TarError as exc:
        raise ValueError(f"not a base stream: {exc}") from None
    version_dir = None if version is None else into / BASE_FOLDER / version
    if version_dir is not None and not version_dir.is_dir():
        raise ValueError(f"the base stream holds no files of version {version}")
    return ReceivedBase(version_dir, read_keys(into))


def unpack_bytes(data: bytes, into: Path, version: str | None) -> ReceivedBase:
    """:func:`unpack_base` of a stream held in memory."""
    return unpack_base(io.BytesIO(data), into, version)
