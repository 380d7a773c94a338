"""One generated image with its captions, and a split as a list of them.

:func:`make_image` is the unit of parallel work: it derives the image's own random streams
from ``(seed, split, index)`` alone, so the result never depends on how many workers ran or
in which order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import numpy.typing as npt

from formats.hashing import sha256_bytes
from formats.ids import scenes_caption_key, scenes_image_filename
from scenes.atoms import AtomSet, caption_atoms, scene_atoms
from scenes.captions import Caption, generate_captions
from scenes.facts import Fact
from scenes.ids import SPLIT_CODES, image_id, sentid
from scenes.render import encode_png, render_scene
from scenes.scene import Scene, sample_scene

# Purposes of the seeded streams (the third entropy word): per-image streams and per-split
# stage streams can never coincide.
IMAGE_STREAM = 0
STAGE_STREAM = 1
SCENE_PURPOSE = 0
RENDER_PURPOSE = 1


def image_rng(seed: int, split: str, index: int, purpose: int) -> np.random.Generator:
    """The random stream of one image for one purpose (scene + captions, or pixels)."""
    return np.random.default_rng([seed, SPLIT_CODES[split], IMAGE_STREAM, index, purpose])


def stage_rng(seed: int, split: str, stage: int) -> np.random.Generator:
    """The random stream of one split-level stage (judgment sampling, BISON, …)."""
    return np.random.default_rng([seed, SPLIT_CODES[split], STAGE_STREAM, stage])


@dataclass(frozen=True)
class ImageRecord:
    """A generated image: its scene, five captions and the sha256 of its PNG file."""

    split: str
    index: int
    scene: Scene
    captions: tuple[Caption, ...]
    png_sha256: str

    @property
    def image_id(self) -> int:
        """See :mod:`ids`."""
        return image_id(self.split, self.index)

    @property
    def filename(self) -> str:
        """The PNG's file name (also the CxC image key)."""
        return scenes_image_filename(self.split, self.image_id)

    def sentid(self, caption_index: int) -> int:
        """The sentence id of caption ``caption_index``."""
        return sentid(self.image_id, caption_index)

    def caption_key(self, caption_index: int) -> str:
        """The CxC key of caption ``caption_index``."""
        return scenes_caption_key(self.split, self.sentid(caption_index))


@dataclass(frozen=True)
class ImageTask:
    """Everything a worker needs to make one image (picklable)."""

    seed: int
    split: str
    index: int
    image_size: int
    images_dir: Path


def make_image(task: ImageTask) -> ImageRecord:
    """Sample, caption, render and write one image; return its record."""
    rng = image_rng(task.seed, task.split, task.index, SCENE_PURPOSE)
    scene = sample_scene(rng)
    captions = generate_captions(scene, rng)
    pixels = render_scene(
        scene, task.image_size, image_rng(task.seed, task.split, task.index, RENDER_PURPOSE)
    )
    data = encode_png(pixels)
    filename = scenes_image_filename(task.split, image_id(task.split, task.index))
    (task.images_dir / filename).write_bytes(data)
    return ImageRecord(
        split=task.split,
        index=task.index,
        scene=scene,
        captions=captions,
        png_sha256=sha256_bytes(data),
    )


@dataclass(frozen=True)
class SplitCorpus:
    """A split's images in row order; captions are flattened image by image (row order of
    the captions CSV)."""

    split: str
    seed: int
    images: tuple[ImageRecord, ...]

    @cached_property
    def captions(self) -> tuple[Caption, ...]:
        """All captions in row order."""
        return tuple(caption for image in self.images for caption in image.captions)

    @cached_property
    def caption_keys(self) -> tuple[str, ...]:
        """CxC keys of :attr:`captions`."""
        return tuple(
            image.caption_key(k) for image in self.images for k in range(len(image.captions))
        )

    @cached_property
    def caption_image(self) -> npt.NDArray[np.int64]:
        """``[n_captions]`` int64: the image row of every caption."""
        return np.repeat(
            np.arange(len(self.images), dtype=np.int64),
            [len(image.captions) for image in self.images],
        )

    @cached_property
    def image_captions(self) -> tuple[tuple[int, ...], ...]:
        """For every image row, the caption rows of its captions."""
        rows = []
        start = 0
        for image in self.images:
            rows.append(tuple(range(start, start + len(image.captions))))
            start += len(image.captions)
        return tuple(rows)

    @cached_property
    def image_keys(self) -> tuple[str, ...]:
        """CxC image keys (file names) in row order."""
        return tuple(image.filename for image in self.images)

    @cached_property
    def scenes(self) -> tuple[Scene, ...]:
        """Scenes in row order."""
        return tuple(image.scene for image in self.images)

    @cached_property
    def caption_fact_sets(self) -> tuple[frozenset[Fact], ...]:
        """The meaning of every caption: its set of facts (row order)."""
        return tuple(frozenset(caption.facts) for caption in self.captions)

    @cached_property
    def caption_atom_sets(self) -> tuple[AtomSet, ...]:
        """Atoms of every caption (row order)."""
        return tuple(caption_atoms(caption.facts) for caption in self.captions)

    @cached_property
    def scene_atom_sets(self) -> tuple[AtomSet, ...]:
        """Atoms of every scene (row order)."""
        return tuple(scene_atoms(scene) for scene in self.scenes)
