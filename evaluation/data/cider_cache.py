"""A split's CIDEr-D matrix (captions × images), computed once and cached on disk.

The matrix (:class:`evaluation.metrics.cider.CiderDMatrix` of the split's captions against its
images' reference captions) is stored as float32 ``.npy`` (mmap-able; 25,000 × 5,000 = 500 MB;
the float32 rounding is below 1e-6 for scores under 8) with a JSON sidecar holding the captions
file's sha256 and the :data:`SETTINGS`; :func:`load_or_build_cider` reuses a cache whose hash and
settings match and rebuilds otherwise. The cache folder is ``--cider-cache``, else ``<data>/cider``
when the data folder is meant to be written, else ``artifacts/cache/cider``.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from evaluation.metrics.cider import MAX_ORDER, SCALE, SIGMA, split_matrix
from formats.hashing import sha256_file
from formats.karpathy import read_captions
from formats.layout import captions_path

logger = logging.getLogger(__name__)

CACHE_FORMAT = 1
FALLBACK_CACHE_DIR = Path("artifacts/cache/cider")

SETTINGS: Mapping[str, object] = {
    "format": CACHE_FORMAT,
    "text": "raw, lower-cased, white-space tokens",
    "max_order": MAX_ORDER,
    "sigma": SIGMA,
    "scale": SCALE,
    "idf": "log(#images) - log(max(1, df)); df over the split's image reference sets",
    "length": "bigram count (reference code)",
    "self_reference": "a caption's own image keeps it among its references (Biten et al.)",
}
"""What a cached matrix was computed with; a cache with other settings is rebuilt."""


def default_cache_dir(data_dir: Path) -> Path:
    """``<data>/cider`` (next to the data) when the data folder is meant to be written — its
    owner-write permission bit is set and this process may write it — else
    ``artifacts/cache/cider`` (the shared COCO data is ``r-x``; the permission bit is read
    because ``os.access`` says yes to root whatever the mode)."""
    beside = data_dir / "cider"
    folder = beside if beside.is_dir() else data_dir
    writable = folder.is_dir() and folder.stat().st_mode & stat.S_IWUSR
    if writable and os.access(folder, os.W_OK):
        return beside
    return FALLBACK_CACHE_DIR


@dataclass(frozen=True)
class CachedCider:
    """A split's CIDEr-D matrix and where it came from.

    Attributes:
        scores: float32 ``[captions, images]`` (read-only memory map when loaded from the cache):
            ``scores[c, i]`` = CIDEr-D of caption row ``c`` against image row ``i``.
        path: the ``.npy`` file.
        sha256: the captions file's sha256 the matrix belongs to.
        built: whether this call computed it (else it was read from the cache).
        build_seconds: the wall time of the computation (from the sidecar when cached).
    """

    scores: npt.NDArray[np.float32]
    path: Path
    sha256: str
    built: bool
    build_seconds: float

    def as_report(self) -> dict[str, object]:
        """The report's ``cider`` entry."""
        return {
            "cache_file": str(self.path),
            "captions_sha256": self.sha256,
            "built": self.built,
            "build_seconds": round(self.build_seconds, 1),
            "shape": list(self.scores.shape),
            "dtype": str(self.scores.dtype),
            "settings": dict(SETTINGS),
        }


def cache_paths(cache_dir: Path, split: str, sha256: str) -> tuple[Path, Path]:
    """The matrix and sidecar files of a split's captions file hash."""
    stem = f"cider_{split}_{sha256[:16]}"
    return cache_dir / f"{stem}.npy", cache_dir / f"{stem}.json"


def load_or_build_cider(
    data_dir: Path,
    split: str,
    cache_dir: Path | None = None,
    *,
    show_progress: bool = True,
    rebuild: bool = False,
) -> CachedCider:
    """The split's CIDEr-D matrix: from the cache when its sidecar names the captions file's
    sha256 and :data:`SETTINGS`, else computed (float64 blocks, stored float32) and cached.

    Args:
        data_dir: the data folder (``coco-karpathy-captions/captions_<split>.csv``).
        split: the split name.
        cache_dir: where the cache lives; :func:`default_cache_dir` when ``None``.
        show_progress: tqdm bar while computing.
        rebuild: compute even when a matching cache exists.
    """
    source = captions_path(data_dir, split)
    sha256 = sha256_file(source)
    folder = cache_dir if cache_dir is not None else default_cache_dir(data_dir)
    matrix_path, meta_path = cache_paths(folder, split, sha256)
    if not rebuild and matrix_path.is_file() and meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("captions_sha256") == sha256 and meta.get("settings") == dict(SETTINGS):
            scores = np.load(matrix_path, mmap_mode="r")
            logger.info("CIDEr-D: cached matrix %s %s", matrix_path, scores.shape)
            return CachedCider(scores, matrix_path, sha256, False, float(meta["build_seconds"]))
        logger.info("CIDEr-D: cache %s does not match; rebuilding", meta_path)
    started = time.perf_counter()
    computation = split_matrix(read_captions(source))

    def progress(starts: Iterable[int]) -> Iterable[int]:
        return tqdm(starts, desc="CIDEr-D rows", unit="block", disable=not show_progress)

    scores = computation.full(progress=progress).astype(np.float32, copy=False)
    seconds = time.perf_counter() - started
    folder.mkdir(parents=True, exist_ok=True)
    partial = matrix_path.with_suffix(".partial.npy")
    np.save(partial, scores)
    partial.replace(matrix_path)
    meta = {
        "captions_file": str(source),
        "captions_sha256": sha256,
        "split": split,
        "shape": list(scores.shape),
        "dtype": "float32",
        "settings": dict(SETTINGS),
        "build_seconds": seconds,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    logger.info("CIDEr-D: built %s in %.1f s → %s", scores.shape, seconds, matrix_path)
    return CachedCider(scores, matrix_path, sha256, True, seconds)
