"""Time the exact search's matrix product against the stored vectors' layout: ``queries @
vectors.T`` with the vectors row-major (``[n, d]`` C order, as bundles were written) and
column-major (``fortran_order``, as they are written now), one BLAS thread as the server runs.

usage: .venv/bin/python scripts/scan_layout.py [--rows 25000] [--dim 384] [--repeats 40]

Prints, per batch of queries, the median milliseconds of each layout and their ratio. Seeded
random unit vectors: the product's cost depends on the shapes only.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import numpy as np
from threadpoolctl import threadpool_limits


def _median_ms(runs: Sequence[Callable[[], object]], repeats: int) -> list[float]:
    """Median milliseconds of each run, the runs interleaved (one of each per repeat) so a noisy
    spell of a shared machine falls on all of them alike."""
    for run in runs:
        run()
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(repeats):
        for run, spent in zip(runs, times, strict=True):
            started = time.perf_counter()
            run()
            spent.append(time.perf_counter() - started)
    return [float(np.median(spent)) * 1000.0 for spent in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=25_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()
    threadpool_limits(limits=1, user_api="blas")
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((args.rows, args.dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    columns = np.asfortranarray(rows)
    print(f"{args.rows} x {args.dim} float32, 1 BLAS thread, median of {args.repeats}, interleaved")
    for batch in (1, 2, 4, 8, 16, 32):
        queries = rng.standard_normal((batch, args.dim)).astype(np.float32)
        row_ms, column_ms = _median_ms(
            [lambda: queries @ rows.T, lambda: queries @ columns.T],  # noqa: B023 (run now)
            args.repeats,
        )
        print(
            f"batch {batch:3d}: row-major {row_ms:7.2f} ms  column-major {column_ms:7.2f} ms  "
            f"ratio {row_ms / column_ms:.2f}"
        )


if __name__ == "__main__":
    main()
