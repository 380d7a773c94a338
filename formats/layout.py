"""Where each data file lies under a data folder (the real COCO data and the scenes corpus share
one layout)::

    <data>/coco-karpathy-captions/captions_<split>.csv   Karpathy captions
    <data>/images/<split>/<filename>                      image files (the scenes corpus; COCO
                                                          images come from a user-given folder)
    <data>/cxc/<sts|sis|sits>_<split>.csv                  CxC aggregated ratings
    <data>/bison/bison_<split>.csv                         BISON rows (the scenes corpus)
    <data>/bison/bison_shared.csv                          BISON rows (the real COCO file)
    <data>/manifest.json                                   the scenes corpus's manifest
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

CAPTIONS_DIR: Final = "coco-karpathy-captions"
IMAGES_DIR: Final = "images"
CXC_DIR: Final = "cxc"
BISON_DIR: Final = "bison"
BISON_SHARED_FILE: Final = "bison_shared.csv"
MANIFEST_FILE: Final = "manifest.json"


def captions_path(data_dir: Path, split: str) -> Path:
    """``<data_dir>/coco-karpathy-captions/captions_<split>.csv``."""
    return Path(data_dir) / CAPTIONS_DIR / f"captions_{split}.csv"


def images_dir(data_dir: Path, split: str) -> Path:
    """``<data_dir>/images/<split>``, the folder of the split's image files."""
    return Path(data_dir) / IMAGES_DIR / split


def cxc_path(data_dir: Path, task: str, split: str) -> Path:
    """``<data_dir>/cxc/<task>_<split>.csv`` for task ``sts``, ``sis`` or ``sits``."""
    return Path(data_dir) / CXC_DIR / f"{task}_{split}.csv"


def bison_path(data_dir: Path, split: str) -> Path:
    """``<data_dir>/bison/bison_<split>.csv`` (the scenes corpus's file name)."""
    return Path(data_dir) / BISON_DIR / f"bison_{split}.csv"


def default_bison_path(data_dir: Path, split: str) -> Path | None:
    """The BISON file of a split when none is named: ``bison_<split>.csv`` if present, else the
    real COCO file ``bison_shared.csv`` if present, else ``None``."""
    for candidate in (bison_path(data_dir, split), Path(data_dir) / BISON_DIR / BISON_SHARED_FILE):
        if candidate.is_file():
            return candidate
    return None


def manifest_path(data_dir: Path) -> Path:
    """``<data_dir>/manifest.json`` (the scenes generator lists the sha256 of every file there)."""
    return Path(data_dir) / MANIFEST_FILE
