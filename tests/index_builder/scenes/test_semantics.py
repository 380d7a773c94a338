"""Facts, atoms and graded scores: the scalar definitions and their vectorised twins agree."""

from __future__ import annotations

import numpy as np
import pytest

from index_builder.scenes.atoms import caption_atoms, scene_atoms, similarity_mass
from index_builder.scenes.captions import CAPTIONS_PER_IMAGE, Caption, generate_captions
from index_builder.scenes.facts import (
    DEGREE_UNITS,
    BackgroundFact,
    CountFact,
    Descriptor,
    Fact,
    ObjectFact,
    RelationFact,
    degree_units,
    fact_from_json,
    fact_to_json,
    holds,
)
from index_builder.scenes.grading import (
    STS_DISTINCT_CAP,
    sis_block,
    sis_hundredths,
    sis_overlap_hundredths,
    sits_hundredths,
    sits_true_hundredths,
    sits_true_hundredths_array,
    sts_block,
    sts_hundredths,
    sts_overlap_hundredths,
)
from index_builder.scenes.scene import Scene, sample_scene
from index_builder.scenes.similarity import atom_matrix, best_partners, neighbourhood
from index_builder.scenes.truth import fact_table, pack_scenes


@pytest.fixture(scope="module")
def world() -> tuple[list[Scene], list[Caption]]:
    scenes: list[Scene] = []
    captions: list[Caption] = []
    for seed in range(80):
        rng = np.random.default_rng([5, seed])
        scene = sample_scene(rng)
        scenes.append(scene)
        captions.extend(generate_captions(scene, rng))
    return scenes, captions


def test_every_caption_is_true_of_its_scene_and_its_atoms_are_the_scenes(
    world: tuple[list[Scene], list[Caption]],
) -> None:
    scenes, captions = world
    kinds = set()
    for index, caption in enumerate(captions):
        scene = scenes[index // CAPTIONS_PER_IMAGE]
        assert caption.facts
        assert all(holds(fact, scene) for fact in caption.facts)
        assert caption_atoms(caption.facts).atoms <= scene_atoms(scene).atoms
        kinds.add(caption.kind)
    assert kinds == {"full", "objects", "object", "relation", "count"}


def test_atoms_of_a_true_caption_are_always_a_subset_of_the_scene(
    world: tuple[list[Scene], list[Caption]],
) -> None:
    scenes, captions = world
    for caption in captions[::3]:
        atoms = caption_atoms(caption.facts).atoms
        for scene in scenes:
            if all(holds(fact, scene) for fact in caption.facts):
                assert atoms <= scene_atoms(scene).atoms


def test_degree_is_full_exactly_when_a_fact_holds(
    world: tuple[list[Scene], list[Caption]],
) -> None:
    scenes, captions = world
    for caption in captions[::4]:
        for scene in scenes[::3]:
            for fact in caption.facts:
                units = degree_units(fact, scene)
                assert 0 <= units <= DEGREE_UNITS
                assert (units == DEGREE_UNITS) == holds(fact, scene)


def test_vectorised_truth_equals_scalar_truth(world: tuple[list[Scene], list[Caption]]) -> None:
    scenes, captions = world
    table = fact_table([caption.facts for caption in captions], pack_scenes(scenes))
    all_true = table.all_true(0, len(captions))
    counts = table.true_counts(np.arange(len(captions)))
    for row, caption in enumerate(captions):
        for column, scene in enumerate(scenes):
            truths = [holds(fact, scene) for fact in caption.facts]
            assert all_true[row, column] == all(truths)
            assert counts[row, column] == sum(truths)


def test_surface_relations_are_canonicalised() -> None:
    red_circle, blue_star = Descriptor("circle", "red"), Descriptor("star", "blue")
    left = RelationFact.canonical(red_circle, "left_of", blue_star)
    assert RelationFact.canonical(blue_star, "right_of", red_circle) == left
    above = RelationFact.canonical(red_circle, "above", blue_star)
    assert RelationFact.canonical(blue_star, "below", red_circle) == above
    assert RelationFact.canonical(red_circle, "next_to", blue_star) == RelationFact.canonical(
        blue_star, "next_to", red_circle
    )
    with pytest.raises(ValueError, match="unknown relation"):
        RelationFact.canonical(red_circle, "inside", blue_star)


def test_facts_round_trip_through_json() -> None:
    facts: list[Fact] = [
        ObjectFact(Descriptor("heart", None, "large", "left")),
        RelationFact(Descriptor("circle"), "above", Descriptor(None, "red")),
        CountFact(Descriptor(), 3),
        BackgroundFact("striped", None),
    ]
    assert [fact_from_json(fact_to_json(fact)) for fact in facts] == facts


def test_scenes_round_trip_through_json(world: tuple[list[Scene], list[Caption]]) -> None:
    for scene in world[0][:10]:
        again = Scene.from_json(scene.to_json(96))
        assert again.relations == scene.relations
        assert [(o.shape, o.colour, o.size, o.region) for o in again.objects] == [
            (o.shape, o.colour, o.size, o.region) for o in scene.objects
        ]


def test_block_scorers_equal_the_scalar_functions() -> None:
    rng = np.random.default_rng(0)
    mass_rows = rng.integers(1, 160, size=60).astype(np.float32)
    mass_columns = rng.integers(1, 160, size=70).astype(np.float32)
    limit = np.minimum(mass_rows[:, None], mass_columns[None, :])
    shared = np.floor(rng.random((60, 70)) * (limit + 1)).astype(np.float32)
    shared[0, :] = limit[0, :]  # identical-mass and full-overlap cases
    sts = sts_block(shared.copy(), mass_rows, mass_columns)
    sis = sis_block(shared.copy(), mass_rows, mass_columns)
    for i in range(60):
        for j in range(70):
            s, total = int(shared[i, j]), int(mass_rows[i] + mass_columns[j])
            assert sts[i, j] == sts_overlap_hundredths(s, total)
            assert sis[i, j] == sis_overlap_hundredths(s, total)
    covered = np.arange(0, 90)[:, None]
    image = np.arange(1, 90)[None, :]
    table = sits_true_hundredths_array(covered, image)
    for c in range(90):
        for m in range(max(c, 1), 90):
            assert table[c, m - 1] == sits_true_hundredths(c, m)


def test_score_ranges_and_anchors(world: tuple[list[Scene], list[Caption]]) -> None:
    scenes, captions = world
    atoms = [caption_atoms(caption.facts) for caption in captions]
    own = sits_hundredths(captions[0].facts, atoms[0], scenes[0], scene_atoms(scenes[0]))
    assert 300 <= own <= 500
    facts = [frozenset(caption.facts) for caption in captions]
    assert sts_hundredths(facts[0], facts[0], atoms[0], atoms[0]) == 500
    assert sis_hundredths(scene_atoms(scenes[0]), scene_atoms(scenes[0])) == 500
    for a in range(0, 60, 7):
        for b in range(1, 60, 11):
            value = sts_hundredths(facts[a], facts[b], atoms[a], atoms[b])
            same = facts[a] == facts[b]
            assert value == 500 if same else 0 <= value <= STS_DISTINCT_CAP
            for scene in scenes[:20]:
                value = sits_hundredths(captions[a].facts, atoms[a], scene, scene_atoms(scene))
                true = all(holds(fact, scene) for fact in captions[a].facts)
                assert 300 <= value <= 500 if true else 0 <= value <= 260


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
