"""CxC-format graded judgments of a split: which pairs are rated, and their scores.

Scores come from :mod:`grading` (derived from scene content only). Pairs are sampled the way
CxC sampled them, with CxC's ``sampling_method`` labels and roughly its proportions (CxC val,
for 5,000 images: 25,000 ``c2c_cocaption`` + 19,009 ``c2c_isim`` STS rows, 42,767 ``i2i_csim``
SIS rows, 25,000 ``c2i_original`` + 19,722 ``c2i_intrasim`` SITS rows):

- ``c2c_cocaption``: the captions of each image in one random cycle (each caption is first in
  one pair and second in another, as in CxC);
- ``c2c_isim``: captions of different images whose images are near neighbours (SIS);
- ``i2i_csim``: images whose captions are near neighbours (overlap of the images' pooled
  caption atoms), 6–13 per query image;
- ``c2i_original``: every caption with its own image (all of them, as in CxC);
- ``c2i_intrasim``: a caption with a near neighbour (SIS) of its own image.

Neighbour-sampled rows fill ``c2c_isim`` and ``c2i_intrasim`` up to CxC's share per caption,
and are at least 0.2 per caption, so the tables keep low and middling scores beside the
high-scoring top-target rows described next.

**The oracle guarantee.** Retrieval over a split ranks *every* target by score, ties broken by
row order, and counts a hit when the top target is a rated positive (STS/SITS ≥ 3, SIS ≥ 2.5).
So that the oracle — these same graded functions — reaches R@1 = 100 % in all four directions,
each query's *top* target under the graded function (found by exhaustive search:
:mod:`similarity` for STS/SIS, :mod:`truth` for SITS) is always added to the rated pairs:

- t2t: each caption with its best other caption — the first paraphrase in row order (same
  facts: 5.0, while different facts score at most 4.9) if there is one, else the best atom
  overlap; as ``c2c_cocaption`` when it belongs to the same image, else ``c2c_isim``;
- i2i: each image with its best other image;
- t2i: each caption with its best image (among the images it is entirely true of — its own
  image is one — the one it covers most);
- i2t: each image with its best caption (among the captions entirely true of it, the one
  covering it most).

The top target's score is the query's maximum over all targets, hence at least the score of
any rated partner; if the query has any positive at all, its top target is a positive too, and
it is rated. Extra pairs can only add positives to other queries, never change a top target.
Every selected pair is re-scored with the scalar function and must equal the vectorised search
(an internal consistency check that raises on mismatch).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from scenes.atoms import AtomSet
from scenes.corpus import SplitCorpus, stage_rng
from scenes.facts import Fact
from scenes.grading import (
    STS_DISTINCT_CAP,
    STS_PARAPHRASE,
    sis_block,
    sis_hundredths,
    sits_hundredths,
    sits_true_hundredths_array,
    sts_block,
    sts_hundredths,
)
from scenes.similarity import (
    AtomMatrix,
    BestPartners,
    atom_matrix,
    best_partners,
    merge_best,
    neighbourhood,
)
from scenes.truth import FactTable, fact_table, pack_scenes

IntArray = npt.NDArray[np.int64]

STS_ISIM_PER_CAPTION = 0.76  # CxC val: 19,009 c2c_isim rows for 25,000 captions
SITS_INTRASIM_PER_CAPTION = 0.79  # CxC val: 19,722 c2i_intrasim rows for 25,000 captions
SIS_ROWS_PER_IMAGE = (6, 13)  # CxC val: ~8.6 i2i_csim rows per query image (range, inclusive)
SAMPLED_MINIMUM = 0.2  # neighbour-sampled c2c_isim / c2i_intrasim rows per caption, at least
NEIGHBOURS = 16  # candidate pool of near neighbours for sampled pairs
TRUTH_BLOCK = 1024

# Stage numbers of the seeded streams (see corpus.stage_rng).
STS_STAGE = 0
SIS_STAGE = 1
SITS_STAGE = 2


class JudgmentConsistencyError(RuntimeError):
    """The vectorised search and the scalar graded function disagree (a bug)."""


@dataclass(frozen=True)
class Rating:
    """One rated pair: item keys, score in hundredths (0–500), CxC sampling method."""

    left: str
    right: str
    hundredths: int
    method: str


@dataclass(frozen=True)
class SplitJudgments:
    """The three CxC tables of one split."""

    sts: tuple[Rating, ...]
    sis: tuple[Rating, ...]
    sits: tuple[Rating, ...]


@dataclass(frozen=True)
class SplitSearch:
    """Exhaustive-search results a split's judgments and BISON rows are built from.

    Attributes:
        caption_partner: ``[n_captions]`` best other caption (t2t top target).
        image_partner: ``[n_images]`` best other image (i2i top target).
        caption_best_image: ``[n_captions]`` best image (t2i top target).
        image_best_caption: ``[n_images]`` best caption (i2t top target).
        image_neighbours: ``[n_images, k]`` nearest images by SIS (best first).
        caption_neighbours: ``[n_images, k]`` nearest images by pooled caption atoms.
        facts: truth of every caption fact against every image.
        scene_atoms: the scenes packed for SIS.
    """

    caption_partner: IntArray
    caption_partner_score: IntArray
    image_partner: IntArray
    image_partner_score: IntArray
    caption_best_image: IntArray
    caption_best_image_score: IntArray
    image_best_caption: IntArray
    image_best_caption_score: IntArray
    image_neighbours: IntArray
    caption_neighbours: IntArray
    facts: FactTable
    scene_atoms: AtomMatrix


def _paraphrase_partners(corpus: SplitCorpus) -> IntArray:
    """For every caption, the first *other* caption asserting the same fact set (-1: none)."""
    members: dict[frozenset[Fact], list[int]] = {}
    for row, facts in enumerate(corpus.caption_fact_sets):
        members.setdefault(facts, []).append(row)
    partner = np.full(len(corpus.captions), -1, dtype=np.int64)
    for rows in members.values():
        if len(rows) > 1:
            for row in rows:
                partner[row] = rows[1] if row == rows[0] else rows[0]
    return partner


def _sits_search(
    corpus: SplitCorpus, facts: FactTable, threads: int, progress: bool
) -> tuple[BestPartners, BestPartners]:
    """t2i and i2t top targets under SITS, ties by row order: ``(best image of every caption,
    best caption of every image)``.

    Only entirely true pairs can be top targets (they score ≥ 3, false ones < 2.6, and every
    caption is true of its own image). For a true pair the caption's atoms are a subset of the
    scene's, so its coverage is the caption's own coverage mass and the score is a function of
    (caption mass, image mass) only: a small lookup table.
    """
    caption_mass = np.array(
        [atoms.coverage_mass for atoms in corpus.caption_atom_sets], dtype=np.int64
    )
    image_mass = np.array([atoms.coverage_mass for atoms in corpus.scene_atom_sets], dtype=np.int64)
    # Scenes always have coverage mass > 0; the table's mass-0 column is never looked up.
    table = sits_true_hundredths_array(
        np.arange(int(caption_mass.max()) + 1)[:, None],
        np.maximum(np.arange(int(image_mass.max()) + 1), 1)[None, :],
    ).astype(np.int16)
    n_captions, n_images = len(caption_mass), len(image_mass)
    spans = [
        slice(start, min(n_captions, start + TRUTH_BLOCK))
        for start in range(0, n_captions, TRUTH_BLOCK)
    ]

    def work(span: slice) -> tuple[BestPartners, BestPartners]:
        assert span.start is not None
        true = facts.all_true(span.start, span.stop)
        scores = np.where(true, table[caption_mass[span]][:, image_mass], np.int16(-1))
        columns = scores.argmax(axis=1)
        rows = scores.argmax(axis=0)
        return (
            BestPartners(
                columns.astype(np.int64),
                scores[np.arange(scores.shape[0]), columns].astype(np.int64),
            ),
            BestPartners(
                rows.astype(np.int64) + span.start,
                scores[rows, np.arange(n_images)].astype(np.int64),
            ),
        )

    best_image = BestPartners(
        np.empty(n_captions, dtype=np.int64), np.empty(n_captions, dtype=np.int64)
    )
    best_caption = BestPartners(
        np.full(n_images, n_captions, dtype=np.int64), np.full(n_images, -1, dtype=np.int64)
    )
    with ThreadPoolExecutor(max(1, threads)) as executor:
        results = executor.map(work, spans)
        for span, (image_side, caption_side) in tqdm(
            zip(spans, results, strict=True),
            total=len(spans),
            desc=f"{corpus.split}: caption-image search",
            disable=not progress,
            leave=False,
        ):
            best_image.index[span] = image_side.index
            best_image.score[span] = image_side.score
            merge_best(best_caption, slice(0, n_images), caption_side)
    return best_image, best_caption


def search_split(corpus: SplitCorpus, threads: int = 1, progress: bool = False) -> SplitSearch:
    """Run the exhaustive searches over one split (the expensive part of judgments)."""
    caption_atoms = atom_matrix(corpus.caption_atom_sets)
    found = best_partners(caption_atoms, sts_block, STS_DISTINCT_CAP)
    paraphrase = _paraphrase_partners(corpus)
    has_paraphrase = paraphrase >= 0
    caption_partner = np.where(has_paraphrase, paraphrase, found.index)
    caption_partner_score = np.where(has_paraphrase, STS_PARAPHRASE, found.score)

    scenes = atom_matrix(corpus.scene_atom_sets)
    images = neighbourhood(scenes, NEIGHBOURS, sis_block)
    pooled = atom_matrix(
        [
            AtomSet.of(atom for row in rows for atom in corpus.caption_atom_sets[row].atoms)
            for rows in corpus.image_captions
        ]
    )
    caption_neighbours = neighbourhood(pooled, NEIGHBOURS, sts_block).nearest

    facts = fact_table([caption.facts for caption in corpus.captions], pack_scenes(corpus.scenes))
    best_image, best_caption = _sits_search(corpus, facts, threads, progress)
    return SplitSearch(
        caption_partner=caption_partner,
        caption_partner_score=caption_partner_score,
        image_partner=images.best.index,
        image_partner_score=images.best.score,
        caption_best_image=best_image.index,
        caption_best_image_score=best_image.score,
        image_best_caption=best_caption.index,
        image_best_caption_score=best_caption.score,
        image_neighbours=images.nearest,
        caption_neighbours=caption_neighbours,
        facts=facts,
        scene_atoms=scenes,
    )


class _PairBook:
    """Collects the rated pairs of one table, each (unordered, for STS/SIS) pair once."""

    def __init__(
        self,
        keys_left: tuple[str, ...],
        keys_right: tuple[str, ...],
        score: Callable[[int, int], int],
        symmetric: bool,
    ) -> None:
        self._left, self._right = keys_left, keys_right
        self._score = score
        self._symmetric = symmetric
        self._seen: set[tuple[int, int]] = set()
        self.ratings: list[Rating] = []
        self.methods: dict[str, int] = {}

    def _key(self, left: int, right: int) -> tuple[int, int]:
        return (min(left, right), max(left, right)) if self._symmetric else (left, right)

    def add(self, left: int, right: int, method: str, expected: int | None = None) -> bool:
        """Score and rate a pair unless it is rated already; returns whether it was added.

        ``expected`` is the score the vectorised search found; a different scalar score
        raises :class:`JudgmentConsistencyError`.
        """
        key = self._key(left, right)
        if expected is None and key in self._seen:
            return False
        hundredths = self._score(left, right)
        if expected is not None and expected != hundredths:
            raise JudgmentConsistencyError(
                f"{self._left[left]} / {self._right[right]}: search found {expected}, "
                f"scalar graded function gives {hundredths}"
            )
        if key in self._seen:
            return False
        self._seen.add(key)
        self.ratings.append(Rating(self._left[left], self._right[right], hundredths, method))
        self.methods[method] = self.methods.get(method, 0) + 1
        return True

    def shuffled(self, rng: np.random.Generator) -> tuple[Rating, ...]:
        """The ratings in a seeded random order (CxC's files are not grouped by method)."""
        order = rng.permutation(len(self.ratings))
        return tuple(self.ratings[int(k)] for k in order)


def _sampled_rows(current: int, per_item: float, minimum: float, items: int) -> int:
    """How many neighbour-sampled rows to add: up to CxC's proportion ``per_item`` per item
    in total, but at least ``minimum`` per item so low and middling scores stay represented
    beside the (high-scoring) top-target rows."""
    return max(round(per_item * items) - current, round(minimum * items))


def _sts_table(corpus: SplitCorpus, search: SplitSearch) -> tuple[Rating, ...]:
    rng = stage_rng(corpus.seed, corpus.split, STS_STAGE)
    captions, atoms = corpus.captions, corpus.caption_atom_sets
    fact_sets = corpus.caption_fact_sets

    def score(a: int, b: int) -> int:
        return sts_hundredths(fact_sets[a], fact_sets[b], atoms[a], atoms[b])

    book = _PairBook(corpus.caption_keys, corpus.caption_keys, score, symmetric=True)
    # As in CxC, the co-caption pairs of an image form one random cycle: every caption is
    # the first item of one pair and the second of another.
    for rows in corpus.image_captions:
        cycle = [int(row) for row in rng.permutation(rows)]
        for position, query in enumerate(cycle):
            book.add(query, cycle[(position + 1) % len(cycle)], "c2c_cocaption")
    image_of = corpus.caption_image
    for query in range(len(captions)):
        partner = int(search.caption_partner[query])
        method = "c2c_cocaption" if image_of[partner] == image_of[query] else "c2c_isim"
        book.add(query, partner, method, int(search.caption_partner_score[query]))

    wanted = _sampled_rows(
        book.methods.get("c2c_isim", 0), STS_ISIM_PER_CAPTION, SAMPLED_MINIMUM, len(captions)
    )
    target = book.methods.get("c2c_isim", 0) + wanted
    for _ in range(8 * len(captions)):
        if book.methods.get("c2c_isim", 0) >= target:
            break
        query = int(rng.integers(len(captions)))
        neighbours = search.image_neighbours[int(image_of[query])]
        other_rows = corpus.image_captions[int(neighbours[int(rng.integers(len(neighbours)))])]
        book.add(query, other_rows[int(rng.integers(len(other_rows)))], "c2c_isim")
    return book.shuffled(rng)


def _sis_table(corpus: SplitCorpus, search: SplitSearch) -> tuple[Rating, ...]:
    rng = stage_rng(corpus.seed, corpus.split, SIS_STAGE)
    atoms = corpus.scene_atom_sets

    def score(a: int, b: int) -> int:
        return sis_hundredths(atoms[a], atoms[b])

    book = _PairBook(corpus.image_keys, corpus.image_keys, score, symmetric=True)
    for query in range(len(atoms)):
        expected = int(search.image_partner_score[query])
        book.add(query, int(search.image_partner[query]), "i2i_csim", expected)
    low, high = SIS_ROWS_PER_IMAGE
    for query in range(len(atoms)):
        wanted = int(rng.integers(low, high + 1)) - 1  # the top partner is one of them
        for other in rng.permutation(search.caption_neighbours[query])[:wanted]:
            book.add(query, int(other), "i2i_csim")
    return book.shuffled(rng)


def _sits_table(corpus: SplitCorpus, search: SplitSearch) -> tuple[Rating, ...]:
    rng = stage_rng(corpus.seed, corpus.split, SITS_STAGE)
    captions, caption_atoms = corpus.captions, corpus.caption_atom_sets
    scenes, atoms = corpus.scenes, corpus.scene_atom_sets

    def score(caption: int, image: int) -> int:
        return sits_hundredths(
            captions[caption].facts, caption_atoms[caption], scenes[image], atoms[image]
        )

    book = _PairBook(corpus.caption_keys, corpus.image_keys, score, symmetric=False)
    image_of = corpus.caption_image
    for caption in range(len(captions)):
        book.add(caption, int(image_of[caption]), "c2i_original")
    for caption in range(len(captions)):
        expected = int(search.caption_best_image_score[caption])
        book.add(caption, int(search.caption_best_image[caption]), "c2i_intrasim", expected)
    for image in range(len(scenes)):
        expected = int(search.image_best_caption_score[image])
        book.add(int(search.image_best_caption[image]), image, "c2i_intrasim", expected)

    wanted = _sampled_rows(
        book.methods.get("c2i_intrasim", 0),
        SITS_INTRASIM_PER_CAPTION,
        SAMPLED_MINIMUM,
        len(captions),
    )
    target = book.methods.get("c2i_intrasim", 0) + wanted
    for _ in range(8 * len(captions)):
        if book.methods.get("c2i_intrasim", 0) >= target:
            break
        caption = int(rng.integers(len(captions)))
        neighbours = search.image_neighbours[int(image_of[caption])]
        book.add(caption, int(neighbours[int(rng.integers(len(neighbours)))]), "c2i_intrasim")
    return book.shuffled(rng)


def build_judgments(
    corpus: SplitCorpus, search: SplitSearch, progress: bool = False
) -> SplitJudgments:
    """Sample and score the STS, SIS and SITS tables of a split (see the module docstring)."""
    stages: list[tuple[str, Callable[[SplitCorpus, SplitSearch], tuple[Rating, ...]]]] = [
        ("STS", _sts_table),
        ("SIS", _sis_table),
        ("SITS", _sits_table),
    ]
    tables = {}
    for name, make in tqdm(
        stages, desc=f"{corpus.split}: judgments", disable=not progress, leave=False
    ):
        tables[name] = make(corpus, search)
    return SplitJudgments(sts=tables["STS"], sis=tables["SIS"], sits=tables["SITS"])
