"""Keyword search: a BM25 index over one text field of a collection's rows.

Rows are appended in row order and never change (a live collection writes a new row for a new
version of an item, and a bundle's rows are fixed), so the index only grows; which rows count
is a mask the caller passes with each query (the rows alive at a live view's sequence, or all of
a bundle's). The collection statistics BM25 reads — the number of documents, their average
length and each term's document frequency — are taken over the rows of that mask at query time,
so a deleted or replaced item neither matches nor weighs on the others' scores, and the scores
are exactly those of an index built afresh from the items alive at that moment. Nothing is
stored: the index is made from the stored texts when a collection is first searched by keyword
and follows the live collection's rows as they are written, so it cannot drift from them across
a crash (the log's replay rebuilds the rows) or a compaction (a new segment, a new index).

Scoring is Lucene's BM25 (also bm25s' ``lucene`` method): for each distinct query term ``t``
found in document ``d``,

    idf(t) * tf / (tf + k1 * (1 - b + b * len(d) / avglen)),
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

with ``k1 = 1.5``, ``b = 0.75``. Text is cut into lowercase Unicode word tokens
(:func:`tokens`); there is no stemming and no stop-word list, so a query scores exactly the
words it holds.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

K1 = 1.5
"""BM25's term-frequency saturation."""
B = 0.75
"""BM25's length normalisation."""

_WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """The lowercase word tokens of ``text`` (runs of Unicode letters, digits and ``_``)."""
    return _WORD.findall(text.lower())


def query_terms(text: str) -> list[str]:
    """The distinct tokens of a query, in first-seen order: a repeated word counts once."""
    return list(dict.fromkeys(tokens(text)))


@dataclass
class _Postings:
    """One term's rows (ascending) and its frequency in each; numpy copies made on demand."""

    rows: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    _arrays: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None

    def arrays(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        cached = self._arrays
        if cached is None or len(cached[0]) != len(self.rows):
            cached = (
                np.asarray(self.rows, dtype=np.int64),
                np.asarray(self.counts, dtype=np.float64),
            )
            self._arrays = cached
        return cached


@dataclass(frozen=True)
class LexicalHits:
    """Rows that hold at least one query term, and their BM25 scores (float64), unordered."""

    rows: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]


class LexicalIndex:
    """Term postings of rows ``0..rows - 1`` (see the module docstring). Appending and scoring
    are serialised by one lock, so a search thread may extend the index it reads."""

    def __init__(self) -> None:
        self._postings: dict[str, _Postings] = {}
        self._lengths: list[int] = []
        self._length_array: npt.NDArray[np.float64] = np.empty(0, dtype=np.float64)
        self._all_alive: npt.NDArray[np.bool_] = np.empty(0, dtype=np.bool_)
        self.lock = threading.Lock()
        """Held by whoever appends and scores (the index is shared by concurrent searches)."""

    @property
    def rows(self) -> int:
        """Rows indexed so far."""
        return len(self._lengths)

    def append(self, texts: Iterable[str | None]) -> None:
        """Index the next rows, one text each (None: a row without text, which never
        matches but counts as a document of length 0). Caller holds :attr:`lock`."""
        for text in texts:
            row = len(self._lengths)
            counted = Counter(tokens(text)) if text else Counter[str]()
            for term, count in counted.items():
                postings = self._postings.get(term)
                if postings is None:
                    postings = self._postings[term] = _Postings()
                postings.rows.append(row)
                postings.counts.append(count)
            self._lengths.append(sum(counted.values()))

    def all_alive(self) -> npt.NDArray[np.bool_]:
        """A read-only all-true mask of the rows indexed (a bundle collection's rows are all
        alive), kept between searches and made again only after rows are appended. Caller
        holds :attr:`lock`."""
        if len(self._all_alive) != self.rows:
            mask = np.ones(self.rows, dtype=np.bool_)
            mask.flags.writeable = False
            self._all_alive = mask
        return self._all_alive

    def _lengths_of(self, rows: int) -> npt.NDArray[np.float64]:
        if len(self._length_array) != len(self._lengths):
            self._length_array = np.asarray(self._lengths, dtype=np.float64)
        return self._length_array[:rows]

    def score(self, terms: Sequence[str], alive: npt.NDArray[np.bool_]) -> LexicalHits:
        """BM25 scores of the rows of ``alive`` (one boolean per row ``0..len(alive) - 1``,
        at most :attr:`rows`) holding any of ``terms`` (distinct), with the statistics of the
        alive rows. Caller holds :attr:`lock`."""
        size = len(alive)
        if size > self.rows:
            raise ValueError(f"{size} rows asked of a lexical index of {self.rows}")
        documents = int(np.count_nonzero(alive))
        empty = LexicalHits(np.empty(0, np.int64), np.empty(0, np.float64))
        if documents == 0 or not terms:
            return empty
        lengths = self._lengths_of(size)
        average = float(lengths[alive].sum()) / documents
        norm = K1 * (1.0 - B + B * lengths / average) if average > 0 else np.full(size, K1)
        scores = np.zeros(size, dtype=np.float64)
        matched = np.zeros(size, dtype=np.bool_)
        for term in terms:
            postings = self._postings.get(term)
            if postings is None:
                continue
            rows, counts = postings.arrays()
            cut = int(np.searchsorted(rows, size))
            rows, counts = rows[:cut], counts[:cut]
            live = alive[rows]
            rows, counts = rows[live], counts[live]
            if len(rows) == 0:
                continue
            frequency = len(rows)
            idf = np.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))
            # A term's rows are distinct, so one fancy-indexed add per term is exact; the terms
            # add in query order whatever the rows.
            scores[rows] += idf * counts / (counts + norm[rows])
            matched[rows] = True
        found = np.flatnonzero(matched).astype(np.int64)
        return LexicalHits(found, scores[found])


def best(
    hits: LexicalHits, keep: npt.NDArray[np.bool_] | None, depth: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], int]:
    """The ``depth`` best of ``hits`` among the rows ``keep`` keeps (None: all), ordered by
    score descending then row ascending (the tie rule), and how many hits ``keep`` keeps."""
    rows, scores = hits.rows, hits.scores
    if keep is not None and len(rows):
        kept = keep[rows]
        rows, scores = rows[kept], scores[kept]
    order = np.lexsort((rows, -scores))[:depth]
    return rows[order], scores[order], len(rows)


@dataclass
class LexicalIndexes:
    """A collection's keyword indexes, one per field, made on first use (see
    :mod:`service.engine.rank.lexical_index`). ``owner`` is what the rows are numbered in (a live
    collection's segment): a new owner (after a compaction) starts them afresh."""

    owner: object | None = None
    by_field: dict[str, LexicalIndex] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, owner: object, field_name: str) -> LexicalIndex:
        """The index of ``field_name`` over ``owner``'s rows (a new one for a new owner)."""
        with self._lock:
            if owner is not self.owner:
                self.owner, self.by_field = owner, {}
            index = self.by_field.get(field_name)
            if index is None:
                index = self.by_field[field_name] = LexicalIndex()
            return index
