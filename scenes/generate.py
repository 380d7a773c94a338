"""The whole pipeline: images and captions per split, then judgments, BISON rows and files.

Determinism: every image draws from streams seeded by ``(seed, split, index)`` and every
split-level stage from ``(seed, split, stage)``; workers only change who computes an image,
never what it is. Same configuration → byte-identical files (the manifest holds no time).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tqdm import tqdm

from formats import layout
from formats.bison import write_bison
from formats.cxc import RatingKind
from formats.hashing import sha256_file
from scenes import writer
from scenes.bison import build_bison
from scenes.captions import CAPTIONS_PER_IMAGE
from scenes.corpus import ImageRecord, ImageTask, SplitCorpus, make_image
from scenes.ids import IMAGES_PER_SPLIT_LIMIT, SPLITS
from scenes.judgments import build_judgments, search_split

GENERATOR_NAME = "crisscross-scenes"
GENERATOR_VERSION = "1.0"
DEFAULT_SIZES = MappingProxyType({"train": 20_000, "val": 5_000, "test": 5_000})
DEFAULT_JUDGMENT_SPLITS = ("val", "test")
MIN_IMAGE_SIZE = 32
LOG = logging.getLogger(__name__)
WORKER_CHUNK = 64


class GenerationError(ValueError):
    """The generation cannot start (bad configuration or a non-empty output folder)."""


@dataclass(frozen=True)
class GenerationConfig:
    """What to generate.

    Attributes:
        out: output folder (created; must be empty or absent unless ``overwrite``).
        seed: the single seed everything derives from.
        sizes: images per split (0 skips a split); five captions each.
        image_size: side of the square PNGs, in pixels.
        workers: processes rendering images (1: in this process).
        judgment_splits: splits that get CxC judgments and BISON rows. As with the real data
            (CxC and BISON cover validation and test only) train gets none by default; its
            exhaustive caption–caption search grows with the square of its size.
        progress: show tqdm progress bars.
        overwrite: replace the generated files of a previous run in ``out``.
    """

    out: Path
    seed: int = 0
    sizes: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_SIZES))
    image_size: int = 96
    workers: int = 2
    judgment_splits: tuple[str, ...] = DEFAULT_JUDGMENT_SPLITS
    progress: bool = True
    overwrite: bool = False

    def validate(self) -> None:
        """Raise :class:`GenerationError` for an unusable configuration."""
        unknown = (set(self.sizes) | set(self.judgment_splits)) - set(SPLITS)
        if unknown:
            raise GenerationError(f"unknown split(s) {sorted(unknown)}; use {SPLITS}")
        for split, size in self.sizes.items():
            if not 0 <= size <= IMAGES_PER_SPLIT_LIMIT:
                raise GenerationError(f"{split}: size {size} out of range")
            if split in self.judgment_splits and size == 1:
                raise GenerationError(f"{split}: judgments need at least 2 images")
        if self.image_size < MIN_IMAGE_SIZE:
            raise GenerationError(f"image size must be at least {MIN_IMAGE_SIZE} pixels")
        if self.workers < 1:
            raise GenerationError("workers must be at least 1")


def _generated_paths(root: Path) -> list[Path]:
    paths = [
        root / layout.CAPTIONS_DIR,
        root / layout.IMAGES_DIR,
        root / layout.CXC_DIR,
        root / layout.BISON_DIR,
        layout.manifest_path(root),
    ]
    return paths + sorted(root.glob("scenes_*.jsonl"))


def _prepare(config: GenerationConfig) -> None:
    root = config.out
    if root.exists() and any(root.iterdir()):
        if not config.overwrite:
            raise GenerationError(f"{root} is not empty (pass overwrite to replace a corpus)")
        for path in _generated_paths(root):
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
    root.mkdir(parents=True, exist_ok=True)


def _split_tasks(config: GenerationConfig, split: str) -> list[ImageTask]:
    images_dir = layout.images_dir(config.out, split)
    images_dir.mkdir(parents=True, exist_ok=True)
    return [
        ImageTask(config.seed, split, index, config.image_size, images_dir)
        for index in range(config.sizes[split])
    ]


def _split_corpus(
    config: GenerationConfig, split: str, records: Iterator[ImageRecord], total: int
) -> SplitCorpus:
    started = time.perf_counter()
    bar = tqdm(records, total=total, desc=f"{split}: images", disable=not config.progress)
    images = tuple(bar)
    LOG.info("%s: %d images in %.1f s", split, len(images), time.perf_counter() - started)
    return SplitCorpus(split=split, seed=config.seed, images=images)


def _write_split(
    config: GenerationConfig, corpus: SplitCorpus, files: dict[str, str]
) -> dict[str, int]:
    """Write one split's files; record their hashes in ``files``; return row counts."""
    root, split = config.out, corpus.split
    for image in corpus.images:
        path = layout.images_dir(root, split) / image.filename
        files[path.relative_to(root).as_posix()] = image.png_sha256
    started = time.perf_counter()
    written = [layout.captions_path(root, split), writer.ground_truth_path(root, split)]
    writer.write_split_captions(written[0], corpus)
    writer.write_ground_truth(written[1], corpus, config.image_size)
    LOG.info("%s: captions and ground truth in %.1f s", split, time.perf_counter() - started)
    counts = {"images": len(corpus.images), "captions": len(corpus.captions)}
    if split in config.judgment_splits:
        started = time.perf_counter()
        search = search_split(corpus, threads=config.workers, progress=config.progress)
        LOG.info("%s: exhaustive searches in %.1f s", split, time.perf_counter() - started)
        started = time.perf_counter()
        judgments = build_judgments(corpus, search, progress=config.progress)
        bison_rows = build_bison(corpus, search, progress=config.progress)
        LOG.info("%s: judgments and BISON in %.1f s", split, time.perf_counter() - started)
        tables = {
            RatingKind.STS: judgments.sts,
            RatingKind.SIS: judgments.sis,
            RatingKind.SITS: judgments.sits,
        }
        for kind, ratings in tables.items():
            path = kind.path(root, split)
            writer.write_judgments(path, kind, ratings)
            written.append(path)
            counts[kind.value] = len(ratings)
        path = layout.bison_path(root, split)
        write_bison(path, bison_rows)
        written.append(path)
        counts["bison"] = len(bison_rows)
    for path in written:
        files[path.relative_to(root).as_posix()] = sha256_file(path)
    return counts


