"""Exhaustive partner search equals a brute-force search."""

from __future__ import annotations

from scenes.atoms import caption_atoms, scene_atoms, similarity_mass
from scenes.captions import Caption
from scenes.grading import (
    STS_DISTINCT_CAP,
    sis_block,
    sis_overlap_hundredths,
    sts_block,
    sts_overlap_hundredths,
)
from scenes.scene import Scene
from scenes.similarity import atom_matrix, best_partners, neighbourhood


def test_best_partners_equal_a_brute_force_search(
    world: tuple[list[Scene], list[Caption]],
) -> None:
    atoms = [caption_atoms(caption.facts) for caption in world[1][:240]]
    atoms += atoms[:15]  # duplicated atom sets exercise the group logic and its ties
    found = best_partners(atom_matrix(atoms), sts_block, STS_DISTINCT_CAP, block=64)
    for query, mine in enumerate(atoms):
        best, best_index = -1, len(atoms)
        for other, theirs in enumerate(atoms):
            if other != query:
                shared = similarity_mass(mine.atoms & theirs.atoms)
                value = sts_overlap_hundredths(
                    shared, mine.similarity_mass + theirs.similarity_mass
                )
                if value > best:
                    best, best_index = value, other
        assert (int(found.score[query]), int(found.index[query])) == (best, best_index)


def test_neighbourhood_best_equals_a_brute_force_search(
    world: tuple[list[Scene], list[Caption]],
) -> None:
    atoms = [scene_atoms(scene) for scene in world[0]]
    atoms += atoms[:5]  # identical scenes tie at 5.0; the lower row must win
    found = neighbourhood(atom_matrix(atoms), 6, sis_block, block=32)
    for query, mine in enumerate(atoms):
        scores = [
            -1
            if other == query
            else sis_overlap_hundredths(
                similarity_mass(mine.atoms & theirs.atoms),
                mine.similarity_mass + theirs.similarity_mass,
            )
            for other, theirs in enumerate(atoms)
        ]
        best = max(scores)
        assert (int(found.best.score[query]), int(found.best.index[query])) == (
            best,
            scores.index(best),
        )
        assert [scores[int(i)] for i in found.nearest[query]] == sorted(
            (scores[int(i)] for i in found.nearest[query]), reverse=True
        )
        assert scores[int(found.nearest[query][0])] == best
