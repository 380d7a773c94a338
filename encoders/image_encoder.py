"""The image tower of a variant, run with onnxruntime."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from PIL import Image

from encoders.image_preprocess import PixelBatch, preprocess_images
from encoders.providers import ProviderRequest
from encoders.tower_session import VariantTower

# The text encoder's output lookup applies unchanged: "embeddings", else the only output, with
# its last axis checked against the manifest's dim.
from encoders.variant import (
    ImageTower,
    VariantError,
    VariantManifest,
)

# 32 images of 3 x 224 x 224 float32 are 19 MB of input: large enough to keep a CPU busy, small
# enough that a batch's preprocessing and activations stay far below a server's memory.
DEFAULT_BATCH_SIZE: Final = 32
_FLOAT_TENSOR: Final = "tensor(float)"
_CHANNELS: Final = 3

logger = logging.getLogger(__name__)


class OnnxImageEncoder(VariantTower):
    """Embeds RGB images with a variant's ``image.onnx``; implements ImageEncoderProtocol.

    Loading verifies the SHA-256 of every variant file against ``variant.json`` (``VariantError``
    on a mismatch). Images are preprocessed per the manifest's ``image`` section (see
    ``encoders.image_preprocess``). Safe to call from several threads: onnxruntime sessions are
    thread-safe and preprocessing keeps no state.
    """

    def __init__(
        self,
        variant_dir: Path,
        providers: ProviderRequest = "auto",
        intra_op_threads: int = 0,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        """Load and verify the variant in ``variant_dir`` and start an onnxruntime session.

        ``providers``: "auto" (CUDA when the build offers it, else CPU), "cpu", or "cuda" (raises
        ``ProviderError`` when the session cannot really run on CUDA). ``intra_op_threads``: 0 lets
        onnxruntime use one thread per core. ``batch_size``: images per session run.
        """
        super().__init__(variant_dir, batch_size)
        self._image = _image_tower(self._manifest, self._variant_dir)

        self._open_session(self._image.onnx_file, providers, intra_op_threads)
        self._input_name = _pixel_input_name(self._session.session, self._image)
        logger.info(
            "image encoder %s ready: dim %d, input %dx%d, %s, providers %s",
            self.name,
            self.dim,
            self._image.height,
            self._image.width,
            self.precision,
            self.providers,
        )

    @property
    def input_size(self) -> tuple[int, int]:
        """(height, width) in pixels of the tower's input tensor."""
        return self._image.input_size

    def encode_images(self, images: Sequence[Image.Image]) -> npt.NDArray[np.float32]:
        """Embed RGB images of any size: float32 ``[len(images), dim]``, L2-normalised rows,
        C-contiguous; row ``i`` embeds ``images[i]``.

        Raises ``ValueError`` for an image whose mode is not "RGB" (decode uploads with
        ``encoders.image_decode.decode_image``). Images are preprocessed and run
        ``batch_size`` at a time, so memory stays bounded for long inputs.
        """
        if isinstance(images, Image.Image):
            # A lone image is no Sequence, but the mistake deserves a clearer message.
            raise TypeError("encode_images takes a sequence of images, not a single image")
        images = list(images)
        embeddings = np.empty((len(images), self.dim), dtype=np.float32)
        for start in range(0, len(images), self._batch_size):
            batch = images[start : start + self._batch_size]
            embeddings[start : start + len(batch)] = self.encode_pixels(
                preprocess_images(batch, self._image)
            )
        return embeddings

    def encode_pixels(self, pixels: PixelBatch) -> npt.NDArray[np.float32]:
        """One session run on already preprocessed pixels.

        ``pixels``: float32 ``[b, 3, height, width]`` as ``preprocess_images`` makes it. Returns
        float32 ``[b, dim]`` L2-normalised rows. Runs the whole batch at once (no splitting).
        """
        return self._session.run({self._input_name: pixels}, len(pixels))


def _image_tower(manifest: VariantManifest, variant_dir: Path) -> ImageTower:
    """The manifest's image section; ``VariantError`` for a variant without an image tower."""
    if manifest.image is None:
        raise VariantError(f"variant {manifest.name!r} at {variant_dir} has no image tower")
    return manifest.image


def _pixel_input_name(session: ort.InferenceSession, tower: ImageTower) -> str:
    """The graph's only input; ``VariantError`` unless it is float ``[batch, 3, height, width]``.

    Symbolic (str) axes are accepted; fixed ones must match the manifest.
    """
    inputs = session.get_inputs()
    if len(inputs) != 1:
        names = [str(node.name) for node in inputs]
        raise VariantError(f"{tower.onnx_file} has inputs {names}; an image tower takes one")
    (node,) = inputs
    expected = (None, _CHANNELS, tower.height, tower.width)
    shape = list(node.shape)
    mismatched = len(shape) != len(expected) or any(
        isinstance(actual, int) and want is not None and actual != want
        for actual, want in zip(shape, expected, strict=True)
    )
    if node.type != _FLOAT_TENSOR or mismatched:
        raise VariantError(
            f"{tower.onnx_file} input {node.name!r} is {node.type} {shape}; the manifest needs "
            f"{_FLOAT_TENSOR} [batch, {_CHANNELS}, {tower.height}, {tower.width}]"
        )
    return str(node.name)
