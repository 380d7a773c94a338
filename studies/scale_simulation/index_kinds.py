"""The index kinds measured at one scale: their names, parameters, and which are skipped."""

from __future__ import annotations

import math
from dataclasses import dataclass

from studies.scale_simulation.config import Config
from studies.scale_simulation.units import GIB
from studies.scale_simulation.vectors import DIM

NPROBES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
EF_SEARCHES = (16, 32, 64, 128, 256, 512)
# The re-rank kind asks the PQ index for this many candidates and re-scores them exactly from the
# float32 vectors (a memmap, as the service holds every bundle's vectors.npy).
RERANK = 100


@dataclass(frozen=True)
class Kind:
    """One index kind at one scale."""

    name: str
    family: str  # flat | flat-stream | hnsw | ivf
    codes: str = ""  # ivf: "flat", "pq48", "pq96"
    on_disk: bool = False
    params: tuple[int, ...] = ()
    queries: int = 0
    skipped: str = ""
    rerank: int = 0  # > 0: search this many candidates, re-score them exactly from the vectors
    base: str = ""  # the kind whose index files this one reads (a re-rank kind builds nothing)

    @property
    def slug(self) -> str:
        return slug_of(self.name)

    @property
    def files_slug(self) -> str:
        return slug_of(self.base or self.name)


def slug_of(name: str) -> str:
    return (
        name.lower()
        .replace(",", "_")
        .replace(" ", "-")
        .replace("(", "")
        .replace(")", "")
        .replace("+", "")
    )


def nlist_for(n: int) -> int:
    """A power of four near 4*sqrt(n) (so it splits into sqrt x sqrt for two-level k-means)."""
    target = 4 * math.sqrt(n)
    side = 2 ** round(math.log2(math.sqrt(target)))
    return int(max(4, side) ** 2)


def kinds_for(n: int, cfg: Config) -> list[Kind]:
    nlist = nlist_for(n)
    flat_bytes = n * DIM * 4
    big = flat_bytes > cfg.max_ram_index_gib * GIB
    q = cfg.queries
    kinds: list[Kind] = []
    if n <= cfg.flat_max:
        kinds.append(Kind("Flat", "flat", queries=q))
    else:
        kinds.append(Kind("Flat (streamed memmap)", "flat-stream", queries=cfg.stream_queries))
    hnsw_skip = ""
    if n > cfg.hnsw_max:
        hnsw_skip = (
            f"n={n:,} > --hnsw-max={cfg.hnsw_max:,}: the graph needs "
            f"~{hnsw_bytes(n) / GIB:.1f} GiB in RAM (over the {cfg.max_ram_index_gib:g} GiB "
            "budget on a shared 23 GiB machine) and "
            "the longest build of all kinds on 2 cores; build time extrapolated, memory computed"
        )
    kinds.append(Kind("HNSW32", "hnsw", params=EF_SEARCHES, queries=q, skipped=hnsw_skip))
    if big:
        nprobes = tuple(p for p in NPROBES if p <= cfg.max_nprobe_ondisk_flat)
        kinds.append(
            Kind(f"IVF{nlist},Flat (on disk)", "ivf", "flat", True, nprobes, cfg.ondisk_queries)
        )
    else:
        kinds.append(Kind(f"IVF{nlist},Flat", "ivf", "flat", False, NPROBES, q))
    for m in cfg.pq:
        kinds.append(Kind(f"IVF{nlist},PQ{m}", "ivf", f"pq{m}", False, NPROBES, q))
    m = cfg.pq[-1]
    on_disk_pq = f"IVF{nlist},PQ{m} (on disk)"
    kinds.append(Kind(on_disk_pq, "ivf", f"pq{m}", True, NPROBES, cfg.ondisk_queries))
    kinds.append(
        Kind(
            f"IVF{nlist},PQ{m} (on disk) + re-rank {RERANK}",
            "ivf",
            f"pq{m}",
            True,
            NPROBES,
            cfg.ondisk_queries,
            rerank=RERANK,
            base=on_disk_pq,
        )
    )
    return kinds


def hnsw_bytes(n: int, m: int = 32) -> float:
    """IndexHNSWFlat memory: vectors + level-0 links (2M ids) + upper levels (~M/(M-1) extra)."""
    per = DIM * 4 + 2 * m * 4 + (m * 4) / (m - 1) + 8 + 1
    return float(n * per)