def generate_scenes(config: GenerationConfig) -> dict[str, Any]:
    """Generate the corpus described by ``config`` into ``config.out``; return the manifest
    (also written to ``<out>/manifest.json``).

    With ``workers > 1`` images are rendered by "spawn" worker processes, so, as with any
    multiprocessing code, a calling script must guard its entry point with
    ``if __name__ == "__main__":``.

    Raises:
        GenerationError: bad configuration, or a non-empty ``out`` without ``overwrite``.
    """
    config.validate()
    _prepare(config)
    splits = [split for split in SPLITS if config.sizes.get(split, 0) > 0]
    files: dict[str, str] = {}
    split_counts: dict[str, dict[str, int]] = {}
    # Splits with judgments first: while this process searches and writes one split, the
    # workers render the images of the next ones (every image is queued up front).
    order = sorted(splits, key=lambda split: split not in config.judgment_splits)
    tasks = {split: _split_tasks(config, split) for split in order}
    records: dict[str, Iterator[ImageRecord]]
    with contextlib.ExitStack() as stack:
        if config.workers > 1:
            pool = stack.enter_context(multiprocessing.get_context("spawn").Pool(config.workers))
            records = {s: pool.imap(make_image, tasks[s], WORKER_CHUNK) for s in order}
        else:
            records = {split: map(make_image, tasks[split]) for split in order}
        for split in order:
            corpus = _split_corpus(config, split, records[split], len(tasks[split]))
            split_counts[split] = _write_split(config, corpus, files)
    manifest = {
        "generator": GENERATOR_NAME,
        "version": GENERATOR_VERSION,
        "seed": config.seed,
        "image_size": config.image_size,
        "captions_per_image": CAPTIONS_PER_IMAGE,
        "judgment_splits": [split for split in splits if split in config.judgment_splits],
        "splits": {split: split_counts[split] for split in splits},
        "files": dict(sorted(files.items())),
    }
    writer.write_manifest(layout.manifest_path(config.out), manifest)
    return manifest
