"""The embedding job: texts or image files → vectors in batches, with a progress bar.

Image batches are decoded in a thread pool while the previous batch runs through the encoder
(Pillow's decoders and onnxruntime both release the GIL), so decoding hides behind inference.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL.Image import Image
from tqdm import tqdm

from encoders.image_decode import ImageLimits, decode_image
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


def _decode_batch(paths: Sequence[Path], limits: ImageLimits) -> list[Image]:
    return [decode_image(path.read_bytes(), limits) for path in paths]


def _decoded_batches(
    paths: Sequence[Path], batch_size: int, limits: ImageLimits, workers: int
) -> Iterator[list[Image]]:
    """Yield decoded batches in order, keeping up to ``workers`` batches decoding ahead."""
    starts = range(0, len(paths), batch_size)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="decode") as pool:
        pending: list[Future[list[Image]]] = []
        for start in starts:
            pending.append(pool.submit(_decode_batch, paths[start : start + batch_size], limits))
            if len(pending) > workers:
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


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
        for images in _decoded_batches(paths, batch_size, limits, decode_workers):
            output[done : done + len(images)] = encoder.encode_images(images)
            done += len(images)
            bar.update(len(images))
    return output
