"""The integrations' maximal marginal relevance (plain Python) chooses what LangChain's
reference function chooses on the same vectors."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.vectorstores.utils import maximal_marginal_relevance as reference

from crisscross_client.integrations.mmr import maximal_marginal_relevance


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("lambda_mult", [0.0, 0.25, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_the_same_choice_as_langchain_core(seed: int, lambda_mult: float, k: int) -> None:
    rng = np.random.default_rng(seed)
    candidates = rng.normal(size=(12, 16))
    # near-duplicates, so that diversity changes the choice
    candidates[5] = candidates[0] + 0.01 * rng.normal(size=16)
    candidates[6] = candidates[1] + 0.01 * rng.normal(size=16)
    query = rng.normal(size=16)
    expected = reference(query, candidates.tolist(), lambda_mult=lambda_mult, k=k)
    chosen = maximal_marginal_relevance(query.tolist(), candidates.tolist(), lambda_mult, k)
    assert chosen == expected


def test_diversity_skips_a_near_duplicate_that_relevance_takes() -> None:
    candidates = [[1.0, 0.0, 0.0], [0.99, 0.01, 0.0], [0.6, 0.0, 0.8]]
    query = [1.0, 0.0, 0.1]
    assert maximal_marginal_relevance(query, candidates, 1.0, 2) == [0, 1]
    assert maximal_marginal_relevance(query, candidates, 0.3, 2) == [0, 2]


def test_fewer_candidates_than_k_and_none() -> None:
    assert maximal_marginal_relevance([1.0, 0.0], [[0.0, 1.0]], 0.5, 4) == [0]
    assert maximal_marginal_relevance([1.0, 0.0], [], 0.5, 4) == []
    with pytest.raises(ValueError, match="lambda_mult"):
        maximal_marginal_relevance([1.0], [[1.0]], 1.5, 1)
