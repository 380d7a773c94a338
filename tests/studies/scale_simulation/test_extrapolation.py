"""The operating point of a recall-latency curve and the extrapolation to 100M and 1B."""

from __future__ import annotations

import math
from typing import Any

import pytest

from studies.scale_simulation.command_line import config_from, parse_args
from studies.scale_simulation.extrapolation import extrapolate, operating_point
from studies.scale_simulation.index_kinds import hnsw_bytes

CURVE = [
    {"param": 1, "p50_ms": 0.1, "recall_at_10": 0.5},
    {"param": 8, "p50_ms": 0.3, "recall_at_10": 0.92},
    {"param": 16, "p50_ms": 0.5, "recall_at_10": 0.95},
]


def test_the_operating_point_is_the_cheapest_reaching_the_target() -> None:
    assert operating_point(CURVE, 0.9)["param"] == 8
    assert operating_point(CURVE, 0.93)["param"] == 16
    assert operating_point(CURVE, 0.99)["param"] == 16  # none reaches it: the most accurate
    assert operating_point(CURVE, 0.0)["param"] == 1


def results() -> dict[str, Any]:
    n0 = 1_000_000
    small = {"family": "hnsw", "points": [{"param": 16, "p50_ms": 0.2, "recall_at_10": 0.95}]}
    return {
        "100000": {"n": 100_000, "kinds": {"HNSW32": small}},
        str(n0): {
            "n": n0,
            "kinds": {
                "Flat": {
                    "family": "flat",
                    "build": {"size_bytes": 1536 * n0},
                    "points": [{"param": 0, "p50_ms": 10.0, "recall_at_10": 1.0}],
                },
                "HNSW32": {"family": "hnsw", "skipped": "too big"},
                "IVF4096,PQ16": {
                    "family": "ivf",
                    "build": {"size_bytes": 20 * n0},
                    "points": CURVE,
                },
                "IVF4096,PQ48": {"family": "ivf", "skipped": "not built: disk"},
            },
        },
    }


def test_extrapolation_rows() -> None:
    cfg = config_from(parse_args(["--machine-gib", "256", "--cores", "64"]))
    ex = extrapolate(results(), cfg)
    assert (ex["from_n"], ex["machine_gib"], ex["cores"]) == (1_000_000, 256.0, 64)
    assert ex["target_qps"] == [1000, 10000]
    rows = {(r["kind"], r["n"]): r for r in ex["rows"]}
    assert set(rows) == {(k, n) for k in ("Flat", "HNSW32", "IVF4096,PQ16") for n in (10**8, 10**9)}
    flat = rows["Flat", 10**9]
    assert flat["bytes_per_vector"] == 1536
    assert flat["machines_for_memory"] == 6  # 1.536e12 bytes / 256 GiB
    assert flat["query_cpu_ms"] == pytest.approx(6 * 10.0 * (10**9 / 6) / 10**6)  # linear in n
    assert flat["machines_for_1000_qps"] == math.ceil(1000 * flat["query_cpu_ms"] / 1000 / 64)
    pq = rows["IVF4096,PQ16", 10**8]
    assert (pq["param"], pq["recall_at_10"], pq["machines_for_memory"]) == (8, 0.92, 1)
    assert pq["query_cpu_ms"] == pytest.approx(0.3 * math.sqrt(100))  # IVF: sqrt(n)
    hnsw = rows["HNSW32", 10**8]
    assert hnsw["bytes_per_vector"] == pytest.approx(hnsw_bytes(10**6) / 10**6)
    assert hnsw["measured_at"] == 100_000  # skipped at 1M: measured at the smaller scale
    assert hnsw["query_cpu_ms"] == pytest.approx(0.2 * math.log(10**8) / math.log(10**5))


def test_nothing_to_extrapolate_from() -> None:
    assert extrapolate({}, config_from(parse_args([]))) == {}
