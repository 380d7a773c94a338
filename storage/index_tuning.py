"""What a build measured of an approximate index: recall@10 against exact search on held-out
queries, across the values of its one search parameter, and the value chosen to meet a target.

Recorded per collection in the bundle manifest (:class:`storage.manifest.IndexTuning`), shown by
``/v1/collections``; the chosen value is the collection's default search parameter.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from storage.index_files import set_search_parameter
from storage.manifest import IndexTuning, SweepPoint, TuningParameter

RECALL_K: Final = 10
EXACT_BLOCK_BYTES: Final = 64 * 2**20
"""The largest [queries, rows] score block the exact search makes."""
TIE_TOLERANCE: Final = 1e-5
"""Scores this close to the exact 10th score count as equal to it (float32 sums in two orders
differ in the last bits; genuinely distinct scores this close are ties for any reader)."""


def held_out_rows(count: int, queries: int, seed: int) -> np.ndarray:
    """A seeded sample of ``min(count, queries)`` distinct row numbers, ascending (int64)."""
    size = min(count, queries)
    rows = np.random.default_rng(seed).choice(count, size=size, replace=False)
    return np.sort(rows).astype(np.int64)


def exact_kth_scores(
    vectors: np.ndarray,
    query_rows: np.ndarray,
    k: int = RECALL_K,
    *,
    block_bytes: int = EXACT_BLOCK_BYTES,
) -> np.ndarray:
    """The exact k-th best inner product of each query row over all *other* stored rows.

    Computed block by block (numpy, float32): no score block is larger than ``block_bytes``.
    ``k`` must be below the row count (the query's own row is left out).
    """
    count = int(vectors.shape[0])
    if not 1 <= k < count:
        raise ValueError(f"k={k} needs 1 <= k < {count} rows")
    queries = np.ascontiguousarray(vectors[query_rows], dtype=np.float32)
    cells = max(1, block_bytes // 4)
    query_block = max(1, min(len(queries), cells // min(count, cells)))
    row_block = max(1, min(count, cells // query_block))
    kth = np.empty(len(queries), dtype=np.float32)
    for q0 in range(0, len(queries), query_block):
        block = queries[q0 : q0 + query_block]
        own = query_rows[q0 : q0 + query_block]
        best = np.full((len(block), k), -np.inf, dtype=np.float32)
        for r0 in range(0, count, row_block):
            stored = np.asarray(vectors[r0 : r0 + row_block], dtype=np.float32)
            scores = block @ stored.T
            inside = (own >= r0) & (own < r0 + len(stored))
            scores[np.flatnonzero(inside), own[inside] - r0] = -np.inf
            both = np.concatenate([best, scores], axis=1)
            best = -np.partition(-both, k - 1, axis=1)[:, :k]
        kth[q0 : q0 + len(block)] = best.min(axis=1)
    return kth


def without_own_rows(found: np.ndarray, query_rows: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` rows of each answer in ``found`` ([q, k+1]) other than the query's own."""
    kept = np.full((len(found), k), -1, dtype=np.int64)
    for position, (answer, own) in enumerate(zip(found, query_rows, strict=True)):
        others = answer[answer != own][:k]
        kept[position, : len(others)] = others
    return kept


def tie_aware_recall(
    vectors: np.ndarray, query_rows: np.ndarray, found: np.ndarray, kth: np.ndarray
) -> float:
    """Mean share of hits among ``found`` ([q, k] rows, -1 for none, own rows left out).

    A hit is a returned row whose exact score reaches the exact k-th score (within
    :data:`TIE_TOLERANCE`): a row tied with the exact 10th is as good an answer as it, whichever
    of the two the tie rule (score descending, then row ascending) would list.
    """
    k = found.shape[1]
    queries = np.asarray(vectors[query_rows], dtype=np.float32)
    valid = found >= 0
    rows = np.where(valid, found, 0)
    stored = np.asarray(vectors[rows.ravel()], dtype=np.float32).reshape(*rows.shape, -1)
    scores = np.einsum("qd,qkd->qk", queries, stored)
    hits = valid & (scores >= kth[:, None] - TIE_TOLERANCE)
    return float(np.minimum(hits.sum(axis=1), k).mean() / k)


def tune_index(
    index: Any,
    vectors: np.ndarray,
    parameter: TuningParameter,
    candidates: Sequence[int],
    *,
    target_recall: float,
    held_out_queries: int = 1000,
    seed: int = 0,
) -> IndexTuning:
    """Measure ``index`` against exact search and choose the smallest value meeting the target.

    The queries are a seeded sample of ``min(n, held_out_queries)`` stored rows; each query's
    own row is left out of the exact answer and of the index's answer. ``candidates`` are swept
    in ascending order; each point records recall@10 (:func:`tie_aware_recall`) and the mean
    milliseconds a query of one batched search. The sweep stops at the first value meeting
    ``target_recall`` (larger values only cost time); when none does, the largest is chosen and
    ``met`` is False. The chosen value is left set on ``index``.
    """
    values = sorted(set(candidates))
    count = int(vectors.shape[0])
    if not values:
        raise ValueError("no candidate values to sweep")
    if count < 2:
        raise ValueError("tuning needs at least 2 rows")
    k = min(RECALL_K, count - 1)
    query_rows = held_out_rows(count, held_out_queries, seed)
    queries = np.ascontiguousarray(vectors[query_rows], dtype=np.float32)
    kth = exact_kth_scores(vectors, query_rows, k)
    sweep: list[SweepPoint] = []
    recall = 0.0
    for value in values:
        set_search_parameter(index, parameter, value)
        started = time.perf_counter()
        _, found = index.search(queries, k + 1)
        seconds = time.perf_counter() - started
        recall = tie_aware_recall(vectors, query_rows, without_own_rows(found, query_rows, k), kth)
        sweep.append(
            SweepPoint(
                value=value,
                recall_at_10=round(recall, 6),
                ms_per_query=round(1000.0 * seconds / len(queries), 6),
            )
        )
        if recall >= target_recall:
            break
    met = recall >= target_recall
    chosen = sweep[-1]
    set_search_parameter(index, parameter, chosen.value)
    return IndexTuning(
        target_recall=target_recall,
        parameter=parameter,
        value=chosen.value,
        recall_at_10=chosen.recall_at_10,
        met=met,
        held_out_queries=len(query_rows),
        seed=seed,
        queries=(
            f"seeded sample (seed {seed}) of {len(query_rows)} of the {count} stored rows, each "
            "query's own row left out of both answers"
        ),
        sweep=sweep,
    )
