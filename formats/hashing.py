"""Content hashes of files, streamed so that large files (ONNX weights) never sit in memory."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

# 1 MiB reads: few enough syscalls to be negligible, small enough to stay cache-friendly.
_READ_CHUNK_BYTES = 1 << 20


def sha256_bytes(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 lower-case hex characters."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """Return the SHA-256 of a file's bytes as 64 lower-case hex characters.

    The file is read in 1 MiB chunks, so memory use is constant whatever its size.
    Raises ``FileNotFoundError`` / ``IsADirectoryError`` like ``open`` does.
    """
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(_READ_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_files(directory: Path, filenames: Iterable[str]) -> dict[str, str]:
    """Hash each named file inside ``directory``: ``{filename: sha256 hex}``, sorted by name."""
    return {name: sha256_file(Path(directory) / name) for name in sorted(filenames)}
