"""Reading one split of a Karpathy-format corpus (captions CSV + image files) for training.

Layout (the scenes corpus and the real COCO data share it)::

    <data>/coco-karpathy-captions/captions_<split>.csv   sentid, cxc_caption_key, image_id,
                                                          filename, karpathy_image_index,
                                                          caption_index, text, raw
    <data>/images/<split>/<filename>                      the image files
    <data>/manifest.json                                  (scenes) sha256 of every file

The captions file is read by :func:`formats.karpathy.read_captions` (malformed rows raise its
``FormatError`` with file and line); paths follow :mod:`formats.layout`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
from PIL import Image
from tqdm import tqdm

from encoders.image_decode import ImageDecodeError, ImageLimits, decode_image
from encoders.image_preprocess import PixelBatch, preprocess_images
from encoders.variant import ImageTower
from formats.hashing import sha256_file
from formats.karpathy import read_captions
from formats.layout import captions_path, images_dir, manifest_path

# Generous for 96 x 96 PNGs, still a guard against a stray huge file in a corpus folder.
_IMAGE_LIMITS: Final = ImageLimits(max_bytes=16 << 20, max_pixels=16 << 20)
# Images decoded and preprocessed per chunk: bounds the PIL images alive at once.
_PIXEL_CHUNK: Final = 512


class CorpusError(ValueError):
    """A corpus folder is missing files or holds malformed captions."""


@dataclass(frozen=True)
class CaptionedImages:
    """One split: its images and their captions, in the CSV's order.

    ``filenames[i]`` is image ``i`` (order of first appearance in the CSV); ``captions[i]`` its
    caption texts (column ``text``) in CSV order. The flat view ``caption_texts`` /
    ``caption_keys`` / ``caption_image`` lists every caption row once, in CSV order, with
    ``caption_image[k]`` the index of the image of caption ``k`` (int64 ``[n_captions]``).
    """

    split: str
    filenames: tuple[str, ...]
    captions: tuple[tuple[str, ...], ...]
    caption_texts: tuple[str, ...]
    caption_keys: tuple[str, ...]
    caption_image: npt.NDArray[np.int64]

    @property
    def image_count(self) -> int:
        """Number of images."""
        return len(self.filenames)

    @property
    def caption_count(self) -> int:
        """Number of caption rows."""
        return len(self.caption_texts)

    def caption_offsets(self) -> npt.NDArray[np.int64]:
        """int64 ``[n_images + 1]``: the flat rows of image ``i``'s captions are
        ``offsets[i]:offsets[i + 1]`` (captions are grouped by image, see ``read_split``)."""
        counts = np.array([len(texts) for texts in self.captions], dtype=np.int64)
        offsets: npt.NDArray[np.int64] = np.concatenate(
            [np.zeros(1, dtype=np.int64), np.cumsum(counts)]
        )
        return offsets

    def head(self, images: int) -> CaptionedImages:
        """The first ``images`` images and their captions (the whole split when it has fewer)."""
        if images >= self.image_count:
            return self
        end = int(self.caption_offsets()[images])
        return CaptionedImages(
            split=self.split,
            filenames=self.filenames[:images],
            captions=self.captions[:images],
            caption_texts=self.caption_texts[:end],
            caption_keys=self.caption_keys[:end],
            caption_image=self.caption_image[:end].copy(),
        )


def read_split(data_dir: Path, split: str) -> CaptionedImages:
    """Read ``captions_<split>.csv``; raises ``CorpusError`` when it is missing, empty or an
    image's captions are not contiguous, ``formats.errors.FormatError`` when a row is malformed.

    Every image's captions must be contiguous rows (the Karpathy files and the scenes corpus are
    written that way), so ``caption_offsets`` can address them without an index; the reader
    refuses a file name that is not a plain name (it is joined to the images folder).
    """
    path = captions_path(data_dir, split)
    if not path.is_file():
        raise CorpusError(f"no captions file for split {split!r}: {path}")
    filenames: list[str] = []
    captions: list[list[str]] = []
    texts: list[str] = []
    keys: list[str] = []
    image_of_caption: list[int] = []
    seen: set[str] = set()
    for record in read_captions(path):
        filename = record.filename
        if not filenames or filenames[-1] != filename:
            if filename in seen:
                raise CorpusError(
                    f"{path} data row {record.row}: the captions of {filename} are not contiguous"
                )
            seen.add(filename)
            filenames.append(filename)
            captions.append([])
        captions[-1].append(record.text)
        texts.append(record.text)
        keys.append(record.key)
        image_of_caption.append(len(filenames) - 1)
    if not filenames:
        raise CorpusError(f"{path} holds no captions")
    return CaptionedImages(
        split=split,
        filenames=tuple(filenames),
        captions=tuple(tuple(group) for group in captions),
        caption_texts=tuple(texts),
        caption_keys=tuple(keys),
        caption_image=np.asarray(image_of_caption, dtype=np.int64),
    )


def load_images(data_dir: Path, split: str, filenames: Sequence[str]) -> list[Image.Image]:
    """Decode ``filenames`` of ``split`` into RGB images, as the service decodes uploads.

    Raises ``CorpusError`` for a missing or undecodable file.
    """
    folder = images_dir(data_dir, split)
    return [_decode(folder / name) for name in filenames]


def load_pixels(
    data_dir: Path,
    split: str,
    filenames: Sequence[str],
    tower: ImageTower,
    *,
    progress: bool = False,
) -> PixelBatch:
    """Decode and preprocess the split's images exactly as serving does.

    Returns float32 ``[len(filenames), 3, tower.height, tower.width]``, row ``i`` from
    ``filenames[i]``, made by ``encoders.image_decode.decode_image`` then
    ``encoders.image_preprocess.preprocess_images`` (so training, parity and serving share one
    preprocessing). Raises ``CorpusError`` for a missing or undecodable file.
    """
    folder = images_dir(data_dir, split)
    height, width = tower.input_size
    pixels = np.empty((len(filenames), 3, height, width), dtype=np.float32)
    with tqdm(
        total=len(filenames), desc=f"images {split}", unit="img", disable=not progress
    ) as bar:
        for start in range(0, len(filenames), _PIXEL_CHUNK):
            chunk = filenames[start : start + _PIXEL_CHUNK]
            images = [_decode(folder / name) for name in chunk]
            pixels[start : start + len(chunk)] = preprocess_images(images, tower)
            bar.update(len(chunk))
    return pixels


def channel_statistics(
    data_dir: Path, split: str, filenames: Sequence[str], tower: ImageTower
) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Per-channel (R, G, B) mean and standard deviation of 0-1 pixel values, each rounded to 4
    decimals, over ``filenames`` resized and cropped per ``tower`` (its own mean/std unused).

    Computed in float64 over a deterministic list of files, so the same corpus always gives the
    same values (they are recorded in ``variant.json``).
    """
    identity = tower.model_copy(update={"mean": (0.0, 0.0, 0.0), "std": (1.0, 1.0, 1.0)})
    levels = load_pixels(data_dir, split, filenames, identity).astype(np.float64)
    mean = levels.mean(axis=(0, 2, 3))
    std = levels.std(axis=(0, 2, 3))
    rounded_mean = tuple(round(float(value), 4) for value in mean)
    # A constant channel would give std 0, which ImageTower refuses and division cannot use.
    rounded_std = tuple(max(round(float(value), 4), 1e-4) for value in std)
    return (
        (rounded_mean[0], rounded_mean[1], rounded_mean[2]),
        (rounded_std[0], rounded_std[1], rounded_std[2]),
    )


def data_fingerprint(data_dir: Path, split: str) -> str:
    """A label naming the training data by content, independent of where it lies.

    ``manifest.json sha256 <hex>`` when the corpus has a manifest (the scenes generator writes
    one listing the hash of every file), else ``captions_<split>.csv sha256 <hex>``.
    """
    manifest = manifest_path(data_dir)
    if manifest.is_file():
        return f"{manifest.name} sha256 {sha256_file(manifest)}"
    path = captions_path(data_dir, split)
    return f"{path.name} sha256 {sha256_file(path)}"


def _decode(path: Path) -> Image.Image:
    """One image file → RGB ``PIL.Image`` via ``decode_image``; ``CorpusError`` on failure."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CorpusError(f"cannot read image {path}: {error}") from error
    try:
        return decode_image(data, _IMAGE_LIMITS)
    except ImageDecodeError as error:
        raise CorpusError(f"cannot decode image {path}: {error}") from error
