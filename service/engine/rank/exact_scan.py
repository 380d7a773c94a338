"""The exact scan of a flat collection: every query's ``fetch`` largest inner products with the
stored vectors, computed by onnxruntime (its MLAS GEMM, then ``TopK``) on the calling thread.

A search batch holds a few queries against many rows (16 x 25,000 x 384 at c32), a shape where
numpy's OpenBLAS runs far below the core's speed: on this project's 2-vCPU Intel machine, one
thread, the top 27 of 16 queries over 25,000 x 384 took 15.4 ms with numpy (matrix product, then
``argpartition``; 12.3 ms over column-major vectors) and 8.7 ms here over row-major ones, the
same candidate sets (``scripts/scan_layout.py``). The
vectors stay where they are (the memory-mapped bundle file, shared by every worker process):
they are an input of each run, passed without a copy. Row-major vectors go through ``Gemm``
with ``transB``, column-major ones (``vectors.T`` is then row-major) through ``MatMul``.

The graphs are committed in ``service/engine/rank/graphs`` (``scripts/make_scan_graphs.py`` writes
them); an onnxruntime session is thread-safe, so one scan serves every batcher thread of a process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

GRAPHS: Final = Path(__file__).resolve().parent / "graphs"


class ExactScan:
    """Top-``fetch`` inner products of float32 queries with float32 stored vectors, on
    onnxruntime's CPU provider with ``threads`` intra-op threads (0: one per core)."""

    def __init__(self, threads: int = 1) -> None:
        if threads < 0:
            raise ValueError(f"threads must be >= 0, got {threads}")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._sessions = {
            layout: ort.InferenceSession(
                str(GRAPHS / f"scan_{layout}.onnx"),
                sess_options=options,
                providers=["CPUExecutionProvider"],
            )
            for layout in ("rows", "columns")
        }
        self.threads = threads

    @staticmethod
    def can_scan(vectors: npt.NDArray[np.generic]) -> bool:
        """Whether ``vectors`` (``[n, d]``) can be scanned without a copy: float32 and stored
        row-major or column-major."""
        flags = vectors.flags
        return (
            vectors.dtype == np.float32
            and vectors.ndim == 2
            and bool(flags["C_CONTIGUOUS"] or flags["F_CONTIGUOUS"])
        )

    def top(
        self, queries: npt.NDArray[np.float32], vectors: npt.NDArray[np.float32], fetch: int
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """(scores float32 ``[q, fetch]``, rows int64 ``[q, fetch]``): the ``fetch`` largest
        products of every query (float32 ``[q, d]``) with ``vectors`` (``[n, d]``, see
        :meth:`can_scan`), unordered. ``fetch`` must lie in 1..n; raises ``ValueError``
        otherwise or when the shapes or the layout do not fit."""
        count, dim = vectors.shape
        if not 1 <= fetch <= count:
            raise ValueError(f"fetch must lie in 1..{count}, got {fetch}")
        if queries.ndim != 2 or queries.shape[1] != dim:
            raise ValueError(
                f"queries of shape {queries.shape} do not fit vectors [{count}, {dim}]"
            )
        if not self.can_scan(vectors):
            raise ValueError("vectors must be float32, row-major or column-major")
        row_major = bool(vectors.flags["C_CONTIGUOUS"])
        session = self._sessions["rows" if row_major else "columns"]
        stored = vectors if row_major else vectors.T
        scores, rows = session.run(
            None,
            {
                "queries": np.ascontiguousarray(queries, dtype=np.float32),
                "vectors": stored,
                "fetch": np.array([fetch], dtype=np.int64),
            },
        )
        return scores, rows
