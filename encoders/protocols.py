"""Structural interfaces the other packages program against (docs/contracts.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from PIL.Image import Image


@runtime_checkable
class TextEncoderProtocol(Protocol):
    """Anything that embeds texts into the variant's space.

    Declared as read-only properties so that plain attributes and properties both satisfy it.
    """

    @property
    def name(self) -> str:
        """Variant name."""
        ...

    @property
    def dim(self) -> int:
        """Embedding dimension d."""
        ...

    @property
    def max_tokens(self) -> int:
        """Truncation length in tokens, special tokens included."""
        ...

    @property
    def precision(self) -> str:
        """Weight precision of the variant: "fp32", "fp16" or "int8"."""
        ...

    @property
    def fingerprint(self) -> str:
        """SHA-256 hex identifying the variant's files (``VariantManifest.fingerprint``)."""
        ...

    @property
    def providers(self) -> list[str]:
        """onnxruntime providers really in use (``session.get_providers()``), priority order."""
        ...

    @property
    def matryoshka_dims(self) -> tuple[int, ...]:
        """Dimensions below ``dim`` the model was trained to be cut to (the first n values,
        renormalised, still an embedding); empty where a cut means nothing."""
        ...

    def encode_texts(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``: float32 ``[len(texts), dim]``, L2-normalised rows, C-contiguous."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens the encoder feeds the model for each of ``texts`` (after truncation at
        ``max_tokens``, special tokens included)."""
        ...


@runtime_checkable
class ImageEncoderProtocol(Protocol):
    """Anything that embeds decoded RGB images into the variant's space."""

    @property
    def name(self) -> str:
        """Variant name."""
        ...

    @property
    def dim(self) -> int:
        """Embedding dimension d."""
        ...

    @property
    def precision(self) -> str:
        """Weight precision of the variant: "fp32", "fp16" or "int8"."""
        ...

    @property
    def fingerprint(self) -> str:
        """SHA-256 hex identifying the variant's files (``VariantManifest.fingerprint``)."""
        ...

    @property
    def providers(self) -> list[str]:
        """onnxruntime providers really in use (``session.get_providers()``), priority order."""
        ...

    @property
    def input_size(self) -> tuple[int, int]:
        """(height, width) in pixels of the tower's input tensor."""
        ...

    @property
    def matryoshka_dims(self) -> tuple[int, ...]:
        """Dimensions below ``dim`` the model was trained to be cut to; empty where a cut means
        nothing."""
        ...

    def encode_images(self, images: Sequence[Image]) -> npt.NDArray[np.float32]:
        """Embed RGB images of any size (the variant's preprocessing is applied inside):
        float32 ``[len(images), dim]``, L2-normalised rows, C-contiguous."""
        ...
