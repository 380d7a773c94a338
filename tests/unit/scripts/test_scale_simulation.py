"""The scale simulation end to end at tiny scale: generator fit, every index kind, the report."""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "scale_simulation.py"
N = 20_000


def load_script() -> ModuleType:
    name = "scale_simulation_under_test"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """Runs every phase once on 20k vectors fit to the script's seeded stand-in for the caption
    embeddings: the same data whether or not `make demo` has built the real bundle."""
    module = load_script()
    root = tmp_path_factory.mktemp("scale")
    module.BUNDLE = root / "no-bundle"
    report = root / "report"
    argv = [
        "--scales", str(N),
        "--cache", str(root / "cache"),
        "--report", str(report),
        "--fit-rows", "3000",
        "--clusters", "64",
        "--rank", "8",
        "--queries", "60",
        "--ondisk-queries", "60",
        "--train-sample", "5000",
        "--shards", "2",
        "--pq", "8,16",
        "--warmup", "3",
    ]  # fmt: skip
    assert module.main(argv) == 0
    return json.loads((report / "results.json").read_text()), report


def points(results: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    kinds = results["scales"][str(N)]["kinds"]
    name = next(k for k in kinds if k.startswith(prefix))
    pts: list[dict[str, Any]] = kinds[name]["points"]
    return pts


def test_report_files_are_written(run: tuple[dict[str, Any], Path]) -> None:
    results, report = run
    for name in ("report.md", "results.json", "memory_by_kind.png", "fit_check.png"):
        assert (report / name).stat().st_size > 0, name
    assert (report / "recall_vs_latency_20k.png").stat().st_size > 0
    text = (report / "report.md").read_text()
    assert "| 20k | Flat |" in text
    assert "Extrapolation to 100M and 1B" in text
    kinds = results["scales"][str(N)]["kinds"]
    assert {k.split(" ")[0] for k in kinds} >= {"Flat", "HNSW32", "IVF1024,Flat", "IVF1024,PQ16"}
    assert all("points" in entry for entry in kinds.values())


def test_flat_is_exact(run: tuple[dict[str, Any], Path]) -> None:
    results, _ = run
    assert points(results, "Flat")[0]["recall_at_10"] == 1.0


def test_recall_grows_with_nprobe_and_ef(run: tuple[dict[str, Any], Path]) -> None:
    results, _ = run
    for prefix in ("IVF1024,Flat", "IVF1024,PQ16", "HNSW32"):
        recalls = [pt["recall_at_10"] for pt in points(results, prefix)]
        assert all(b >= a - 0.02 for a, b in itertools.pairwise(recalls)), recalls
    assert points(results, "IVF1024,Flat")[-1]["recall_at_10"] >= 0.95
    assert points(results, "HNSW32")[-1]["recall_at_10"] >= 0.97
    assert points(results, "IVF1024,Flat")[0]["recall_at_10"] < 0.95  # nprobe 1 is approximate


def test_in_memory_and_on_disk_pq_return_the_same_neighbours(
    run: tuple[dict[str, Any], Path],
) -> None:
    results, _ = run
    memory = [pt["recall_at_10"] for pt in points(results, "IVF1024,PQ16")[:3]]
    disk = [pt["recall_at_10"] for pt in points(results, "IVF1024,PQ16 (on disk)")[:3]]
    assert memory == disk


def test_re_ranking_from_the_vectors_lifts_pq_recall(run: tuple[dict[str, Any], Path]) -> None:
    results, _ = run
    pq = points(results, "IVF1024,PQ16 (on disk)")
    rerank = points(results, "IVF1024,PQ16 (on disk) + re-rank")
    assert [pt["param"] for pt in rerank] == [pt["param"] for pt in pq]
    assert all(r["recall_at_10"] >= q["recall_at_10"] for r, q in zip(rerank, pq, strict=True))
    # 100 candidates from 16-byte codes hold most of the exact top 10; the codes alone do not
    assert rerank[-1]["recall_at_10"] >= 0.9
    assert rerank[-1]["recall_at_10"] - pq[-1]["recall_at_10"] >= 0.2
    kinds = results["scales"][str(N)]["kinds"]
    base = kinds["IVF1024,PQ16 (on disk)"]["build"]["size_bytes"]
    assert kinds["IVF1024,PQ16 (on disk) + re-rank 100"]["build"]["size_bytes"] == (
        base + N * 384 * 4 + 128  # the PQ index and the vectors it re-scores from (.npy header)
    )


def test_memory_is_attributed(run: tuple[dict[str, Any], Path]) -> None:
    results, _ = run
    kinds = results["scales"][str(N)]["kinds"]
    flat = kinds["Flat"]["memory"]
    assert flat["after_load"]["anon"] - flat["baseline"]["anon"] > 0.5 * N * 384 * 4
    disk = kinds["IVF1024,PQ16 (on disk)"]["memory"]["after_queries"]
    assert disk["index_file_rss"] > 0


def test_synthetic_looks_like_real(run: tuple[dict[str, Any], Path]) -> None:
    results, _ = run
    fit = results["fit_check"]
    real = fit["real (held out)"]["nn_cos_quantiles_10_25_50_75_90"][2]
    synthetic = fit["synthetic"]["nn_cos_quantiles_10_25_50_75_90"][2]
    noise = fit["uniform noise"]["nn_cos_quantiles_10_25_50_75_90"][2]
    assert abs(real - synthetic) < 0.25, (real, synthetic)
    assert abs(real - noise) > 0.3  # the check itself can tell noise from real


def test_generator_is_seeded() -> None:
    module = load_script()
    real = module.load_real(None, 1)[0][:3000]
    with threadpool_limits(1):  # BLAS threads spin on a busy 2-vCPU machine
        gen = module.Generator.fit(np.ascontiguousarray(real), 16, 4, 7)
    a = gen.sample(500, np.random.default_rng(3))
    b = gen.sample(500, np.random.default_rng(3))
    assert np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
