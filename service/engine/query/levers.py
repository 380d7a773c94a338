"""The quality levers of a search: keyword and hybrid modes, and a re-rank cascade.

A search is ``dense`` by default: its query vector against the collection's index
(:mod:`service.engine.collection.knn`). A request may instead ask for

- ``lexical``: BM25 over a text field of the collection (:mod:`service.engine.rank.lexical_index`),
  for the keywords given (or the query's own text);
- ``hybrid``: both legs, each its best ``window`` rows under the same filter and exclusions,
  fused into one ranking (:mod:`service.engine.rank.fusion`: RRF or a normalised weighted sum);
- a ``rerank``: the best ``window`` rows of the first stage (dense, or the fused ranking) scored
  again with a stronger signal — the collection's exact stored vectors (after an approximate or
  quantised index), or another served variant's stored vectors of the same items against the
  query as that variant embeds it — and ordered by that score.

Every ranking is ordered by score descending then row ascending (the tie rule) and a page is
ranks ``offset + 1..offset + k`` of it, so pages continue each other exactly. The fused and
re-ranked rankings hold at most ``window`` rows (``window >= offset + k``); a lexical ranking
holds every row that matches a keyword.

The text a collection is searched by keyword in (:func:`text_field`): the field the request
names (a ``string`` or ``list[string]`` field), else the collection's ``text`` field, else its
``captions`` field; a live collection's default is each item's own text (the one its variant
embedded), else its ``text`` field. An image collection whose items carry captions thus takes a
hybrid query: keywords on the captions, the query's vector on the images.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from formats.field_types import FieldType
from service.engine.rank.fusion import Fusion, Leg, fuse
from service.engine.rank.lexical_index import LexicalIndex, best, query_terms
from service.exceptions import InvalidQueryError, LeverNotApplicableError, quoted

SearchMode = Literal["dense", "lexical", "hybrid"]

DEFAULT_FUSION: Final = Fusion(method="weighted", alpha=0.5)
"""The fusion a hybrid search without one uses: an even weighted sum of the normalised legs, the
best fusion where keywords paid off in docs/studies/2026-11-28-levers-on-cxc.md (RRF with k 60
within its interval)."""

DEFAULT_WINDOW: Final = 100
"""Candidates per leg of a hybrid search, and of a re-rank's first stage, when the request
names no ``window`` (at least ``offset + k``)."""

ITEM_TEXT: Final = ""
"""The lexical field name of a live collection's item texts."""

_TEXT_TYPES: Final = ("string", "list[string]")
_DEFAULT_FIELDS: Final = ("text", "captions")


@dataclass(frozen=True, slots=True)
class Rerank:
    """Re-score the first stage's candidates ``by`` the collection's exact stored vectors, or
    by ``variant``'s stored vectors of the same items."""

    by: Literal["exact", "variant"]
    variant: str | None = None


@dataclass(frozen=True, slots=True)
class Levers:
    """A search's mode, keywords and field, fusion, window and re-rank; ``where`` locates the
    search in the request (``searches.3.``), for errors."""

    mode: SearchMode = "dense"
    keywords: str | None = None
    field: str | None = None
    fusion: Fusion = DEFAULT_FUSION
    window: int | None = None
    rerank: Rerank | None = None
    where: str = ""

    @property
    def plain(self) -> bool:
        """A dense search without a re-rank: the search core's own path."""
        return self.mode == "dense" and self.rerank is None

    def depth(self, offset: int, k: int) -> int:
        """Rows a fused or first-stage ranking holds: ``window`` (checked to hold the page)."""
        if self.window is None:
            return max(DEFAULT_WINDOW, offset + k)
        if self.window < offset + k:
            raise InvalidQueryError(
                f"{self.where}window: {self.window} candidates cannot hold ranks up to "
                f"offset + k = {offset + k}; ask for a window of at least {offset + k}",
                param=f"{self.where}window",
            )
        return self.window

    def terms(self, query_text: str | None) -> list[str]:
        """The distinct keywords: ``keywords``, else the query's text.
        :class:`InvalidQueryError` when neither is given or neither holds a word."""
        text = self.keywords if self.keywords is not None else query_text
        if text is None:
            raise InvalidQueryError(
                f"{self.where}lexical.text: a {self.mode} search of an image, an item or a "
                "vector needs keywords: send lexical.text",
                param=f"{self.where}lexical.text",
            )
        terms = query_terms(text)
        if not terms:
            raise InvalidQueryError(
                f"{self.where}lexical.text: {text!r} holds no word to search for",
                param=f"{self.where}lexical.text",
            )
        return terms


