"""IVF builds: the database encoded once per code kind into shards on the shared coarse
quantizer, then merged into in-memory inverted lists or on-disk ones (``.ivfdata``)."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from studies.scale_simulation.cache_layout import Paths
from studies.scale_simulation.coarse_quantizer import ensure_coarse
from studies.scale_simulation.config import Config
from studies.scale_simulation.dataset import row_chunks
from studies.scale_simulation.index_kinds import Kind
from studies.scale_simulation.json_files import write_json
from studies.scale_simulation.progress import log
from studies.scale_simulation.units import GIB
from studies.scale_simulation.vectors import DIM, F32


def empty_ivf(codes: str, sub: F32) -> Any:
    nlist = len(sub)
    quantizer = faiss.IndexFlatIP(DIM)
    quantizer.add(sub)
    if codes == "flat":
        return faiss.IndexIVFFlat(quantizer, DIM, nlist, faiss.METRIC_INNER_PRODUCT)
    m = int(codes.removeprefix("pq"))
    return faiss.IndexIVFPQ(quantizer, DIM, nlist, m, 8, faiss.METRIC_INNER_PRODUCT)


def trained_ivf(cfg: Config, codes: str, p: Paths) -> tuple[Any, float]:
    """An empty IVF index with the shared coarse quantizer and (for PQ) a trained encoder."""
    with np.load(p.coarse) as z:
        sub = np.asarray(z["sub"], np.float32)
    index = empty_ivf(codes, sub)
    t0 = time.perf_counter()
    if codes != "flat":
        vectors = np.load(p.vectors, mmap_mode="r")
        assign = np.load(p.assign, mmap_mode="r")
        rows = min(len(vectors), cfg.train_sample)
        x = np.ascontiguousarray(vectors[:rows])
        a = np.ascontiguousarray(assign[:rows])
        index.train_encoder(rows, faiss.swig_ptr(x), faiss.swig_ptr(a))
    index.is_trained = True
    return index, time.perf_counter() - t0


def build_ivf_group(cfg: Config, n: int, codes: str, members: list[Kind], p: Paths) -> None:
    """Encode the database once into shards, then merge them in memory and/or on disk."""
    from faiss.contrib.ondisk import merge_ondisk

    todo = [k for k in members if not p.build_info(k).is_file()]
    if not todo:
        return
    coarse = ensure_coarse(cfg, n, p)
    template, encoder_s = trained_ivf(cfg, codes, p)
    vectors = np.load(p.vectors, mmap_mode="r")
    assign = np.load(p.assign, mmap_mode="r")
    shard_rows = math.ceil(n / cfg.shards)
    shard_files: list[Path] = []
    t0 = time.perf_counter()
    for s in range(cfg.shards):
        lo, hi = s * shard_rows, min(n, (s + 1) * shard_rows)
        path = p.indexes / f"shard-{codes}-{s}.index"
        shard_files.append(path)
        if path.is_file():
            continue
        shard: Any = faiss.clone_index(template)
        for a, b in row_chunks(hi - lo):
            x = np.ascontiguousarray(vectors[lo + a : lo + b])
            ids = np.arange(lo + a, lo + b, dtype=np.int64)
            a_part = np.ascontiguousarray(assign[lo + a : lo + b])
            shard.add_core(b - a, faiss.swig_ptr(x), faiss.swig_ptr(ids), faiss.swig_ptr(a_part))
        faiss.write_index(shard, str(path) + ".tmp")
        os.replace(str(path) + ".tmp", path)
        del shard
        log(f"  {codes}: shard {s + 1}/{cfg.shards} encoded ({time.perf_counter() - t0:.0f} s)")
    encode_s = time.perf_counter() - t0
    for kind in todo:
        t1 = time.perf_counter()
        index = faiss.clone_index(template)
        if kind.on_disk:
            if p.ivfdata(kind).exists():
                p.ivfdata(kind).unlink()
            merge_ondisk(index, [str(f) for f in shard_files], str(p.ivfdata(kind).resolve()))
        else:
            for f in shard_files:
                part = faiss.read_index(str(f))
                index.merge_from(part, 0)
                del part
        faiss.write_index(index, str(p.index(kind)))
        merge_s = time.perf_counter() - t1
        del index
        size = p.index(kind).stat().st_size
        if kind.on_disk:
            size += p.ivfdata(kind).stat().st_size
        info = {
            "coarse_train_s": coarse["train_s"],
            "encoder_train_s": encoder_s,
            "assign_s": coarse["assign_s"],
            "encode_s": encode_s,
            "merge_write_s": merge_s,
            "train_s": coarse["train_s"] + encoder_s,
            "add_s": coarse["assign_s"] + encode_s + merge_s,
            "size_bytes": size,
            "shards": cfg.shards,
        }
        write_json(p.build_info(kind), info)
        log(f"  built {kind.name}: {size / GIB:.2f} GiB, merge+write {merge_s:.0f} s")
    for f in shard_files:
        f.unlink(missing_ok=True)
