"""The service's search levers as an integration takes them: keyword arguments of a search
method (LangChain's ``search_kwargs``, LlamaIndex's ``vector_store_kwargs``) checked by name and
sent to ``POST /v1/search``, so that none is dropped silently.

``mode`` (``dense``, ``lexical``, ``hybrid``), ``lexical`` (``{"text", "field"}``), ``fusion``,
``window``, ``rerank``, ``search_params``, ``offset`` and ``exclude`` are the request's fields of
the same names (docs/search-levers.md); ``score_threshold`` keeps the hits whose score is at
least it (the service's score: a cosine similarity in dense mode or after a re-rank, BM25 in
lexical mode, the fused score in hybrid mode). An unknown name is a :class:`TypeError` naming
it; a lever that the mode would ignore (``fusion`` outside hybrid mode, ``lexical`` in dense
mode, ``window`` without hybrid mode or a re-rank) a :class:`ValueError`, both before any
request is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, get_args

from crisscross_client import models as m

LEVERS: tuple[str, ...] = (
    "mode",
    "lexical",
    "fusion",
    "window",
    "rerank",
    "search_params",
    "offset",
    "exclude",
    "score_threshold",
)
"""The keyword arguments every integration's search takes besides its own (``k``,
``filter``, ...)."""

SEARCH_MODES: tuple[str, ...] = get_args(m.SearchMode)

Scored = TypeVar("Scored")


def refuse_unknown(kwargs: Collection[str], allowed: Collection[str], where: str) -> None:
    """:class:`TypeError` naming every name of ``kwargs`` that ``allowed`` lacks."""
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise TypeError(
            f"{where} got unexpected keyword argument(s) {names}; it takes "
            f"{', '.join(sorted(allowed))}"
        )


@dataclass(frozen=True)
class SearchOptions:
    """A search's levers (see the module docstring); the defaults are a plain dense search."""

    mode: m.SearchMode = "dense"
    lexical: Mapping[str, Any] | None = None
    fusion: m.RrfFusion | m.WeightedFusion | Mapping[str, Any] | None = None
    window: int | None = None
    rerank: m.ExactRerank | m.VariantRerank | Mapping[str, Any] | None = None
    search_params: m.SearchParams | Mapping[str, Any] | None = None
    offset: int | None = None
    exclude: Sequence[str] | None = None
    score_threshold: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in SEARCH_MODES:
            raise ValueError(
                f"mode {self.mode!r} is not a search mode; the service's: {', '.join(SEARCH_MODES)}"
            )
        if self.fusion is not None and self.mode != "hybrid":
            raise ValueError(f"fusion applies to mode='hybrid', not mode={self.mode!r}")
        if self.lexical is not None and self.mode == "dense":
            raise ValueError("lexical options apply to mode='lexical' or 'hybrid', not 'dense'")
        if self.window is not None and self.mode != "hybrid" and self.rerank is None:
            raise ValueError(
                "window sizes a hybrid search's legs or a re-rank's first stage; "
                f"mode={self.mode!r} without rerank takes none"
            )

    @property
    def reranked(self) -> bool:
        """Whether the scores are a re-rank's (cosine similarities whatever the mode)."""
        return self.rerank is not None

    @property
    def scores_are_cosine(self) -> bool:
        """Whether the hits' scores are cosine similarities (dense mode or a re-rank)."""
        return self.mode == "dense" or self.reranked

    def search_arguments(
        self,
        text: str | None,
        vector: Sequence[float] | None,
        text_field: str | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of :meth:`crisscross_client.Client.search` (all but
        ``collection``, ``k``, ``filter`` and ``variant``) for a query of ``vector`` where
        one is given, else of ``text``; the keywords default to ``text`` and the keyword field
        to ``text_field``."""
        arguments: dict[str, Any] = {
            "offset": self.offset,
            "exclude": None if self.exclude is None else list(self.exclude),
            "search_params": self.search_params,
            "window": self.window,
            "rerank": self.rerank,
        }
        if vector is not None:
            arguments["vector"] = list(vector)
        else:
            arguments["text"] = text
        if self.mode != "dense":
            lexical = dict(self.lexical or {})
            if text_field is not None:
                lexical.setdefault("field", text_field)
            if vector is not None and text is not None:
                lexical.setdefault("text", text)
            arguments |= {"mode": self.mode, "lexical": lexical or None, "fusion": self.fusion}
        return arguments

    def kept(self, scored: Sequence[tuple[Scored, float]]) -> list[tuple[Scored, float]]:
        """The ``(thing, score)`` pairs whose score is at least ``score_threshold``."""
        if self.score_threshold is None:
            return list(scored)
        return [pair for pair in scored if pair[1] >= self.score_threshold]


def search_options(
    kwargs: Mapping[str, Any],
    where: str,
    *,
    allowed: Collection[str] = LEVERS,
    defaults: SearchOptions | None = None,
) -> SearchOptions:
    """The :class:`SearchOptions` of ``kwargs`` over ``defaults``; :class:`TypeError` for a
    name ``allowed`` lacks (``where`` names the method), :class:`ValueError` for a lever the
    mode would ignore."""
    refuse_unknown(kwargs, allowed, where)
    base = defaults or SearchOptions()
    values = {name: kwargs.get(name, getattr(base, name)) for name in LEVERS}
    if values["mode"] is None:
        values["mode"] = "dense"
    return SearchOptions(**values)


def cosine_relevance(score: float) -> float:
    """A cosine similarity in [-1, 1] as a relevance in [0, 1]."""
    return (score + 1.0) / 2.0


def clipped(score: float) -> float:
    """A score already on [0, 1] (a weighted hybrid's), kept there against rounding."""
    return min(1.0, max(0.0, score))


def relevance_function(options: SearchOptions) -> Callable[[float], float]:
    """How a hit's score of a search with ``options`` maps onto a relevance in [0, 1]:
    cosine similarities (dense mode, a re-rank) as :func:`cosine_relevance`, a weighted
    hybrid's fused scores (already in [0, 1]) as they are; :class:`ValueError` for BM25 and RRF
    scores, which have no such scale."""
    if options.scores_are_cosine:
        return cosine_relevance
    fusion = options.fusion
    method = (
        fusion.get("method") if isinstance(fusion, Mapping) else getattr(fusion, "method", None)
    )
    if options.mode == "hybrid" and method in (None, "weighted"):
        return clipped
    raise ValueError(
        f"relevance scores in [0, 1] are defined for dense searches, re-ranks and weighted "
        f"hybrid fusion; mode={options.mode!r}"
        + (f" with {method} fusion" if method else "")
        + " scores otherwise (use similarity_search_with_score and score_threshold)"
    )
