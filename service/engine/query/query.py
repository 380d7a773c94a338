"""The engine's query: one search as the HTTP layer hands it over, made once from the wire.

A side is a text, an image, a stored item or the client's own vector (:data:`QuerySide`); a
:class:`PageRequest` is what the search asks for besides its query (``k`` hits from rank
``offset + 1``, a filter, exclusions, search parameters); a :class:`SearchQuery` is both, with
the variant and collection it names. ``where`` fields locate each part in the request, for the
messages of the domain errors (``searches.3.query.text``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from encoders.variant import Tower
from service.engine.query.filter_grammar import Filter
from service.engine.query.images import ImagePayload
from service.engine.query.levers import NO_LEVERS, Levers
from service.engine.rank.search_params import SearchOverride
from service.exceptions import InvalidQueryError


@dataclass(frozen=True)
class TextSide:
    """A text, embedded by the variant's text tower; ``where`` names it in errors."""

    text: str
    where: str


@dataclass(frozen=True)
class ImageSide:
    """An image file (base64 text or bytes), embedded by the variant's image tower."""

    payload: ImagePayload


@dataclass(frozen=True)
class ItemSide:
    """A stored item: its bundle vector, from either collection of the variant; ``where``
    names it in errors (``pairs.0.left.item``)."""

    collection: str
    item_id: str
    where: str = "query.item"


@dataclass(frozen=True)
class VectorSide:
    """The client's own embedding in the variant's space (normalised before use)."""

    values: Sequence[float]
    where: str


QuerySide = TextSide | ImageSide | ItemSide | VectorSide


def tower_of(side: QuerySide) -> Tower | None:
    """The tower that embeds ``side``: ``text``, ``image``, or None for an item or a vector."""
    if isinstance(side, TextSide):
        return "text"
    if isinstance(side, ImageSide):
        return "image"
    return None


def where_of(side: QuerySide, default: str) -> str:
    """Where ``side`` sits in the request, for error messages."""
    if isinstance(side, ImageSide):
        return side.payload.where
    if isinstance(side, TextSide | VectorSide):
        return side.where
    return default


@dataclass(frozen=True)
class PageRequest:
    """What a search asks for besides its query: ``k`` hits from rank ``offset + 1`` on, among
    the rows ``filter`` keeps (None: all), less the ids in ``exclude``, searched with the
    ``override``'s search parameters (None: the collection's defaults). ``where`` and
    ``params_where`` locate the filter and the parameters in the request, for errors."""

    k: int
    offset: int = 0
    exclude: Collection[str] = ()
    filter: Filter | None = None
    where: str = "filter"
    override: SearchOverride | None = None
    params_where: str = "search_params"


@dataclass(frozen=True)
class SearchQuery:
    """One search: ``side`` against ``collection`` of ``variant`` (None: the variant that can
    answer it), for ``page``; ``where`` locates the search in the request (``query``, or
    ``searches.3`` in a bulk request)."""

    variant: str | None
    collection: str
    side: QuerySide
    page: PageRequest
    where: str = ""
    levers: Levers = NO_LEVERS
    """Mode, keywords, fusion, window and re-rank (:mod:`service.engine.query.levers`); the default
    is a plain dense search."""

    @property
    def side_where(self) -> str:
        """Where the side is in the request, for its errors (``searches.3.query.text``)."""
        prefix = f"{self.where}." if self.where else ""
        return where_of(self.side, f"{prefix}query.item")


def normalised_query_vector(values: Sequence[float], dim: int, where: str) -> np.ndarray:
    """A client's own embedding (finite numbers: the HTTP schema refuses others) as a float32
    ``[dim]`` unit vector.

    Raises :class:`InvalidQueryError` when it has not exactly ``dim`` numbers or has zero norm
    (nothing to compare by angle). The norm is taken after scaling by the largest magnitude, so
    huge (1e300) or tiny (1e-320) values neither overflow nor underflow. (The service checks the
    length against the variant it reached first: :meth:`Searcher.given_vector`.)
    """
    if len(values) != dim:
        raise InvalidQueryError(
            f"{where}: {len(values)} numbers, but the variant's embeddings have dimension {dim}",
            param=where,
        )
    vector = np.asarray(values, dtype=np.float64)
    scale = float(np.abs(vector).max(initial=0.0))
    if not np.isfinite(scale):
        raise InvalidQueryError(f"{where}: every number must be finite", param=where)
    if scale == 0.0:
        raise InvalidQueryError(
            f"{where}: the vector has zero norm; it has no direction", param=where
        )
    scaled = vector / scale
    unit: np.ndarray = (scaled / np.linalg.norm(scaled)).astype(np.float32)
    return unit
