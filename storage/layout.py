"""The names a bundle folder is laid out with, apart from the code that reads it::

    <bundles_root>/<bundle>/CURRENT               the version served (one line)
    <bundles_root>/<bundle>/<version>/manifest.json
                                     <collection>.faiss        (+ .ivfdata: on-disk lists)
                                     <collection>.ids.jsonl
                                     <collection>.vectors.npy
                                     <collection>.columns.npz
                                     <collection>.thumbnails.bin / .npy

Importing this costs nothing (no numpy, no faiss): a process that only checks paths, such as
the service's supervisor, reads the names from here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

MANIFEST_FILE: Final = "manifest.json"
# A published version folder: everyone may read it (the service may run as another user), only
# its writer may change it.
PUBLISHED_VERSION_MODE: Final = 0o755
CURRENT_FILE: Final = "CURRENT"
VERSION_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
COLLECTION_PATTERN: Final = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def new_version_name(now: datetime | None = None) -> str:
    """A sortable UTC timestamp, e.g. ``20261122T101500123456Z``."""
    moment = now or datetime.now(UTC)
    return moment.strftime("%Y%m%dT%H%M%S%fZ")


def index_file(collection: str) -> str:
    """The faiss index file of ``collection``."""
    return f"{collection}.faiss"


def ids_file(collection: str) -> str:
    """The ids-and-metadata file of ``collection`` (JSON lines)."""
    return f"{collection}.ids.jsonl"


def vectors_file(collection: str) -> str:
    """The stored vectors of ``collection`` (float32 ``.npy``)."""
    return f"{collection}.vectors.npy"


def columns_file(collection: str) -> str:
    """The typed metadata columns of ``collection`` (``.npz``)."""
    return f"{collection}.columns.npz"


def thumbnail_files(collection: str) -> tuple[str, str]:
    """The (blob, offsets) file names of ``collection``'s thumbnails."""
    return f"{collection}.thumbnails.bin", f"{collection}.thumbnails.npy"
