"""The generator's ground-truth oracle, run through the harness's own metric code.

If the scenes corpus's judgments, BISON pairs and the benchmark's task definitions agree, a
scorer that knows the truth gets R@1 = 1 on every retrieval task and BISON accuracy = 1. A
mismatch anywhere (a positive the oracle does not rank first, a BISON row whose "true" image
the truth does not prefer) shows up here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from evaluation.data.corpus import load_cxc_data
from evaluation.in_memory import ScoreFn, Side, evaluate_with_scorer
from scenes.generate import GenerationConfig, generate_scenes
from scenes.oracle import SceneOracle

RETRIEVAL = ("t2t", "t2t_cocaptions", "i2t", "t2i", "i2i")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("oracle") / "scenes"
    generate_scenes(
        GenerationConfig(
            out=root,
            seed=3,
            sizes={"train": 0, "val": 150, "test": 0},
            workers=1,
            judgment_splits=("val",),
            progress=False,
        )
    )
    return root


def oracle_scorer(oracle: SceneOracle) -> ScoreFn:
    def score_fn(left: Sequence[Side], right: Sequence[Side]) -> np.ndarray:
        scores = np.empty((len(left), len(right)), dtype=np.float64)
        for i, a in enumerate(left):
            for j, b in enumerate(right):
                assert a.id is not None
                assert b.id is not None
                if a.collection == b.collection == "captions":
                    scores[i, j] = oracle.score_captions(a.id, b.id)
                elif a.collection == b.collection == "images":
                    scores[i, j] = oracle.score_images(a.id, b.id)
                elif a.collection == "captions":
                    scores[i, j] = oracle.score(a.id, b.id)
                else:
                    scores[i, j] = oracle.score(b.id, a.id)
        return scores

    return score_fn


def test_the_oracle_is_perfect_under_the_harness_metrics(corpus: Path) -> None:
    data = load_cxc_data(corpus, "val", dataset="scenes")
    oracle = SceneOracle.load(corpus, splits=("val",))
    result = evaluate_with_scorer(
        data, oracle_scorer(oracle), tasks=(*RETRIEVAL, "bison"), bootstrap_samples=10
    )
    assert not result.skipped
    for task in RETRIEVAL:
        entry = result.tasks[task]
        assert entry["queries"] > 0, task
        assert entry["R@1"] == 1.0, (task, entry)
    bison = result.tasks["bison"]
    assert bison["rows"] > 0
    assert bison["skipped"] == 0
    assert bison["accuracy"] == 1.0