NO_LEVERS: Final = Levers()


def text_field(
    fields: Mapping[str, FieldType], asked: str | None, where: str, *, live: bool
) -> str:
    """The field a keyword search reads (see the module docstring); :data:`ITEM_TEXT` for a live
    collection's item texts. :class:`LeverNotApplicableError` for a field the collection lacks,
    one that holds no text, or a collection without a default."""
    if asked is not None:
        kind = fields.get(asked)
        if kind is None:
            raise LeverNotApplicableError(
                f"{where}lexical.field: the collection has no field {quoted(asked)}; its "
                f"fields: {', '.join(sorted(fields)) or 'none'}",
                param=f"{where}lexical.field",
            )
        if kind not in _TEXT_TYPES:
            raise LeverNotApplicableError(
                f"{where}lexical.field: {quoted(asked)} is of type {kind}; keywords search "
                "string or list[string] fields",
                param=f"{where}lexical.field",
            )
        return asked
    if live:
        return ITEM_TEXT
    for name in _DEFAULT_FIELDS:
        if fields.get(name) in _TEXT_TYPES:
            return name
    raise LeverNotApplicableError(
        f"{where}lexical.field: the collection has no text or captions field to search by "
        "keyword; name a string or list[string] field",
        param=f"{where}lexical.field",
    )


def field_text(value: object) -> str | None:
    """A row's text in a field: the string, or a list's strings joined by newlines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "\n".join(str(part) for part in value)
    return None


def lexical_leg(
    index: LexicalIndex,
    terms: Sequence[str],
    alive: npt.NDArray[np.bool_],
    keep: npt.NDArray[np.bool_] | None,
    depth: int,
) -> tuple[Leg, int]:
    """The ``depth`` best rows ``keep`` keeps (None: all alive) by BM25, statistics over
    ``alive``, and how many kept rows match in all. Caller holds the index's lock and has
    appended every row of ``alive``."""
    hits = index.score(terms, alive)
    rows, scores, matched = best(hits, keep, depth)
    return Leg(rows, scores), matched


def rescored(rows: npt.NDArray[np.int64], vectors: np.ndarray, query: np.ndarray) -> Leg:
    """``rows`` ordered by the inner product (float64) of their ``vectors`` (one per row, in
    order) with ``query``, then by row."""
    scores = vectors.astype(np.float64) @ np.asarray(query, dtype=np.float64)
    order = np.lexsort((rows, -scores))
    return Leg(rows[order], scores[order])


def ranked(
    levers: Levers,
    dense: Leg | None,
    lexical: Leg | None,
) -> Leg:
    """The first-stage ranking of a search: the dense leg, the lexical leg, or both fused."""
    if levers.mode == "hybrid":
        assert dense is not None
        assert lexical is not None
        return fuse(dense, lexical, levers.fusion)
    if levers.mode == "lexical":
        assert lexical is not None
        return lexical
    assert dense is not None
    return dense


def page_rows(ranking: Leg, offset: int, k: int) -> list[tuple[int, int, float]]:
    """``(rank, row, score)`` of ranks ``offset + 1..offset + k`` of ``ranking``."""
    rows = ranking.rows[offset : offset + k].tolist()
    scores = ranking.scores[offset : offset + k].tolist()
    return [
        (rank, row, score)
        for rank, (row, score) in enumerate(zip(rows, scores, strict=True), start=offset + 1)
    ]


def keywords(
    levers: Levers, query_text: str | None, fields: Mapping[str, FieldType], *, live: bool
) -> tuple[list[str] | None, str | None]:
    """The keywords and the field a search reads them in; ``(None, None)`` for a dense one.
    Checked before anything is encoded (see :meth:`Levers.terms` and :func:`text_field`)."""
    if levers.mode == "dense":
        return None, None
    return levers.terms(query_text), text_field(fields, levers.field, levers.where, live=live)


def needs_vector(levers: Levers) -> bool:
    """Whether the search needs the query's vector in the collection's own variant: a dense
    leg, or a re-rank by the exact stored vectors."""
    return levers.mode != "lexical" or (levers.rerank is not None and levers.rerank.by == "exact")
