"""The scale simulation end to end at tiny scale: generator fit, every index kind, the report."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from studies.scale_simulation.command_line import cli_common, config_from, main, parse_args

N = 20_000


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """Runs every phase once on 20k vectors fit to the seeded stand-in for the caption
    embeddings (a missing ``--bundle``): the same data whether or not `make demo` has built the
    real bundle."""
    root = tmp_path_factory.mktemp("scale")
    report = root / "report"
    argv = [
        "--scales", str(N),
        "--bundle", str(root / "no-bundle"),
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
    assert main(argv) == 0
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
    assert f"`.venv/bin/python -m studies.scale_simulation --scales {N} --bundle" in text
    assert results["command"].startswith(f"-m studies.scale_simulation --scales {N} ")
    kinds = results["scales"][str(N)]["kinds"]
    assert {k.split(" ")[0] for k in kinds} >= {"Flat", "HNSW32", "IVF1024,Flat", "IVF1024,PQ16"}
    assert all("points" in entry for entry in kinds.values())


def test_the_stand_in_was_fit(run: tuple[dict[str, Any], Path]) -> None:
    results, _ = run
    assert results["generator"] == {
        "clusters": 64,
        "rank": 8,
        "source": "seeded stand-in (bundle missing)",
    }


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


def test_a_measuring_process_gets_the_run_s_settings(tmp_path: Path) -> None:
    args = parse_args(["--cache", str(tmp_path), "--pq", "8,16", "--real", str(tmp_path / "r")])
    child = parse_args([*cli_common(args), "--phase", "measure-one", "--kind", "Flat"])
    assert config_from(child) == config_from(args)
    assert child.phase == "measure-one"
    assert child.kind == "Flat"


def test_the_defaults_point_into_the_checkout() -> None:
    cfg = config_from(parse_args([]))
    repo = Path(__file__).resolve().parents[3]
    assert cfg.cache == repo / "artifacts" / "scale"
    assert cfg.report == repo / "reports" / "scale"
    assert cfg.bundle == repo / "artifacts" / "bundles" / "coco-captions"
    assert cfg.pq == (32, 48)
    assert cfg.target_qps == (1000, 10000)
