"""The index kinds of one scale: nlist, names, skips, on-disk variants, the re-rank kind."""

from __future__ import annotations

import pytest

from studies.scale_simulation.command_line import config_from, parse_args
from studies.scale_simulation.index_kinds import (
    EF_SEARCHES,
    NPROBES,
    RERANK,
    hnsw_bytes,
    kinds_for,
    nlist_for,
    slug_of,
)


@pytest.mark.parametrize(
    ("n", "nlist"), [(1, 16), (20_000, 1024), (1_000_000, 4096), (10_000_000, 16384)]
)
def test_nlist_is_a_power_of_four_near_four_sqrt_n(n: int, nlist: int) -> None:
    assert nlist_for(n) == nlist


def test_small_scales_hold_every_kind_in_memory() -> None:
    cfg = config_from(parse_args(["--pq", "8,16"]))
    kinds = kinds_for(20_000, cfg)
    assert [k.name for k in kinds] == [
        "Flat",
        "HNSW32",
        "IVF1024,Flat",
        "IVF1024,PQ8",
        "IVF1024,PQ16",
        "IVF1024,PQ16 (on disk)",
        f"IVF1024,PQ16 (on disk) + re-rank {RERANK}",
    ]
    assert not any(k.skipped for k in kinds)
    assert kinds[1].params == EF_SEARCHES
    assert all(k.params == NPROBES for k in kinds[2:])
    assert [k.on_disk for k in kinds[2:]] == [False, False, False, True, True]
    rerank = kinds[-1]
    assert (rerank.rerank, rerank.base, rerank.codes) == (RERANK, "IVF1024,PQ16 (on disk)", "pq16")
    assert rerank.files_slug == kinds[-2].slug == "ivf1024_pq16-on-disk"
    assert rerank.slug == "ivf1024_pq16-on-disk--re-rank-100"


def test_large_scales_stream_flat_skip_hnsw_and_put_ivf_flat_on_disk() -> None:
    argv = ["--hnsw-max", "100", "--flat-max", "100", "--max-ram-index-gib", "0.001"]
    argv += ["--max-nprobe-ondisk-flat", "16", "--stream-queries", "7"]
    cfg = config_from(parse_args(argv))
    flat, hnsw, ivf_flat, *_ = kinds_for(20_000, cfg)
    assert (flat.name, flat.family, flat.queries) == ("Flat (streamed memmap)", "flat-stream", 7)
    assert hnsw.skipped.startswith("n=20,000 > --hnsw-max=100: the graph needs ~0.0 GiB")
    assert ivf_flat.name == "IVF1024,Flat (on disk)"
    assert ivf_flat.on_disk
    assert ivf_flat.params == (1, 2, 4, 8, 16)
    assert ivf_flat.queries == cfg.ondisk_queries


def test_slugs_are_file_names() -> None:
    assert slug_of("IVF4096,Flat (on disk)") == "ivf4096_flat-on-disk"
    assert slug_of("Flat (streamed memmap)") == "flat-streamed-memmap"


def test_hnsw_bytes_count_vectors_and_links() -> None:
    assert hnsw_bytes(1) == pytest.approx(384 * 4 + 2 * 32 * 4 + 128 / 31 + 9)
    assert hnsw_bytes(1000) == pytest.approx(1000 * hnsw_bytes(1))
    assert hnsw_bytes(1, m=16) < hnsw_bytes(1)
