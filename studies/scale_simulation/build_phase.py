"""The ``build`` phase: per scale the data set, then the IVF groups (cheapest first, skipped when
the disk is short), Flat and HNSW, and the build records of the re-rank kinds."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence

import faiss

from studies.scale_simulation.cache_layout import Paths
from studies.scale_simulation.config import Config
from studies.scale_simulation.dataset import ensure_queries_and_gt, ensure_vectors
from studies.scale_simulation.fitting import ensure_generator
from studies.scale_simulation.index_kinds import Kind, kinds_for
from studies.scale_simulation.ivf_builds import build_ivf_group
from studies.scale_simulation.json_files import write_json
from studies.scale_simulation.progress import log
from studies.scale_simulation.simple_builds import build_simple
from studies.scale_simulation.vectors import DIM

DISK_MARGIN = 20 * 10**9  # disk left free for the other engineers on the machine


def phase_build(cfg: Config, scales: Sequence[int]) -> None:
    # OpenMP and BLAS threads spin-wait: on this shared, overloaded 2 vCPU machine one thread
    # is faster
    faiss.omp_set_num_threads(cfg.build_threads)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(cfg.build_threads):
        build_scales(cfg, scales)


def build_scales(cfg: Config, scales: Sequence[int]) -> None:
    cfg.cache.mkdir(parents=True, exist_ok=True)
    gen = ensure_generator(cfg)
    for n in scales:
        p = Paths(cfg, n)
        p.root.mkdir(parents=True, exist_ok=True)
        p.indexes.mkdir(exist_ok=True)
        log(f"scale {n:,}: generating vectors into {p.vectors}")
        ensure_vectors(cfg, gen, n, p)
        ensure_queries_and_gt(cfg, gen, n, p)
        kinds = kinds_for(n, cfg)
        groups: dict[str, list[Kind]] = {}
        for kind in kinds:
            if kind.skipped:
                continue
            if kind.family == "ivf" and not kind.base:
                groups.setdefault(kind.codes, []).append(kind)
        # cheapest first: PQ groups, then IVF-Flat, Flat and HNSW last
        for codes in sorted(groups, key=lambda c: (c == "flat", c)):
            if all(p.build_info(kind).is_file() for kind in groups[codes]):
                continue  # built by an earlier run
            need = sum(n * (DIM * 4 if codes == "flat" else int(codes[2:])) for _ in range(2))
            free = shutil.disk_usage(p.root).free
            if need > free - DISK_MARGIN:
                reason = (
                    f"not built: needs {need / 1e9:.0f} GB of disk for shards + merged lists, "
                    f"{free / 1e9:.0f} GB free and {DISK_MARGIN / 1e9:.0f} GB kept for others"
                )
                for kind in groups[codes]:
                    write_json(p.skip_info(kind), {"reason": reason})
                log(
                    f"  skipping IVF {codes}: needs {need / 1e9:.0f} GB of disk, "
                    f"{free / 1e9:.0f} free"
                )
                continue
            log(f"scale {n:,}: building IVF {codes} ({', '.join(k.name for k in groups[codes])})")
            build_ivf_group(cfg, n, codes, groups[codes], p)
        for kind in kinds:
            if kind.family in ("flat", "flat-stream", "hnsw") and not kind.skipped:
                log(f"scale {n:,}: building {kind.name}")
                build_simple(n, kind, p)
        for kind in kinds:
            if kind.base:
                note_rerank_build(kind, kinds, p)


def note_rerank_build(kind: Kind, kinds: Sequence[Kind], p: Paths) -> None:
    """A re-rank kind builds nothing: its build is its base index's, its size adds the vectors
    it re-scores from."""
    base = next(k for k in kinds if k.name == kind.base)
    if not p.build_info(base).is_file():
        return
    info = json.loads(p.build_info(base).read_text())
    info["size_bytes"] += p.vectors.stat().st_size
    info["rerank_candidates"] = kind.rerank
    info["base"] = base.name
    write_json(p.build_info(kind), info)
