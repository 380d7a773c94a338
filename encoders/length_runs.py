"""Splitting texts into encoder runs by token count, so padding costs little.

A text tower runs on right-padded ``[n, L]`` token tensors: a run costs about a fixed overhead
plus its padded tokens ``n * L``, whatever its real tokens are. One run for a batch of captions
of mixed lengths pays for every row at the longest row's length: on 2 CPU cores (MiniLM, one
onnxruntime thread) unsorted batches of 8 captions cost 5.3 ms per caption against 3.8 ms
sorted and cut into runs of similar length. :func:`plan_runs` sorts the rows by length and cuts
them where a new run's overhead costs less than the padding it saves (an exact dynamic
programme over the sorted rows), with at most ``max_run`` rows per run.

The cost model, measured with one onnxruntime thread on this project's 2-core machine
(MiniLM-L6, 1–32 rows, 8–32 tokens; ``scripts/text_run_cost.py`` measures it anywhere):
``cost(n, L) ≈ overhead + n·L·(1 + L / attention_tokens)`` token-equivalents, with an
overhead of about 7 tokens and attention adding 1/2250 per token of length. On a GPU a run's
fixed cost dwarfs its tokens, so the overhead is large there and batches stay whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from encoders.providers import runs_on_gpu

# A run's fixed cost in tokens' worth of work: CPU onnxruntime (one thread), MiniLM-L6.
CPU_RUN_OVERHEAD_TOKENS: Final = 8.0
# On CUDA or TensorRT a run costs about as much at 1 row as at 64: keep batches whole.
GPU_RUN_OVERHEAD_TOKENS: Final = 4096.0
# The attention's share: a row of L tokens costs L * (1 + L / ATTENTION_TOKENS).
ATTENTION_TOKENS: Final = 2048.0


@dataclass(frozen=True)
class RunCost:
    """The cost model of one run: ``overhead_tokens + n·L·(1 + L / attention_tokens)``."""

    overhead_tokens: float = CPU_RUN_OVERHEAD_TOKENS
    attention_tokens: float = ATTENTION_TOKENS

    def __post_init__(self) -> None:
        if not self.overhead_tokens >= 0 or not self.attention_tokens > 0:
            raise ValueError(
                f"run cost needs overhead_tokens >= 0 and attention_tokens > 0, got "
                f"{self.overhead_tokens} and {self.attention_tokens}"
            )

    def of(self, rows: int, length: int) -> float:
        """The cost of one run of ``rows`` rows padded to ``length`` tokens."""
        return self.overhead_tokens + rows * length * (1.0 + length / self.attention_tokens)


def run_cost_for(providers: Sequence[str]) -> RunCost:
    """A GPU's run cost when a session's first provider (``session.get_providers()``) is CUDA
    or TensorRT, else a CPU's."""
    return RunCost(GPU_RUN_OVERHEAD_TOKENS if runs_on_gpu(providers) else CPU_RUN_OVERHEAD_TOKENS)


def plan_runs(
    lengths: npt.NDArray[np.integer], max_run: int, cost: RunCost
) -> list[npt.NDArray[np.intp]]:
    """Rows grouped into runs: each an array of row numbers, shortest rows first; together
    every row exactly once. The runs minimise the total ``cost`` among all ways of cutting the
    length-sorted rows into consecutive runs of at most ``max_run`` rows (ties between equal
    lengths keep row order, so the plan is deterministic).

    Raises ``ValueError`` when ``max_run`` is not positive.
    """
    if max_run < 1:
        raise ValueError(f"max_run must be positive, got {max_run}")
    order = np.argsort(np.asarray(lengths), kind="stable")
    count = len(order)
    if count == 0:
        return []
    sorted_lengths = np.asarray(lengths, dtype=np.float64)[order]
    # best[j]: least cost of the first j sorted rows; cut[j]: where its last run starts.
    best = np.zeros(count + 1)
    cut = np.zeros(count + 1, dtype=np.intp)
    per_row = sorted_lengths * (1.0 + sorted_lengths / cost.attention_tokens)
    for end in range(1, count + 1):
        starts = np.arange(max(0, end - max_run), end)
        # A run [start, end) pads every row to the longest, sorted_lengths[end - 1].
        totals = best[starts] + cost.overhead_tokens + (end - starts) * per_row[end - 1]
        choice = int(np.argmin(totals))  # the first (longest run) among equal costs
        best[end] = totals[choice]
        cut[end] = starts[choice]
    runs: list[npt.NDArray[np.intp]] = []
    end = count
    while end > 0:
        start = int(cut[end])
        runs.append(order[start:end])
        end = start
    runs.reverse()
    return runs
