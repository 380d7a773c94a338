"""The whole CxC harness against an in-process fake service (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from benchmarks.data.ground_truth import t2t_cocaptions_task, t2t_task
from benchmarks.metrics.correlation import bootstrap_spearman
from benchmarks.metrics.retrieval import evaluate_rankings, rank_by_scores
from benchmarks.report.writers import write_quality_outputs
from benchmarks.runs.quality.config import QualityRunConfig
from benchmarks.runs.quality.run import run_quality
from benchmarks.runs.setup_error import BenchmarkSetupError
from tests.fakes.fake_service import FakeService, toy_similarity
from tests.fakes.tiny_data import TinyDataset

SAMPLES = 60


def _config(tiny: TinyDataset, **overrides: Any) -> QualityRunConfig:
    settings: dict[str, Any] = {
        "url": "http://fake",
        "data_dir": tiny.data_dir,
        "split": tiny.split,
        "k": 1000,
        "bootstrap_samples": SAMPLES,
        "concurrency_levels": (1, 3),
        "latency_requests": 15,
        "warmup_requests": 4,
        "show_progress": False,
        "ready_timeout_s": 5.0,
    }
    settings.update(overrides)
    return QualityRunConfig(**settings)


def _expected_retrieval(tiny: TinyDataset, k: int) -> dict[str, dict[str, object]]:
    """The oracle: full toy-similarity matrix, ranked in memory with the tie rule."""
    ids = [caption.key for caption in tiny.captions]
    texts = {caption.key: caption.text for caption in tiny.captions}
    expected = {}
    for task in (t2t_task(tiny.sts, tiny.captions), t2t_cocaptions_task(tiny.sts, tiny.captions)):
        scores = np.array(
            [[toy_similarity(texts[query], texts[item]) for item in ids] for query in task.queries]
        )
        ranked = rank_by_scores(scores, ids, k, exclude=[{query} for query in task.queries])
        rankings = dict(zip(task.queries, ranked, strict=True))
        expected[task.name] = evaluate_rankings(rankings, task.positives, k).as_report()
    return expected


def test_report_matches_in_memory_oracle(tiny: TinyDataset, tmp_path: Path) -> None:
    service = FakeService(tiny.captions, not_ready_polls=2, overloaded_searches=2)
    run = asyncio.run(run_quality(_config(tiny), transport=service.transport()))
    report = run.report
    count = len(tiny.captions)

    assert report["dataset"] == "coco-karpathy"
    assert report["split"] == "val"
    assert report["variant"] == "toy-jaccard"
    assert report["bundle_version"] == "20260101T000000Z"
    assert report["bundle_versions_seen"] == ["20260101T000000Z"]
    assert report["service_url"] == "http://fake"
    assert report["collection"] == {"name": "captions", "count": count}
    assert report["checks"] == {"exclude_violations": 0, "order_violations": 0}
    assert {"cpu_count", "platform", "python"} <= set(report["environment"])
    assert report["created_at"].endswith("+00:00")

    # Retrieval: k is clipped to the collection; values equal the oracle's exactly.
    expected = _expected_retrieval(tiny, k=count)
    assert set(report["tasks"]) == {"t2t", "t2t_cocaptions", "sts"}
    for name in ("t2t", "t2t_cocaptions"):
        assert report["tasks"][name] == expected[name]
        assert report["tasks"][name]["k"] == count
        assert len(report["recall_curves"][name]) == count
    assert report["tasks"]["t2t_cocaptions"]["R@1"] >= report["tasks"]["t2t"]["R@1"]

    # Every search excluded its query and asked for the clipped k.
    searches = [body for method, path, body in service.requests if path == "/v1/search"]
    t2t_queries = t2t_task(tiny.sts, tiny.captions).queries
    replayed = [body for body in searches if body["k"] == count]
    assert len(replayed) == len(t2t_queries) + 2  # two overloaded answers were retried
    texts = {caption.key: caption.text for caption in tiny.captions}
    for body in replayed:
        assert body["collection"] == "captions"
        (query,) = body["exclude"]
        assert body["query"] == {"text": texts[query]}

    # STS: scores from /v1/score, item references on both sides, bootstrap with seed 0.
    scored = [body for method, path, body in service.requests if path == "/v1/score"]
    assert sum(len(body["pairs"]) for body in scored) == len(tiny.sts)
    assert scored[0]["pairs"][0]["left"] == {
        "item": {"collection": "captions", "id": tiny.sts[0].item1}
    }
    model = [toy_similarity(texts[r.item1], texts[r.item2]) for r in tiny.sts]
    oracle = bootstrap_spearman(
        [r.item1 for r in tiny.sts], model, [r.agg_score for r in tiny.sts], SAMPLES, seed=0
    )
    assert report["tasks"]["sts"] == oracle.as_report()
    assert report["tasks"]["sts"]["samples"] == SAMPLES
    assert report["tasks"]["sts"]["query_items"] == count

    # Latency: both levels, k = 10, no retries counted as successes.
    assert set(report["latency"]) == {"c1", "c3"}
    for name, level in (("c1", 1), ("c3", 3)):
        entry = report["latency"][name]
        assert entry["concurrency"] == level
        assert entry["requests"] == 15
        assert entry["errors"] == 0
        assert entry["p50_ms"] <= entry["p95_ms"] <= entry["p99_ms"]
        assert entry["qps"] > 0
    latency_searches = [body for body in searches if body["k"] == 10]
    assert len(latency_searches) == 2 * (15 + 4)

    written = write_quality_outputs(run, tmp_path / "out")
    on_disk = json.loads(written["json"].read_text(encoding="utf-8"))
    assert on_disk == json.loads(json.dumps(report))
    markdown = written["markdown"].read_text(encoding="utf-8")
    assert "| t2t |" in markdown
    assert "| sts |" in markdown
    assert "| c3 |" in markdown
    for kind in ("recall_plot", "latency_plot"):
        assert written[kind].read_bytes().startswith(b"\x89PNG")


def test_limit_queries_and_task_selection(tiny: TinyDataset) -> None:
    service = FakeService(tiny.captions, has_variants_route=False)
    config = _config(tiny, tasks=("t2t",), limit_queries=5, k=10)
    report = asyncio.run(run_quality(config, transport=service.transport())).report
    assert set(report["tasks"]) == {"t2t"}
    assert report["tasks"]["t2t"]["queries"] == 5
    assert report["tasks"]["t2t"]["k"] == 10
    assert report["latency"] == {}
    assert report["service"]["variants"] is None
    assert sum(1 for _, path, _ in service.requests if path == "/v1/search") == 5


def test_censored_median_when_k_is_small(tiny: TinyDataset) -> None:
    # A service that ranks positives last: every first positive lies beyond k.
    class Reversed(FakeService):
        def _search(self, body: dict[str, Any]) -> httpx.Response:
            response = super()._search({**body, "k": len(self.captions)})
            answer = response.json()
            answer["results"] = answer["results"][::-1][: body["k"]]
            for rank, result in enumerate(answer["results"], start=1):
                result["rank"] = rank
            return httpx.Response(200, json=answer)

    service = Reversed(tiny.captions)
    config = _config(tiny, tasks=("t2t",), k=10)
    report = asyncio.run(run_quality(config, transport=service.transport())).report
    entry = report["tasks"]["t2t"]
    assert entry["median_rank"] is None
    assert entry["median_rank_censored"] is True
    assert report["checks"]["order_violations"] > 0


def test_collection_size_mismatch_is_refused(tiny: TinyDataset) -> None:
    service = FakeService(tiny.captions[:-1])
    with pytest.raises(BenchmarkSetupError, match="holds 59 items"):
        asyncio.run(run_quality(_config(tiny), transport=service.transport()))


@pytest.mark.parametrize("probe_k", [1, 3])
def test_probing_shallow_first_gives_the_ranks_of_one_deep_search(
    tiny: TinyDataset, probe_k: int
) -> None:
    service = FakeService(tiny.captions)
    config = _config(tiny, tasks=("t2t", "t2t_cocaptions"), probe_k=probe_k)
    report = asyncio.run(run_quality(config, transport=service.transport())).report
    count = len(tiny.captions)
    expected = _expected_retrieval(tiny, k=count)
    for name in ("t2t", "t2t_cocaptions"):
        assert report["tasks"][name] == expected[name]
    asked = [body["k"] for method, path, body in service.requests if path == "/v1/search"]
    queries = len(t2t_task(tiny.sts, tiny.captions).queries)
    # every query is probed once; only those with a positive beyond the probe are asked again
    assert asked.count(probe_k) == queries
    deep = asked.count(count)
    assert 0 < deep < queries
    assert report["settings"]["probe_k"] == probe_k
