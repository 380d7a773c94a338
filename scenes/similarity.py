"""Exhaustive, exact search over a split by a graded overlap score (the vectorised STS/SIS).

Items are atom sets (:mod:`atoms`). Packed as a 0/1 matrix ``binary`` and a weight matrix
``weighted`` (the same pattern times each atom's similarity weight), ``binary @ weighted.T``
gives the shared similarity mass of every pair. The entries are small integers (far below
2**24), so float32 GEMM computes them exactly whatever the summation order; the block scorers
of :mod:`grading` turn them into hundredths exactly, so the search agrees bit for bit with the
scalar graded functions (tested).

Ties are broken by row order everywhere: among equal scores the lowest index wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scenes.atoms import Atom, AtomSet, similarity_weight
from scenes.grading import BlockScorer

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]
DEFAULT_BLOCK = 2048
MAX_BLOCK = 1 << 14  # keeps the column-side keys of _block_best exact in float32


@dataclass(frozen=True)
class AtomMatrix:
    """Atom sets packed for GEMM: ``binary`` and ``weighted`` are ``[n_items, n_atoms]``
    float32, ``mass`` is ``[n_items]`` (Σ similarity weights, float32 holding an integer).
    ``group`` is ``[n_items]``: items with equal atom sets share a group, numbered in order of
    first appearance."""

    binary: FloatArray
    weighted: FloatArray
    mass: FloatArray
    group: IntArray

    @property
    def size(self) -> int:
        """Number of items."""
        return int(self.binary.shape[0])

    def select(self, rows: IntArray) -> AtomMatrix:
        """The sub-matrix of ``rows`` (groups are not renumbered)."""
        return AtomMatrix(self.binary[rows], self.weighted[rows], self.mass[rows], self.group[rows])


def atom_matrix(atom_sets: Sequence[AtomSet]) -> AtomMatrix:
    """Pack atom sets over the sorted union of their atoms."""
    vocabulary = sorted({atom for item in atom_sets for atom in item.atoms})
    column = {atom: index for index, atom in enumerate(vocabulary)}
    weights = np.array([similarity_weight(atom) for atom in vocabulary], dtype=np.float32)
    binary = np.zeros((len(atom_sets), max(len(vocabulary), 1)), dtype=np.float32)
    groups: dict[frozenset[Atom], int] = {}
    group = np.empty(len(atom_sets), dtype=np.int64)
    for row, item in enumerate(atom_sets):
        binary[row, [column[atom] for atom in item.atoms]] = 1.0
        group[row] = groups.setdefault(item.atoms, len(groups))
    weighted = binary.copy()
    if vocabulary:
        weighted *= weights[None, :]
    return AtomMatrix(binary, weighted, weighted.sum(axis=1, dtype=np.float32), group)


@dataclass(frozen=True)
class BestPartners:
    """For every item, the top-scoring other item (lowest index among ties) and its score;
    ``index`` is ``n_items`` and ``score`` -1 where there is no other item."""

    index: IntArray
    score: IntArray


def _better(
    best_score: IntArray, best_index: IntArray, score: IntArray, index: IntArray
) -> npt.NDArray[np.bool_]:
    """Where (score, index) beats (best_score, best_index): higher score, then lower index."""
    better: npt.NDArray[np.bool_] = (score > best_score) | (
        (score == best_score) & (index < best_index)
    )
    return better


def merge_best(best: BestPartners, span: slice, candidate: BestPartners) -> None:
    """Update ``best[span]`` in place where ``candidate`` is better (tie rule of
    :func:`_better`)."""
    take = _better(best.score[span], best.index[span], candidate.score, candidate.index)
    best.score[span] = np.where(take, candidate.score, best.score[span])
    best.index[span] = np.where(take, candidate.index, best.index[span])


def best_partners(
    items: AtomMatrix, scorer: BlockScorer, identical_score: int, block: int = DEFAULT_BLOCK
) -> BestPartners:
    """Each item's best partner among the *other* items by ``scorer`` (a symmetric function
    of the shared mass and the two masses, from :mod:`grading`).

    The search runs over distinct atom sets: a group stands for its first item, so row order
    among tied groups is row order among items. An item's own group competes separately —
    any other member scores ``identical_score`` against it and is represented by the group's
    first member, or its second when the item is the first.
    """
    if not 0 < block <= MAX_BLOCK:
        raise ValueError(f"block must be in 1..{MAX_BLOCK}")
    n = items.size
    arange = np.arange(n, dtype=np.int64)
    if n == 0:
        return BestPartners(arange, arange)
    group_count = int(items.group.max()) + 1
    first = np.full(group_count, n, dtype=np.int64)
    np.minimum.at(first, items.group, arange)
    is_first = first[items.group] == arange
    second = np.full(group_count, n, dtype=np.int64)
    np.minimum.at(second, items.group, np.where(is_first, n, arange))

    distinct = _best_distinct(items.select(first), scorer, block)
    # Map group results back to items; "no partner" (index == group_count) stays n.
    first_or_none = np.append(first, n)
    best = BestPartners(
        first_or_none[distinct.index][items.group], distinct.score[items.group].copy()
    )
    own_index = np.where(is_first, second[items.group], first[items.group])
    own_score = np.full(n, identical_score, dtype=np.int64)
    own = BestPartners(
        np.where(own_index < n, own_index, n), np.where(own_index < n, own_score, -1)
    )
    merge_best(best, slice(0, n), own)
    return best


def _block_best(
    items: AtomMatrix, rows: slice, columns: slice, scorer: BlockScorer
) -> tuple[BestPartners, BestPartners | None]:
    """Best columns of each row and (off the diagonal) best rows of each column of a block.

    ``scores`` is consumed (modified in place).
    """
    shared = items.binary[rows] @ items.weighted[columns].T
    scores = scorer(shared, items.mass[rows], items.mass[columns])
    diagonal = rows == columns
    if diagonal:
        np.fill_diagonal(scores, -1.0)
    assert rows.start is not None
    assert columns.start is not None
    best_columns = scores.argmax(axis=1)
    row_side = BestPartners(
        best_columns.astype(np.int64) + columns.start,
        scores[np.arange(scores.shape[0]), best_columns].astype(np.int64),
    )
    if diagonal:
        return row_side, None
    # Column side. argmax along axis 0 is slow (strided), so fold row order into the values
    # — key = score·height + (height − 1 − row), exact in float32 for scores ≤ 500 and
    # blocks of up to 2**14 rows — and take one fast max along axis 0: the highest score and,
    # among equal scores, the lowest row.
    height = scores.shape[0]
    scores *= height
    scores += (height - 1 - np.arange(height, dtype=scores.dtype))[:, None]
    top = scores.max(axis=0).astype(np.int64)
    column_score = top // height
    column_side = BestPartners(
        height - 1 - (top - column_score * height) + rows.start, column_score
    )
    return row_side, column_side


def _best_distinct(items: AtomMatrix, scorer: BlockScorer, block: int) -> BestPartners:
    """:func:`best_partners` for items with pairwise distinct atom sets.

    Dice is symmetric, so only blocks on and above the diagonal are computed; each block
    offers candidates to its rows and to its columns, merged with the order-independent tie
    rule. Cost: n²/2 · n_atoms multiply-adds (BLAS already uses every core).
    """
    n = items.size
    best = BestPartners(np.full(n, n, dtype=np.int64), np.full(n, -1, dtype=np.int64))
    spans = [slice(start, min(n, start + block)) for start in range(0, n, block)]
    pairs = [(rows, columns) for i, rows in enumerate(spans) for columns in spans[i:]]

    for rows, columns in pairs:
        row_side, column_side = _block_best(items, rows, columns, scorer)
        merge_best(best, rows, row_side)
        if column_side is not None:
            merge_best(best, columns, column_side)
    return best


@dataclass(frozen=True)
class Neighbourhood:
    """Every item's exact best partner (ties by row order) and ``k`` near neighbours
    (``[n_items, k]``, best first; which of several items tied at the k-th place are kept is
    arbitrary but deterministic — they serve sampling only)."""

    best: BestPartners
    nearest: IntArray


def neighbourhood(
    items: AtomMatrix, k: int, scorer: BlockScorer, block: int = DEFAULT_BLOCK
) -> Neighbourhood:
    """Score every item against all others (full rows, no symmetry or grouping tricks: meant
    for the few thousand images of a split) and keep its best partner and ``k`` nearest."""
    n = items.size
    k = min(k, max(n - 1, 0))
    nearest = np.empty((n, k), dtype=np.int64)
    best = BestPartners(np.full(n, n, dtype=np.int64), np.full(n, -1, dtype=np.int64))
    if k == 0:
        return Neighbourhood(best, nearest)
    for start in range(0, n, block):
        stop = min(n, start + block)
        shared = items.binary[start:stop] @ items.weighted.T
        scores = scorer(shared, items.mass[start:stop], items.mass)
        local = np.arange(stop - start)
        scores[local, local + start] = -1.0
        # argmax along rows returns the first (lowest-index) maximum: the tie rule.
        columns = scores.argmax(axis=1)
        best.index[start:stop] = columns
        best.score[start:stop] = scores[local, columns].astype(np.int64)
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        top_scores = np.take_along_axis(scores, top, axis=1)
        order = np.lexsort((top, -top_scores), axis=1)  # best first, then row order
        nearest[start:stop] = np.take_along_axis(top, order, axis=1)
    return Neighbourhood(best, nearest)
