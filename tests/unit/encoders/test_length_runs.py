"""Cutting length-sorted texts into encoder runs: every row once, the least modelled cost."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from encoders.length_runs import (
    CPU_RUN_OVERHEAD_TOKENS,
    GPU_RUN_OVERHEAD_TOKENS,
    RunCost,
    plan_runs,
    run_cost_for,
)


def total_cost(lengths: np.ndarray, runs: list[np.ndarray], cost: RunCost) -> float:
    return sum(cost.of(len(run), int(lengths[run].max())) for run in runs)


def brute_force_cost(lengths: np.ndarray, max_run: int, cost: RunCost) -> float:
    """The least cost over every way of cutting the sorted rows into consecutive runs."""
    ordered = np.sort(lengths)
    count = len(ordered)
    best = float("inf")
    for cuts in itertools.product([False, True], repeat=count - 1):
        starts = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [count]
        sizes = [b - a for a, b in itertools.pairwise(starts)]
        if max(sizes) > max_run:
            continue
        best = min(
            best,
            sum(cost.of(b - a, int(ordered[b - 1])) for a, b in itertools.pairwise(starts)),
        )
    return best


@pytest.mark.parametrize("seed", range(40))
def test_the_plan_is_a_least_cost_cut_of_the_sorted_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 40, size=int(rng.integers(1, 11)))
    max_run = int(rng.integers(1, 8))
    cost = RunCost(float(rng.choice([0.0, 2.0, CPU_RUN_OVERHEAD_TOKENS, 60.0])))
    runs = plan_runs(lengths, max_run, cost)
    rows = np.concatenate(runs)
    assert sorted(rows.tolist()) == list(range(len(lengths)))  # every row exactly once
    assert all(len(run) <= max_run for run in runs)
    assert np.all(np.diff(lengths[rows]) >= 0)  # shortest first, run after run
    assert total_cost(lengths, runs, cost) == pytest.approx(
        brute_force_cost(lengths, max_run, cost)
    )


def test_without_overhead_each_length_runs_alone_and_with_a_gpu_s_the_batch_stays_whole() -> None:
    lengths = np.array([12, 9, 12, 30, 9, 9, 30, 15])
    no_overhead = plan_runs(lengths, 64, RunCost(0.0))
    assert [sorted(lengths[run].tolist()) for run in no_overhead] == [
        [9, 9, 9],
        [12, 12],
        [15],
        [30, 30],
    ]
    whole = plan_runs(lengths, 64, RunCost(GPU_RUN_OVERHEAD_TOKENS))
    assert len(whole) == 1
    capped = plan_runs(lengths, 3, RunCost(GPU_RUN_OVERHEAD_TOKENS))
    assert sorted(len(run) for run in capped) == [2, 3, 3]  # as few runs as max_run allows


def test_ties_keep_row_order_so_the_plan_is_deterministic() -> None:
    lengths = np.array([7, 7, 7, 7, 7])
    (run,) = plan_runs(lengths, 8, RunCost())
    assert run.tolist() == [0, 1, 2, 3, 4]


def test_nothing_to_plan_and_bad_arguments() -> None:
    assert plan_runs(np.array([], dtype=np.int64), 4, RunCost()) == []
    with pytest.raises(ValueError, match="max_run"):
        plan_runs(np.array([3]), 0, RunCost())
    with pytest.raises(ValueError, match="overhead_tokens"):
        RunCost(-1.0)
    with pytest.raises(ValueError, match="attention_tokens"):
        RunCost(attention_tokens=0.0)


def test_the_run_cost_follows_the_provider_the_session_really_runs_on() -> None:
    assert run_cost_for(["CPUExecutionProvider"]).overhead_tokens == CPU_RUN_OVERHEAD_TOKENS
    gpu = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert run_cost_for(gpu).overhead_tokens == GPU_RUN_OVERHEAD_TOKENS
    trt = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    assert run_cost_for(trt).overhead_tokens == GPU_RUN_OVERHEAD_TOKENS
    assert run_cost_for([]).overhead_tokens == CPU_RUN_OVERHEAD_TOKENS
