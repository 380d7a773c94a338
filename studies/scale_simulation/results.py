"""The results of a run, collected from the cache: per scale and kind the build, memory and the
recall-latency points (tie-aware recall of the saved ids), and estimates for skipped HNSW."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from studies.scale_simulation.cache_layout import Paths
from studies.scale_simulation.config import Config
from studies.scale_simulation.ground_truth import tie_aware_recall
from studies.scale_simulation.index_kinds import hnsw_bytes, kinds_for, nlist_for


def collect(cfg: Config, scales: Sequence[int]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for n in scales:
        p = Paths(cfg, n)
        if not p.gt.is_file():
            continue
        with np.load(p.gt) as z:
            gt_scores = np.asarray(z["scores"], np.float32)
            gt_seconds = float(z["seconds"])
        queries = np.load(p.queries)
        vectors = np.load(p.vectors, mmap_mode="r")
        state = json.loads(p.vectors_state.read_text())
        scale: dict[str, Any] = {
            "n": n,
            "nlist": nlist_for(n),
            "generate_s": state.get("seconds"),
            "ground_truth_s": gt_seconds,
            "vectors_bytes": p.vectors.stat().st_size,
            "kinds": {},
        }
        for kind in kinds_for(n, cfg):
            entry: dict[str, Any] = {"family": kind.family, "on_disk": kind.on_disk}
            if kind.skipped:
                entry["skipped"] = kind.skipped
            if p.build_info(kind).is_file():
                entry["build"] = json.loads(p.build_info(kind).read_text())
            if p.result(kind).is_file():
                res = json.loads(p.result(kind).read_text())
                entry["memory"] = res["memory"]
                entry["load_s"] = res["load_s"]
                entry["queries"] = res["queries"]
                entry["loadavg"] = res["loadavg"]
                rows = []
                with np.load(p.ids(kind)) as ids_z:
                    for param, lat in res["latency_ms"].items():
                        ids = np.asarray(ids_z[param], np.int64)
                        q = queries[: len(ids)]
                        rows_of = vectors.__getitem__
                        recall = tie_aware_recall(ids, gt_scores[: len(ids)], q, rows_of)
                        arr = np.asarray(lat)
                        rows.append(
                            {
                                "param": int(param),
                                "p50_ms": float(np.median(arr)),
                                "p99_ms": float(np.quantile(arr, 0.99)),
                                "mean_ms": float(arr.mean()),
                                "recall_at_10": recall,
                            }
                        )
                entry["points"] = sorted(rows, key=lambda r: int(r["param"]))
            elif p.skip_info(kind).is_file():
                entry["skipped"] = json.loads(p.skip_info(kind).read_text())["reason"]
            elif not kind.skipped:
                entry["missing"] = "not built or not measured yet"
            scale["kinds"][kind.name] = entry
        results[str(n)] = scale
    estimate_skipped_hnsw(results)
    return results


def estimate_skipped_hnsw(results: dict[str, Any]) -> None:
    """Build time of a skipped HNSW from the largest built one: n log n scaling; memory computed."""
    built = [
        (sc["n"], e["build"]["add_s"])
        for sc in results.values()
        for e in sc["kinds"].values()
        if e["family"] == "hnsw" and "build" in e
    ]
    if not built:
        return
    n0, add0 = max(built)
    for sc in results.values():
        for e in sc["kinds"].values():
            if e["family"] == "hnsw" and "skipped" in e:
                n = sc["n"]
                e["estimate"] = {
                    "from_n": n0,
                    "add_s": add0 * n / n0 * math.log(n) / math.log(n0),
                    "memory_bytes": hnsw_bytes(n),
                    "formula": "add_s(n0) * (n/n0) * ln(n)/ln(n0); bytes = n*(4d + 2M*4 + ...)",
                }
