"""One index kind measured in its own process: load, memory, single-query latency per parameter
value after a warm-up, and the returned ids."""

from __future__ import annotations

import os
import time
from typing import Any

import faiss
import numpy as np

from studies.scale_simulation.cache_layout import Paths
from studies.scale_simulation.config import Config
from studies.scale_simulation.ground_truth import K
from studies.scale_simulation.index_kinds import Kind
from studies.scale_simulation.json_files import write_json
from studies.scale_simulation.memory import memory_snapshot
from studies.scale_simulation.search import search_one
from studies.scale_simulation.vectors import F32, I64


def measure_one(cfg: Config, n: int, kind: Kind, warmup: int) -> None:
    """Runs in its own process: load, memory, single-query latency per parameter, ids."""
    faiss.omp_set_num_threads(1)
    p = Paths(cfg, n)
    queries = np.load(p.queries)[: kind.queries]
    files = [p.index(kind), p.ivfdata(kind), p.vectors]
    baseline = memory_snapshot(files)
    t0 = time.perf_counter()
    vectors: F32 | None = None
    index: Any = None
    if kind.family == "flat-stream" or kind.rerank:
        vectors = np.load(p.vectors, mmap_mode="r")
    if kind.family != "flat-stream":
        index = faiss.read_index(str(p.index(kind)))
    load_s = time.perf_counter() - t0
    after_load = memory_snapshot(files)
    params: tuple[int, ...] = kind.params or (0,)
    latencies: dict[str, list[float]] = {}
    ids_out: dict[str, I64] = {}
    for param in params:
        if kind.family == "ivf":
            index.nprobe = param
        elif kind.family == "hnsw":
            index.hnsw.efSearch = param
        ids = np.empty((len(queries), K), np.int64)
        lat = np.empty(len(queries), np.float64)
        for i in range(min(warmup, len(queries))):
            search_one(index, vectors, queries[i], kind.rerank)
        for i in range(len(queries)):
            t1 = time.perf_counter_ns()
            ids[i] = search_one(index, vectors, queries[i], kind.rerank)
            lat[i] = (time.perf_counter_ns() - t1) / 1e6
        latencies[str(param)] = lat.tolist()
        ids_out[str(param)] = ids
        print(
            f"    {kind.name} param={param}: p50 {np.median(lat):.3f} ms, "
            f"p99 {np.quantile(lat, 0.99):.3f} ms",
            flush=True,
        )
    after_queries = memory_snapshot(files)
    np.savez(p.ids(kind), **ids_out)  # type: ignore[arg-type]
    write_json(
        p.result(kind),
        {
            "load_s": load_s,
            "memory": {
                "baseline": baseline,
                "after_load": after_load,
                "after_queries": after_queries,
            },
            "latency_ms": latencies,
            "queries": len(queries),
            "warmup": warmup,
            "loadavg": os.getloadavg(),
        },
    )
