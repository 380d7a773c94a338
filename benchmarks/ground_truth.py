"""Retrieval tasks: which queries to send and which items count as positives (DESIGN §7).

A :class:`RetrievalTask` is pure ground truth — the queries in a fixed order, each query's
positive set, and whether the query itself must be excluded from its own ranking. It knows
nothing about HTTP; the replay turns it into requests and the metrics turn the answers into
numbers. Later tasks (i2t, t2i, i2i, the ``*_original`` protocols) are more builders here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from benchmarks.datasets import Caption, Rating


@dataclass(frozen=True)
class RetrievalTask:
    """One retrieval task over one target collection.

    Attributes:
        name: the report key, e.g. ``"t2t"``.
        query_collection: the collection the query ids belong to (``"captions"``).
        target_collection: the collection ranked for every query (``"captions"``).
        queries: the query ids, in a fixed order (the query collection's row order).
        positives: for every query id, its non-empty set of positive target ids.
        exclude_query: whether the query id is excluded from its own ranking (same-collection
            tasks such as t2t and i2i).
    """

    name: str
    query_collection: str
    target_collection: str
    queries: tuple[str, ...]
    positives: Mapping[str, frozenset[str]]
    exclude_query: bool

    def limited(self, limit: int | None) -> RetrievalTask:
        """The same task with only the first ``limit`` queries (all of them when ``None``)."""
        if limit is None or limit >= len(self.queries):
            return self
        queries = self.queries[:limit]
        return RetrievalTask(
            name=self.name,
            query_collection=self.query_collection,
            target_collection=self.target_collection,
            queries=queries,
            positives={query: self.positives[query] for query in queries},
            exclude_query=self.exclude_query,
        )


def rated_partners(ratings: Iterable[Rating], threshold: float) -> dict[str, set[str]]:
    """Symmetric partner sets from same-collection ratings (STS or SIS).

    A pair whose ``agg_score`` is at least ``threshold`` (inclusive) makes each side a partner
    of the other. Pairs of an item with itself are ignored.

    Returns:
        item id → set of partner ids, only for items with at least one partner.
    """
    partners: dict[str, set[str]] = defaultdict(set)
    for rating in ratings:
        if rating.agg_score >= threshold and rating.item1 != rating.item2:
            partners[rating.item1].add(rating.item2)
            partners[rating.item2].add(rating.item1)
    return dict(partners)


def _check_known(ids: Iterable[str], known: Mapping[str, int], what: str) -> None:
    unknown = sorted({item for item in ids if item not in known})
    if unknown:
        raise ValueError(
            f"{len(unknown)} {what} id(s) are not in the captions file, e.g. {unknown[:3]}"
        )


def t2t_task(
    sts: Iterable[Rating], captions: list[Caption], threshold: float = 3.0
) -> RetrievalTask:
    """The strict CxC text→text task.

    Queries are the captions with at least one STS partner scoring ``≥ threshold``, in the
    captions file's row order; positives are those partners; the query is excluded from its
    own ranking.

    Raises:
        ValueError: a rated caption id is not in ``captions``.
    """
    row_of = {caption.key: caption.row for caption in captions}
    partners = rated_partners(sts, threshold)
    _check_known(partners, row_of, "STS caption")
    queries = tuple(sorted(partners, key=row_of.__getitem__))
    return RetrievalTask(
        name="t2t",
        query_collection="captions",
        target_collection="captions",
        queries=queries,
        positives={query: frozenset(partners[query]) for query in queries},
        exclude_query=True,
    )


def t2t_cocaptions_task(
    sts: Iterable[Rating], captions: list[Caption], threshold: float = 3.0
) -> RetrievalTask:
    """Text→text with co-captions: the :func:`t2t_task` queries, whose positives are the STS
    partners plus the other captions of the query's image (rated or not).

    Raises:
        ValueError: a rated caption id is not in ``captions``.
    """
    strict = t2t_task(sts, captions, threshold)
    image_of = {caption.key: caption.image_id for caption in captions}
    captions_of_image: dict[int, set[str]] = defaultdict(set)
    for caption in captions:
        captions_of_image[caption.image_id].add(caption.key)
    positives = {
        query: frozenset(strict.positives[query] | (captions_of_image[image_of[query]] - {query}))
        for query in strict.queries
    }
    return RetrievalTask(
        name="t2t_cocaptions",
        query_collection="captions",
        target_collection="captions",
        queries=strict.queries,
        positives=positives,
        exclude_query=True,
    )
