"""Time the exact scan of a flat collection by engine and stored layout: numpy (``queries @
vectors.T``, then ``argpartition`` for the top ``fetch``) and onnxruntime
(:class:`service.engine.rank.exact_scan.ExactScan`: ``Gemm``/``MatMul``, then ``TopK``), each over
vectors stored row-major (``[n, d]`` C order, as bundles are written) and column-major
(``fortran_order``, as bundles were written for a while); one thread, as the server runs.

usage: .venv/bin/python studies/scan_layout.py [--rows 25000] [--dim 384] [--fetch 27]
                                               [--repeats 40]

Prints, per batch of queries, the median milliseconds of each engine and layout. Seeded random
unit vectors: the cost depends on the shapes only.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from service.engine.rank.exact_scan import ExactScan


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
    parser.add_argument("--fetch", type=int, default=27, help="rows kept per query (k 10 + 17)")
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()
    threadpool_limits(limits=1, user_api="blas")
    scan = ExactScan(threads=1)
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((args.rows, args.dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    columns = np.asfortranarray(rows)
    cut = args.rows - args.fetch

    def numpy_scan(queries: np.ndarray, vectors: np.ndarray) -> object:
        return np.argpartition(queries @ vectors.T, cut, axis=1)[:, cut:]

    print(
        f"{args.rows} x {args.dim} float32, top {args.fetch}, 1 thread, median ms of "
        f"{args.repeats}, interleaved"
    )
    print("batch  numpy rows  numpy columns  onnxruntime rows  onnxruntime columns")
    for batch in (1, 2, 4, 8, 16, 32):
        queries = rng.standard_normal((batch, args.dim)).astype(np.float32)
        timings = _median_ms(
            [
                lambda: numpy_scan(queries, rows),  # noqa: B023 (run now)
                lambda: numpy_scan(queries, columns),  # noqa: B023
                lambda: scan.top(queries, rows, args.fetch),  # noqa: B023
                lambda: scan.top(queries, columns, args.fetch),  # noqa: B023
            ],
            args.repeats,
        )
        print(f"{batch:5d}  " + "  ".join(f"{ms:10.2f}" for ms in timings))


if __name__ == "__main__":
    main()
