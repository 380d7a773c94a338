"""The one page executor: a planned search (:mod:`service.engine.search.planner`) and its vectors
become one page of hits, on any collection view (:mod:`service.engine.collection.collection_view`).
Blocking: it runs on a worker thread — the encoder batch's, right after the batch (a
:class:`PageRun` is the batcher's follow-up), or the pool's.

The walk: the rows the search may return (alive, kept by the filter, not excluded: one mask for
every leg), then the legs — dense (the view's own search at ``depth``), lexical (BM25 over the same
rows) — then their fusion (:mod:`service.engine.rank.fusion`), a re-score of the first ``depth`` by
the exact stored vectors or another variant's, and the page: ranks ``offset + 1 .. offset + k``,
every ranking ordered by the tie rule (:mod:`service.engine.rank.tie_rule`). A plain dense search is
one leg at depth ``offset + k``; plain searches of one collection without a filter that finish
encoding in one batch run as one :meth:`CollectionView.top_many` call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from service.engine.encode.batcher import GroupedFollowUp
from service.engine.query.levers import page_rows, ranked, rescored
from service.engine.rank.fusion import Leg
from service.engine.search.pages import SearchPage, page_of
from service.engine.search.planner import SearchPlan


@dataclass(frozen=True)
class Vectors:
    """The vectors a plan asked for: the side's in the collection's space (None where the plan
    needs none: a lexical search) and in the re-rank variant's (None without one)."""

    query: np.ndarray | None
    rerank: np.ndarray | None = None


def execute(plan: SearchPlan, vectors: Vectors) -> SearchPage:
    """The page of ``plan`` (see the module docstring)."""
    view, page, levers = plan.view, plan.query.page, plan.query.levers
    keep = view.keep(page.filter, page.exclude)
    kept = view.kept_count(keep)
    if plan.plain:
        assert vectors.query is not None
        wanted = min(page.offset + page.k, kept)
        if wanted <= page.offset:
            return page_of(page, [], kept, plan.params)
        leg = view.top(vectors.query, wanted, keep, plan.params)
        shown = Leg(leg.rows[page.offset :], leg.scores[page.offset :])
        return page_of(page, view.hits(shown, page.offset), kept, plan.params)
    depth = plan.depth
    dense = lexical = None
    if levers.mode != "lexical":
        assert vectors.query is not None
        dense = view.top(vectors.query, min(depth, kept), keep, plan.params)
    matched = 0
    if plan.terms is not None and plan.field is not None:
        lexical, matched = view.keyword_leg(plan.field, plan.terms, keep, depth)
    ranking = ranked(levers, dense, lexical)
    if levers.mode == "hybrid":  # the fused ranking of two legs of depth rows ends at depth
        ranking = Leg(ranking.rows[:depth], ranking.scores[:depth])
    total = len(ranking.rows)
    if levers.mode == "lexical" and levers.rerank is None:
        total = matched
    if levers.rerank is not None:
        ranking = _rescored(plan, vectors, Leg(ranking.rows[:depth], ranking.scores[:depth]))
        total = len(ranking.rows)
    rows = page_rows(ranking, page.offset, page.k)
    shown = Leg(
        np.fromiter((row for _, row, _ in rows), dtype=np.int64, count=len(rows)),
        np.fromiter((score for _, _, score in rows), dtype=np.float64, count=len(rows)),
    )
    hits = view.hits(shown, page.offset)
    return replace(page_of(page, hits, total, plan.params), mode=levers.mode)


def _rescored(plan: SearchPlan, vectors: Vectors, first: Leg) -> Leg:
    """``first``'s rows scored again: by the collection's exact stored vectors, or by the
    re-rank variant's stored vectors of the same items (rows it lacks drop out)."""
    view, rows = plan.view, first.rows
    if plan.rerank is None:
        assert vectors.query is not None
        return rescored(rows, view.vectors_of(rows), vectors.query)
    other = plan.rerank[1]
    assert vectors.rerank is not None
    found = [other.row_of(item_id) for item_id in view.ids_of(rows)]
    present = np.fromiter((row is not None for row in found), dtype=np.bool_, count=len(rows))
    other_rows = np.fromiter(
        (row for row in found if row is not None), dtype=np.int64, count=int(present.sum())
    )
    return rescored(rows[present], other.vectors_of(other_rows), vectors.rerank)


@dataclass(frozen=True, eq=False)
class PageRun:
    """A plan run on the rows an encoder batch made for it (a batcher follow-up): plain
    searches of one collection without a filter, with equal :meth:`CollectionView.batch_key`,
    run together (:class:`service.engine.encode.batcher.GroupedFollowUp`)."""

    plan: SearchPlan

    @property
    def group(self) -> object | None:
        """The view's batch key for a plain search without a filter (None: alone)."""
        plan = self.plan
        if not plan.plain or plan.query.page.filter is not None:
            return None
        return plan.view.batch_key(plan.params)

    def __call__(self, rows: np.ndarray) -> SearchPage:
        """The page for the query vector ``rows[0]``."""
        return execute(self.plan, Vectors(rows[0]))

    def run_together(
        self, follow_ups: Sequence[GroupedFollowUp], rows: Sequence[np.ndarray]
    ) -> list[object]:
        """The pages of every run of the group (``follow_ups``, all :class:`PageRun` of this
        group), each for its own ``rows[i][0]``."""
        runs = [cast("PageRun", follow_up).plan for follow_up in follow_ups]
        return list(run_together(runs, [row[0] for row in rows]))


def run_together(plans: Sequence[SearchPlan], queries: Sequence[np.ndarray]) -> list[SearchPage]:
    """The pages of plain, unfiltered plans of one view and batch key, each for its query
    vector: one :meth:`CollectionView.top_many` call."""
    view, params = plans[0].view, plans[0].params
    pages = [(p.query.page.k, p.query.page.offset, p.query.page.exclude) for p in plans]
    found = view.top_many(np.stack(queries), pages, params)
    answers = []
    for plan, hits in zip(plans, found, strict=True):
        excluded = {
            row for item in plan.query.page.exclude if (row := view.row_of(item)) is not None
        }
        kept = view.rows - len(excluded)
        answers.append(page_of(plan.query.page, hits, kept, params))
    return answers
