"""The embedding job: texts → vectors in batches, with a progress bar."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from encoders.protocols import TextEncoderProtocol
from tqdm import tqdm


def embed_texts(
    encoder: TextEncoderProtocol,
    texts: Sequence[str],
    *,
    batch_size: int = 256,
    progress: bool = True,
    description: str = "embedding",
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
