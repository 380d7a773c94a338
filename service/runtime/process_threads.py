"""The threads of a server process: the BLAS pools, the tokenizers' pool and the interpreter's
lock hand-over.

onnxruntime's threads are set per session (``intra_op_threads``) and faiss's OpenMP threads per
search (``faiss_threads``); these three are process-wide, so a server process sets them once when
it starts (:func:`tune_process_threads`), never on import: a library user (an index build, which
tokenizes thousands of texts per call) keeps the defaults.
"""

from __future__ import annotations

import logging
import os
import sys

from threadpoolctl import threadpool_info, threadpool_limits

logger = logging.getLogger("crisscross.service")


TOKENIZERS_PARALLELISM = "TOKENIZERS_PARALLELISM"
"""The variable the ``tokenizers`` library reads before it hands a batch to its thread pool."""


def tune_process_threads(
    blas_threads: int, gil_switch_interval_ms: float, tokenizer_parallelism: bool
) -> dict[str, int]:
    """Cap every loaded BLAS library at ``blas_threads`` threads (0 leaves them as they are),
    turn the tokenizers' own thread pool on or off (``tokenizer_parallelism``; it must run before
    the first text is tokenized) and set the interpreter's switch interval; returns each BLAS
    library's thread count afterwards, keyed by its file name."""
    os.environ[TOKENIZERS_PARALLELISM] = "true" if tokenizer_parallelism else "false"
    if blas_threads > 0:
        threadpool_limits(limits=blas_threads, user_api="blas")
    sys.setswitchinterval(gil_switch_interval_ms / 1000.0)
    pools = {
        str(pool["filepath"]).rsplit("/", 1)[-1]: int(pool["num_threads"])
        for pool in threadpool_info()
        if pool.get("user_api") == "blas"
    }
    logger.info(
        "process threads: BLAS %s, tokenizer pool %s, switch interval %.2f ms",
        pools,
        "on" if tokenizer_parallelism else "off",
        gil_switch_interval_ms,
    )
    return pools
