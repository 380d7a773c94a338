"""Extrapolation to 100M and 1B vectors: bytes per vector at the largest measured scale, the
machines needed to hold the index and to serve a target QPS at an operating point."""

from __future__ import annotations

import math
from typing import Any

from studies.scale_simulation.config import Config
from studies.scale_simulation.index_kinds import hnsw_bytes
from studies.scale_simulation.units import GIB


def operating_point(points: list[dict[str, Any]], target: float) -> dict[str, Any]:
    """The cheapest parameter reaching ``target`` recall, else the most accurate one."""
    ok = [pt for pt in points if pt["recall_at_10"] >= target]
    if ok:
        return min(ok, key=lambda pt: pt["p50_ms"])
    return max(points, key=lambda pt: pt["recall_at_10"])


def extrapolate(results: dict[str, Any], cfg: Config) -> dict[str, Any]:
    """Bytes per vector at the largest measured scale and machines needed at 100M and 1B."""
    if not results:
        return {}
    largest = results[max(results, key=int)]
    n0 = largest["n"]
    targets = (100_000_000, 1_000_000_000)
    machine_bytes = cfg.machine_gib * GIB
    rows: list[dict[str, Any]] = []
    for name, entry in largest["kinds"].items():
        size = entry.get("build", {}).get("size_bytes")
        family = entry["family"]
        per_vec = size / n0 if size else (hnsw_bytes(n0) / n0 if family == "hnsw" else None)
        if per_vec is None:
            continue
        # single-thread query cost at the operating point, from this or a smaller scale
        src_n, point = n0, None
        for key in sorted(results, key=int, reverse=True):
            e = results[key]["kinds"]
            match = next(
                (
                    v
                    for k2, v in e.items()
                    if v["family"] == family
                    and "points" in v
                    and k2.split(",")[-1] == name.split(",")[-1]
                ),
                None,
            )
            if match is not None:
                src_n, point = results[key]["n"], operating_point(match["points"], 0.9)
                break
        for n in targets:
            mem = n * per_vec
            row: dict[str, Any] = {
                "kind": name,
                "n": n,
                "bytes_per_vector": per_vec,
                "total_gib": mem / GIB,
                "machines_for_memory": math.ceil(mem / machine_bytes),
            }
            if point is not None:
                # every query fans out to every shard: shards x the cost on one shard's rows
                shards = row["machines_for_memory"]
                shard_n = n / shards
                ratio = shard_n / src_n
                hnsw = math.log(shard_n) / math.log(src_n)
                scale = {"flat": ratio, "flat-stream": ratio, "hnsw": hnsw}
                factor = scale.get(family, math.sqrt(ratio))
                t_ms = shards * point["p50_ms"] * factor
                row.update(
                    query_ms_measured=point["p50_ms"],
                    measured_at=src_n,
                    param=point["param"],
                    recall_at_10=point["recall_at_10"],
                    query_cpu_ms=t_ms,
                )
                for qps in cfg.target_qps:
                    row[f"machines_for_{qps}_qps"] = math.ceil(qps * t_ms / 1000 / cfg.cores)
            rows.append(row)
    return {
        "from_n": n0,
        "machine_gib": cfg.machine_gib,
        "cores": cfg.cores,
        "target_qps": list(cfg.target_qps),
        "rows": rows,
    }
