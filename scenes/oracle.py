"""The oracle: graded scores for any pair of a generated corpus, straight from its ground truth.

It reads only the files (``scenes_<split>.jsonl``), never the generator's memory, and applies
the same graded functions (:mod:`grading`) the CxC tables were rated with, so for every rated
pair ``round(oracle score, 2)`` is the CSV's ``agg_score`` — and for every *unrated* pair it
gives the score a rater would have given.

Why the oracle is perfect on the corpus's own benchmark (proved by the tests, built into the
sampling; see :mod:`scenes.judgments` for the details):

- **Retrieval (t2t, i2i, t2i, i2t, R@1 with CxC positives, ties by row order).** For every
  query the generator searched all targets exhaustively with these functions and rated the
  top one. The top target scores at least as much as any rated partner, so when a query has a
  positive at all, its top target is a rated positive.
- **BISON.** The caption is entirely true of the true image (SITS ≥ 3) and has a false fact
  about the other (SITS < 2.6), so the true image always scores higher.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenes.atoms import AtomSet, caption_atoms, scene_atoms
from scenes.facts import Fact, fact_from_json
from scenes.grading import as_score, sis_hundredths, sits_hundredths, sts_hundredths
from scenes.ids import SPLITS
from scenes.scene import Scene
from scenes.writer import ground_truth_path


@dataclass(frozen=True)
class _CaptionTruth:
    facts: tuple[Fact, ...]
    fact_set: frozenset[Fact]
    atoms: AtomSet


@dataclass(frozen=True)
class _ImageTruth:
    scene: Scene
    atoms: AtomSet


class SceneOracle:
    """Ground-truth scorer over one or more splits of a generated corpus.

    Keys are those of the corpus files: CxC caption keys (``scenes_<split>:sentid:<n>``) and
    image file names (``scenes_<split>_<image_id:012d>.png``). Scores are floats in 0–5 with
    two decimals, like CxC's ``agg_score``.
    """

    def __init__(self, ground_truth: Iterable[Mapping[str, Any]]) -> None:
        """Build from ground-truth image objects (the lines of ``scenes_<split>.jsonl``)."""
        self._captions: dict[str, _CaptionTruth] = {}
        self._images: dict[str, _ImageTruth] = {}
        for record in ground_truth:
            scene = Scene.from_json(record["scene"])
            self._images[str(record["filename"])] = _ImageTruth(scene, scene_atoms(scene))
            for caption in record["captions"]:
                facts = tuple(fact_from_json(fact) for fact in caption["facts"])
                self._captions[str(caption["key"])] = _CaptionTruth(
                    facts, frozenset(facts), caption_atoms(facts)
                )

    @classmethod
    def load(cls, root: Path, splits: Iterable[str] = SPLITS) -> SceneOracle:
        """Read ``<root>/scenes_<split>.jsonl`` for each of ``splits`` that exists."""
        records: list[dict[str, Any]] = []
        for split in splits:
            path = ground_truth_path(root, split)
            if path.exists():
                with path.open(encoding="utf-8") as handle:
                    records.extend(json.loads(line) for line in handle if line.strip())
        if not records:
            raise FileNotFoundError(f"no scenes_<split>.jsonl under {root}")
        return cls(records)

    def _caption(self, key: str) -> _CaptionTruth:
        try:
            return self._captions[key]
        except KeyError:
            raise KeyError(f"unknown caption key {key!r}") from None

    def _image(self, filename: str) -> _ImageTruth:
        try:
            return self._images[filename]
        except KeyError:
            raise KeyError(f"unknown image {filename!r}") from None

    def score(self, caption_key: str, image_filename: str) -> float:
        """SITS: how well the caption describes the image (≥ 3 iff every fact holds)."""
        caption, image = self._caption(caption_key), self._image(image_filename)
        return as_score(sits_hundredths(caption.facts, caption.atoms, image.scene, image.atoms))

    def score_captions(self, key1: str, key2: str) -> float:
        """STS: 5 for captions asserting the same facts, else their atoms' overlap (≤ 4.9)."""
        first, second = self._caption(key1), self._caption(key2)
        return as_score(sts_hundredths(first.fact_set, second.fact_set, first.atoms, second.atoms))

    def score_images(self, filename1: str, filename2: str) -> float:
        """SIS: the overlap of the two scenes' atoms (objects, attributes, relations, counts,
        background)."""
        return as_score(sis_hundredths(self._image(filename1).atoms, self._image(filename2).atoms))
