"""BISON-format minimal pairs: a caption, its image, and a near-miss image it does not fit.

For every image one of its captions is drawn at random (seeded); the *foil* is the image of
the split that makes the most of the caption's facts true while making at least one false,
and among those the one most similar to the true image (SIS); ties by row order. The true
image then scores ≥ 3 under SITS (the caption is entirely true of it) and the foil < 2.6 (some
fact is false), so an oracle that scores pairs with SITS is right on every row. Which of the
two positions holds the true image is a seeded coin flip.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from formats.bison import BisonRow
from formats.ids import scenes_caption_source
from scenes.corpus import SplitCorpus, stage_rng
from scenes.grading import (
    SITS_PARTIAL_CEILING,
    SITS_TRUE_FLOOR,
    sis_block,
    sits_hundredths,
)
from scenes.ids import SPLIT_CODES
from scenes.judgments import JudgmentConsistencyError, SplitSearch

IntArray = npt.NDArray[np.int64]
BISON_STAGE = 3
BLOCK = 512


def _foils(search: SplitSearch, images: IntArray, captions: IntArray) -> IntArray:
    """``[len(images)]``: for each (image row, caption row) pair, the best foil's image row,
    or -1 when the caption is true of every image."""
    true_counts = search.facts.true_counts(captions)
    all_true = true_counts == search.facts.fact_counts[captions][:, None]
    atoms = search.scene_atoms
    similarity = sis_block(
        atoms.binary[images] @ atoms.weighted.T, atoms.mass[images], atoms.mass
    ).astype(np.int64)
    # Most facts true first, then most similar to the true image (SIS ≤ 500 < 1000).
    key = np.where(all_true, -1, true_counts * 1000 + similarity)
    best = key.argmax(axis=1)
    found = key[np.arange(len(images)), best] >= 0
    result: IntArray = np.where(found, best, -1)
    return result


def build_bison(
    corpus: SplitCorpus, search: SplitSearch, progress: bool = False
) -> tuple[BisonRow, ...]:
    """One minimal pair per image of the split (images whose captions are all true of every
    image — never generated in practice — get none)."""
    rng = stage_rng(corpus.seed, corpus.split, BISON_STAGE)
    n_images = len(corpus.images)
    # Each image tries its captions in a random order until one has a foil.
    orders = np.stack([rng.permutation(len(rows)) for rows in corpus.image_captions])
    flips = rng.random(n_images) < 0.5
    rows: list[BisonRow] = []
    for start in tqdm(
        range(0, n_images, BLOCK),
        desc=f"{corpus.split}: BISON",
        disable=not progress,
        leave=False,
    ):
        images = np.arange(start, min(n_images, start + BLOCK))
        chosen = np.full(len(images), -1, dtype=np.int64)
        foil = np.full(len(images), -1, dtype=np.int64)
        for attempt in range(orders.shape[1]):
            pending = foil < 0
            if not pending.any():
                break
            captions = np.array(
                [corpus.image_captions[int(i)][int(orders[i, attempt])] for i in images[pending]],
                dtype=np.int64,
            )
            found = _foils(search, images[pending], captions)
            chosen[pending] = np.where(found >= 0, captions, chosen[pending])
            foil[pending] = found
        for offset, image in enumerate(images):
            if foil[offset] < 0:
                continue
            rows.append(
                _row(
                    corpus,
                    int(image),
                    int(chosen[offset]),
                    int(foil[offset]),
                    bool(flips[image]),
                    len(rows),
                )
            )
    return tuple(rows)


def _row(
    corpus: SplitCorpus, image: int, caption: int, foil: int, true_first: bool, number: int
) -> BisonRow:
    captions, atoms = corpus.captions, corpus.caption_atom_sets
    scenes, scene_atoms = corpus.scenes, corpus.scene_atom_sets
    true_score = sits_hundredths(
        captions[caption].facts, atoms[caption], scenes[image], scene_atoms[image]
    )
    foil_score = sits_hundredths(
        captions[caption].facts, atoms[caption], scenes[foil], scene_atoms[foil]
    )
    if true_score < SITS_TRUE_FLOOR or foil_score > SITS_PARTIAL_CEILING:
        raise JudgmentConsistencyError(
            f"BISON {corpus.caption_keys[caption]}: true {true_score}, foil {foil_score}"
        )
    true_id = corpus.images[image].image_id
    foil_id = corpus.images[foil].image_id
    first, second = (true_id, foil_id) if true_first else (foil_id, true_id)
    caption_index = caption - corpus.image_captions[image][0]
    return BisonRow(
        bison_id=SPLIT_CODES[corpus.split] * 10_000_000 + number,
        caption=captions[caption].text,
        image_id_0=first,
        image_id_1=second,
        true_image_id=true_id,
        true_image_split=corpus.split,
        caption_id=corpus.images[image].sentid(caption_index),
        caption_id_source=scenes_caption_source(corpus.split),
    )
