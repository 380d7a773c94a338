"""Builds without a coarse quantizer: Flat and HNSW32 added chunk by chunk, and the streamed
Flat kind, whose only file is the vectors memmap."""

from __future__ import annotations

import time

import faiss
import numpy as np

from studies.scale_simulation.cache_layout import Paths
from studies.scale_simulation.dataset import row_chunks
from studies.scale_simulation.index_kinds import Kind
from studies.scale_simulation.json_files import write_json
from studies.scale_simulation.progress import log
from studies.scale_simulation.vectors import DIM


def build_simple(n: int, kind: Kind, p: Paths) -> None:
    if p.build_info(kind).is_file():
        return
    vectors = np.load(p.vectors, mmap_mode="r")
    if kind.family == "flat-stream":
        info = {"train_s": 0.0, "add_s": 0.0, "size_bytes": p.vectors.stat().st_size}
        write_json(p.build_info(kind), info)
        return
    index = (
        faiss.IndexFlatIP(DIM)
        if kind.family == "flat"
        else faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
    )
    t0 = time.perf_counter()
    for lo, hi in row_chunks(n):
        index.add(np.ascontiguousarray(vectors[lo:hi]))
        if kind.family == "hnsw":
            log(f"  HNSW32: {hi:,}/{n:,} added ({time.perf_counter() - t0:.0f} s)")
    add_s = time.perf_counter() - t0
    faiss.write_index(index, str(p.index(kind)))
    del index
    info = {"train_s": 0.0, "add_s": add_s, "size_bytes": p.index(kind).stat().st_size}
    if kind.family == "hnsw":
        info["ef_construction"] = 40
    write_json(p.build_info(kind), info)
    log(f"  built {kind.name} in {add_s:.0f} s")
