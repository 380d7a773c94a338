"""The graded judgment functions (0–5, in integer hundredths), shared by generator and oracle.

All three are exact functions of integers, rounded half up to hundredths the way CxC's
aggregated means are printed, so ``hundredths / 100`` is both the CSV's ``agg_score`` and the
oracle's answer. With ``d`` the similarity-weighted Dice overlap of two atom sets
(``2·shared / (mass_a + mass_b)``, see :mod:`atoms`):

- **STS** (caption–caption): 500 when the two captions assert the same set of facts;
  otherwise ``500·d`` capped at 490 — only paraphrases reach 5.
- **SIS** (image–image): ``500·d(3 − d)/2``, a concave lift of ``d``: scenes share fewer of
  their many atoms than captions do, and the lift puts CxC-like shares of similar image pairs
  above 2.5 while keeping 0 ↦ 0, 1 ↦ 5 and the order of pairs.
- **SITS** (caption–image): if every fact of the caption holds in the image,
  ``300 + 200·(1 − (1 − c)²)`` where ``c`` is the share of the image's coverage mass the
  caption's atoms cover (a fully true caption is always a CxC positive, ≥ 3, and the more of
  the image it describes the closer it gets to 5); otherwise ``260 ×`` the mean degree of
  truth of its facts, below 2.6 (never a positive). A true caption outranks a false one.

Scalar functions (Python ints) serve the oracle and the rating of sampled pairs. The ``*_block``
and ``*_array`` twins compute the same values over numpy arrays for the generator's exhaustive
searches; they take float arrays holding integers and are exact (see each docstring), which
the tests check against the scalar functions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from scenes.atoms import AtomSet, coverage_mass, similarity_mass
from scenes.facts import DEGREE_UNITS, Fact, degree_units, holds
from scenes.scene import Scene

MAX_SCORE = 500
STS_PARAPHRASE = 500
STS_DISTINCT_CAP = 490
SITS_TRUE_FLOOR = 300
SITS_TRUE_SPAN = 200
SITS_PARTIAL_CEILING = 260

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]
# (shared mass [rows, columns], mass of rows [rows], mass of columns [columns]) → hundredths.
BlockScorer = Callable[[FloatArray, FloatArray, FloatArray], FloatArray]


def round_half_up(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` rounded to the nearest integer, halves up (both ≥ 0)."""
    return (2 * numerator + denominator) // (2 * denominator)


def sts_overlap_hundredths(shared: int, total: int) -> int:
    """STS of captions with different facts: ``min(490, 500·2·shared/total)`` rounded."""
    if total == 0:
        return 0
    return min(STS_DISTINCT_CAP, round_half_up(1000 * shared, total))


def sts_block(shared: FloatArray, mass_rows: FloatArray, mass_columns: FloatArray) -> FloatArray:
    """:func:`sts_overlap_hundredths` over a float32 block; overwrites and returns ``shared``.

    ``floor((2000·shared + total) / (2·total))`` in float32 is exact here: numerator and
    denominator are integers below 2**24 (exactly representable), an integer quotient comes
    out exactly, and any other quotient lies at least ``1/(2·total)`` (≥ 1e-3 for the masses
    that occur) from the next integer — far more than float32's error at values ≤ 500 (3e-5).
    The arithmetic is done in place: these blocks are the bulk of the generator's work.
    """
    total = np.add.outer(mass_rows, mass_columns)
    scores = np.multiply(shared, np.float32(2000.0), out=shared)
    scores += total
    total *= np.float32(2.0)
    scores /= total
    np.floor(scores, out=scores)
    np.minimum(scores, np.float32(STS_DISTINCT_CAP), out=scores)
    return scores


def sis_overlap_hundredths(shared: int, total: int) -> int:
    """SIS: ``500·d(3 − d)/2`` with ``d = 2·shared/total`` — exactly
    ``500·shared·(3·total − 2·shared) / total²`` — rounded."""
    if total == 0:
        return 0
    return round_half_up(500 * shared * (3 * total - 2 * shared), total * total)


def sis_block(shared: FloatArray, mass_rows: FloatArray, mass_columns: FloatArray) -> FloatArray:
    """:func:`sis_overlap_hundredths` over a block, computed in float64 (a new array).

    Numerators stay below 2**53 and any non-integer quotient is at least ``1/(2·total²)``
    (≥ 1e-6 here) from the next integer, against float64's error of about 1e-13: exact.
    """
    total = mass_rows.astype(np.float64)[:, None] + mass_columns.astype(np.float64)[None, :]
    shared64 = shared.astype(np.float64)
    square = total * total
    numerator = 1000.0 * shared64 * (3.0 * total - 2.0 * shared64) + square
    result: FloatArray = np.floor(numerator / (2.0 * square))
    return result


def sts_hundredths(
    facts_a: frozenset[Fact], facts_b: frozenset[Fact], atoms_a: AtomSet, atoms_b: AtomSet
) -> int:
    """STS of two captions given their fact sets and atoms."""
    if facts_a == facts_b:
        return STS_PARAPHRASE
    shared = similarity_mass(atoms_a.atoms & atoms_b.atoms)
    return sts_overlap_hundredths(shared, atoms_a.similarity_mass + atoms_b.similarity_mass)


def sis_hundredths(atoms_a: AtomSet, atoms_b: AtomSet) -> int:
    """SIS of two scenes given their atoms."""
    shared = similarity_mass(atoms_a.atoms & atoms_b.atoms)
    return sis_overlap_hundredths(shared, atoms_a.similarity_mass + atoms_b.similarity_mass)


def sits_true_hundredths(covered: int, image_mass: int) -> int:
    """SITS of a fully true caption covering ``covered`` of the image's ``image_mass``."""
    missing = image_mass - covered
    square = image_mass * image_mass
    return SITS_TRUE_FLOOR + round_half_up(SITS_TRUE_SPAN * (square - missing * missing), square)


def sits_true_hundredths_array(covered: IntArray, image_mass: IntArray) -> IntArray:
    """:func:`sits_true_hundredths` elementwise with broadcasting (int64, exact)."""
    missing = image_mass - covered
    square = image_mass * image_mass
    numerator = SITS_TRUE_SPAN * (square - missing * missing)
    result: IntArray = SITS_TRUE_FLOOR + (2 * numerator + square) // (2 * square)
    return result


def sits_partial_hundredths(degree_units_sum: int, fact_count: int) -> int:
    """SITS of a caption that is not entirely true: 260 × the mean degree of its facts, from
    the sum of their degrees in units of 1/:data:`facts.DEGREE_UNITS`."""
    return round_half_up(SITS_PARTIAL_CEILING * degree_units_sum, DEGREE_UNITS * fact_count)


def sits_hundredths(
    facts: tuple[Fact, ...], caption_atoms: AtomSet, scene: Scene, scene_atoms: AtomSet
) -> int:
    """SITS of a caption (facts and atoms) and a scene (and its atoms)."""
    if all(holds(fact, scene) for fact in facts):
        covered = coverage_mass(caption_atoms.atoms & scene_atoms.atoms)
        return sits_true_hundredths(covered, scene_atoms.coverage_mass)
    units = sum(degree_units(fact, scene) for fact in facts)
    return sits_partial_hundredths(units, len(facts))


def as_score(hundredths: int) -> float:
    """The printed 0–5 score (e.g. 184 → 1.84)."""
    return hundredths / 100
