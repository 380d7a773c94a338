"""Seeding and deterministic torch settings for a training run, restored afterwards.

What makes a run repeatable: every random draw comes from the seed (python ``random``, numpy's
legacy global state, torch's global generator; the trainer's own data order uses a
``numpy.random.Generator`` seeded separately), torch refuses nondeterministic kernels
(``torch.use_deterministic_algorithms``), and the intra-op thread count is fixed, because CPU
reductions split across a different number of threads add floats in a different order. With the
same seed, data, thread count and machine, two runs produce bit-identical weights; on another
CPU (other SIMD kernels in oneDNN / MKL) expect tiny float differences that grow during training
into metric differences of about a point of R@1.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch


@contextmanager
def deterministic_torch(seed: int, threads: int) -> Iterator[None]:
    """Seed every generator with ``seed`` and make torch deterministic on ``threads`` threads.

    The previous thread count and deterministic-algorithms flag are restored on exit, so a test
    process or a caller's later work is not left changed. The global RNG states are left seeded
    (restoring them would make a second run in one process depend on the first).
    """
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    previous_threads = torch.get_num_threads()
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    previous_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    random.seed(seed)
    # The trainer draws from its own Generator; this only pins libraries that use numpy's
    # legacy global state.
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(previous_threads)
        torch.use_deterministic_algorithms(previous_deterministic, warn_only=previous_warn_only)
