"""What embeds a search's text and image query sides: the search core
(:class:`service.engine.searcher.Searcher`), passed as this protocol to the modules that make
a live collection's or a lever search's vectors, which the search core itself calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from service.engine.catalog import ServedVariant
from service.engine.images import ImagePayload
from service.request_context import RequestContext


class Embedder(Protocol):
    """Embeds texts and images through a variant's batchers (L2-normalised rows, in order)."""

    async def embed_texts(
        self, context: RequestContext, variant: ServedVariant, texts: Sequence[str]
    ) -> np.ndarray: ...

    async def embed_images(
        self, context: RequestContext, variant: ServedVariant, payloads: Sequence[ImagePayload]
    ) -> np.ndarray: ...
