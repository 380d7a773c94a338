"""The embedding job: texts or image files → vectors in batches, with a progress bar.

Image batches are decoded in a thread pool while the previous batch runs through the encoder
(Pillow's decoders and onnxruntime both release the GIL), so decoding hides behind inference.
:func:`embed_image_files` fails on the first unusable file; :func:`embed_images` embeds the
files it can and reports each one it cannot.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
from PIL.Image import Image
from tqdm import tqdm

from encoders.image_decode import ImageDecodeError, ImageLimits, decode_image
from encoders.protocols import ImageEncoderProtocol, TextEncoderProtocol

# An index build reads the operator's own files: generous limits, but still no bombs.
BUILD_IMAGE_LIMITS = ImageLimits(max_bytes=64 << 20, max_pixels=100_000_000)


def embed_texts(
    encoder: TextEncoderProtocol,
    texts: Sequence[str],
    *,
    batch_size: int = 256,
    progress: bool = True,
    description: str = "embedding captions",
) -> np.ndarray:
    """Embed ``texts`` in order; returns float32 ``[len(texts), encoder.dim]``, L2-normalised."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    output = np.empty((len(texts), encoder.dim), dtype=np.float32)
    with tqdm(total=len(texts), desc=description, unit="text", disable=not progress) as bar:
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            output[start : start + len(batch)] = encoder.encode_texts(batch)
            bar.update(len(batch))
    return output


_Decoded = TypeVar("_Decoded")

DecodeFailure = ImageDecodeError | OSError
"""Why a file could not be turned into an image."""


def _decode_batch(paths: Sequence[Path], limits: ImageLimits) -> list[Image]:
    return [decode_image(path.read_bytes(), limits) for path in paths]


def _decode_batch_tolerant(
    paths: Sequence[Path], limits: ImageLimits
) -> list[Image | DecodeFailure]:
    decoded: list[Image | DecodeFailure] = []
    for path in paths:
        try:
            decoded.append(decode_image(path.read_bytes(), limits))
        except (ImageDecodeError, OSError) as error:
            decoded.append(error)
    return decoded


def _decoded_batches(
    paths: Sequence[Path],
    batch_size: int,
    limits: ImageLimits,
    workers: int,
    decode: Callable[[Sequence[Path], ImageLimits], _Decoded],
) -> Generator[_Decoded, None, None]:
    """Yield decoded batches in order, keeping up to ``workers`` batches decoding ahead.

    When the consumer stops early (an error, ``close()``), batches not yet started are
    cancelled and those decoding are awaited before the pool closes.
    """
    starts = range(0, len(paths), batch_size)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="decode") as pool:
        pending: list[Future[_Decoded]] = []
        try:
            for start in starts:
                pending.append(pool.submit(decode, paths[start : start + batch_size], limits))
                if len(pending) > workers:
                    yield pending.pop(0).result()
            while pending:
                yield pending.pop(0).result()
        finally:
            for future in pending:
                future.cancel()


def embed_image_files(
    encoder: ImageEncoderProtocol,
    paths: Sequence[Path],
    *,
    batch_size: int = 64,
    decode_workers: int = 2,
    limits: ImageLimits = BUILD_IMAGE_LIMITS,
    progress: bool = True,
    description: str = "embedding images",
) -> np.ndarray:
    """Embed image files in order; returns float32 ``[len(paths), encoder.dim]``, L2-normalised.

    Raises ``encoders.image_decode.ImageDecodeError`` (naming no path) or ``OSError`` for a file
    that cannot be used; the caller reports which.
    """
    if batch_size < 1 or decode_workers < 1:
        raise ValueError("batch_size and decode_workers must be at least 1")
    output = np.empty((len(paths), encoder.dim), dtype=np.float32)
    done = 0
    with tqdm(total=len(paths), desc=description, unit="image", disable=not progress) as bar:
        for images in _decoded_batches(paths, batch_size, limits, decode_workers, _decode_batch):
            output[done : done + len(images)] = encoder.encode_images(images)
            done += len(images)
            bar.update(len(images))
    return output


@dataclass(frozen=True)
class ImageEmbedding:
    """What :func:`embed_images` made of a list of files.

    ``vectors`` row ``r`` embeds ``paths[embedded[r]]``; ``failures`` holds ``(position, error)``
    for every file that could not be decoded; ``stopped`` tells that the job stopped at the
    first failing batch (files after it were neither embedded nor tried).
    """

    vectors: np.ndarray
    embedded: list[int]
    failures: list[tuple[int, DecodeFailure]]
    stopped: bool = False


def embed_images(
    encoder: ImageEncoderProtocol,
    paths: Sequence[Path],
    *,
    batch_size: int = 64,
    decode_workers: int = 2,
    limits: ImageLimits = BUILD_IMAGE_LIMITS,
    stop_at_failure: bool = False,
    progress: bool = True,
    description: str = "embedding images",
) -> ImageEmbedding:
    """Embed the files that decode, in order, and report each that does not.

    With ``stop_at_failure`` the job ends after the first batch holding an undecodable file
    (its other files are still embedded, later batches are not).
    """
    if batch_size < 1 or decode_workers < 1:
        raise ValueError("batch_size and decode_workers must be at least 1")
    output = np.empty((len(paths), encoder.dim), dtype=np.float32)
    embedded: list[int] = []
    failures: list[tuple[int, DecodeFailure]] = []
    position = 0
    stopped = False
    batches = _decoded_batches(paths, batch_size, limits, decode_workers, _decode_batch_tolerant)
    with tqdm(total=len(paths), desc=description, unit="image", disable=not progress) as bar:
        try:
            for decoded in batches:
                images: list[Image] = []
                for offset, result in enumerate(decoded):
                    if isinstance(result, Image):
                        images.append(result)
                        embedded.append(position + offset)
                    else:
                        failures.append((position + offset, result))
                if images:
                    start = len(embedded) - len(images)
                    output[start : len(embedded)] = encoder.encode_images(images)
                position += len(decoded)
                bar.update(len(decoded))
                if stop_at_failure and failures:
                    stopped = position < len(paths)
                    break
        finally:
            batches.close()
    return ImageEmbedding(
        vectors=output[: len(embedded)], embedded=embedded, failures=failures, stopped=stopped
    )
