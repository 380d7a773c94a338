"""``python -m benchmarks``: every subcommand end to end against fakes, argument errors (exit 2),
service and data errors (exit 1)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

import benchmarks.__main__ as cli
from benchmarks.runs.compare.config import CompareConfig
from benchmarks.runs.compare.run import CompareRun, run_compare
from benchmarks.runs.quality.config import QualityRunConfig
from benchmarks.runs.quality.run import run_quality
from tests.fakes.fake_search_service import FakeSearchService
from tests.fakes.fake_service import FakeService, dual_tower_service
from tests.fakes.fake_variants import two_variants
from tests.fakes.tiny_data import TinyDataset
from tests.fakes.tiny_http import serve_in_thread


def use_run(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    run: Callable[[Any], Coroutine[Any, Any, Any]],
) -> None:
    """Make subcommand ``name`` run ``run`` (e.g. the real run over a fake transport)."""
    commands = tuple(
        dataclasses.replace(command, run=run) if command.name == name else command
        for command in cli.COMMANDS
    )
    monkeypatch.setattr(cli, "COMMANDS", commands)


def test_cxc_end_to_end(
    tiny: TinyDataset,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    service = FakeService(tiny.captions)

    async def run_with_fake(config: QualityRunConfig) -> Any:
        return await run_quality(config, transport=service.transport())

    use_run(monkeypatch, "cxc", run_with_fake)
    out = tmp_path / "reports" / "demo"
    status = cli.main(
        [
            "cxc",
            "--url",
            "http://fake",
            "--split",
            "val",
            "--data",
            str(tiny.data_dir),
            "--out",
            str(out),
            "--k",
            "20",
            "--latency-requests",
            "5",
            "--warmup",
            "1",
            "--concurrency",
            "1,2",
            "--limit-queries",
            "8",
            "--bootstrap-samples",
            "20",
            "--no-progress",
        ]
    )
    assert status == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith("# Crisscross benchmark — coco-karpathy val")
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["tasks"]["t2t"]["queries"] == 8
    assert report["tasks"]["t2t"]["k"] == 20
    assert set(report["latency"]) == {"c1", "c2"}
    assert (out / "report.md").read_text(encoding="utf-8") == stdout
    assert (out / "recall_at_k.png").is_file()
    assert (out / "latency.png").is_file()


def test_cxc_reports_service_errors(
    tiny: TinyDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = FakeService(tiny.captions, max_k=5)

    async def run_with_fake(config: QualityRunConfig) -> Any:
        return await run_quality(config, transport=service.transport())

    use_run(monkeypatch, "cxc", run_with_fake)
    status = cli.main(
        [
            "cxc",
            "--data",
            str(tiny.data_dir),
            "--out",
            str(tmp_path / "o"),
            "--tasks",
            "t2t",
            "--no-progress",
        ]
    )
    assert status == 1
    assert not (tmp_path / "o").exists()


def test_cxc_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["cxc", "--out", "x", "--tasks", "t2t,nope"])
    assert caught.value.code == 2
    assert "tasks must be among" in capsys.readouterr().err


def test_cxc_runs_every_task_with_image_flags(
    tiny: TinyDataset,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    service = dual_tower_service(tiny)

    async def run_with_fake(config: QualityRunConfig) -> Any:
        return await run_quality(config, transport=service.transport())

    use_run(monkeypatch, "cxc", run_with_fake)
    bison = tmp_path / "my_bison.csv"
    bison.write_bytes((tiny.data_dir / "bison" / "bison_val.csv").read_bytes())
    out = tmp_path / "report"
    status = cli.main(
        [
            "cxc",
            "--url",
            "http://fake",
            "--data",
            str(tiny.data_dir),
            "--split",
            "val",
            "--out",
            str(out),
            "--dataset",
            "scenes",
            "--images-dir",
            str(tiny.images_dir),
            "--image-queries",
            "upload",
            "--bison",
            str(bison),
            "--tasks",
            "i2t,t2i,i2t_original,t2i_original,i2i,sis,sits,bison",
            "--k",
            "10",
            "--bootstrap-samples",
            "10",
            "--max-uploads",
            "8",
            "--max-upload-bytes",
            "100000",
            "--no-progress",
        ]
    )
    assert status == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["dataset"] == "scenes"
    assert report["settings"]["bison_file"] == str(bison)
    assert report["settings"]["max_uploads_per_request"] == 8
    assert set(report["tasks"]) == {
        "i2t",
        "t2i",
        "i2t_original",
        "t2i_original",
        "i2i",
        "sis",
        "sits",
        "bison",
    }
    assert report["tasks"]["i2t"]["k"] == 10
    stdout = capsys.readouterr().out
    assert stdout.startswith("# Crisscross benchmark — scenes val")
    assert (out / "cxc_vs_original.png").is_file()
    assert (out / "recall_at_k.png").is_file()


def test_cxc_rejects_unknown_dataset_and_mode(capsys: pytest.CaptureFixture[str]) -> None:
    for arguments in (["--dataset", "flickr"], ["--image-queries", "pixels"]):
        with pytest.raises(SystemExit) as caught:
            cli.main(["cxc", "--out", "x", *arguments])
        assert caught.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_load_end_to_end(
    tiny: TinyDataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = cli.build_parser().parse_args(
        ["load", "--out", str(tmp_path), "--open-rates", "auto", "--closed", "1,4"]
    )
    assert args.open_rates is None
    assert args.closed == (1, 4)
    assert (
        cli.build_parser().parse_args(["load", "--out", "x", "--open-rates", "none"]).open_rates
        == ()
    )
    assert cli.build_parser().parse_args(
        ["load", "--out", "x", "--open-rates", "5,7.5"]
    ).open_rates == (
        5.0,
        7.5,
    )
    with pytest.raises(SystemExit) as bad:
        cli.build_parser().parse_args(["load", "--out", "x", "--closed", "0"])
    assert bad.value.code == 2
    capsys.readouterr()
    service = FakeSearchService()
    with serve_in_thread(service) as server:
        common = ["load", "--url", server.url, "--data", str(tiny.data_dir), "--split", "val"]
        status = cli.main(
            [
                *common,
                "--out",
                str(tmp_path / "cli"),
                "--closed",
                "1",
                "--open-rates",
                "50",
                "--duration-s",
                "0.3",
                "--drain-s",
                "1",
                "--warmup",
                "3",
            ]
        )
        missing = cli.main([*common, "--out", str(tmp_path / "bad"), "--collection", "images"])
    assert status == 0
    assert missing == 1
    out = capsys.readouterr().out
    assert "# Crisscross load test" in out
    assert "| r50 | 50.0 |" in out
    report = json.loads((tmp_path / "cli" / "load.json").read_text())
    assert set(report["open"]) == {"r50"}
    assert report["inprocess_qps"] is None
    assert report["efficiency_ratio"] is None


def test_compare_end_to_end(
    tiny: TinyDataset,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    service = two_variants(tiny)

    async def run_with_fake(config: CompareConfig) -> CompareRun:
        return await run_compare(config, transport=service.transport())

    use_run(monkeypatch, "compare", run_with_fake)
    out = tmp_path / "reports" / "compare"
    status = cli.main(
        [
            "compare",
            "--url",
            "http://fake",
            "--variants",
            "full,short",
            "--data",
            str(tiny.data_dir),
            "--split",
            "val",
            "--out",
            str(out),
            "--limit-queries",
            "5",
            "--latency-requests",
            "6",
            "--rounds",
            "2",
            "--warmup",
            "1",
            "--concurrency",
            "1,2",
            "--bootstrap-samples",
            "20",
            "--no-progress",
        ]
    )
    assert status == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith("# Crisscross variant comparison — coco-karpathy val")
    assert (out / "compare.md").read_text(encoding="utf-8") == stdout
    report = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert [entry["tasks"]["t2t"]["queries"] for entry in report["variants"]] == [5, 5]
    assert report["latency_schedule"]["chunk_requests"] == [3, 3]
    assert (out / "compare_pareto.png").is_file()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--variants", "a,a"], "distinct"),
        (["--variants", "a", "--tasks", "t2t,latency"], "quality tasks"),
    ],
)
def test_compare_rejects_bad_arguments(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["compare", "--out", "x", *arguments])
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


def test_compare_reports_an_unloaded_variant(
    tiny: TinyDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = two_variants(tiny)

    async def run_with_fake(config: CompareConfig) -> CompareRun:
        return await run_compare(config, transport=service.transport())

    use_run(monkeypatch, "compare", run_with_fake)
    arguments = ["compare", "--variants", "full,int9", "--data", str(tiny.data_dir)]
    assert cli.main([*arguments, "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    assert not (tmp_path / "o").exists()


def test_cider_builds_and_checks_parity(
    tiny: TinyDataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = cli.main(
        [
            "cider",
            "--data",
            str(tiny.data_dir),
            "--split",
            tiny.split,
            "--cache",
            str(tmp_path / "c"),
            "--parity-pairs",
            "50",
            "--no-progress",
        ]
    )
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["parity_ok"] is True
    assert summary["parity"]["pairs"] == 100
    assert summary["built"] is True
    assert summary["shape"] == [60, 12]
