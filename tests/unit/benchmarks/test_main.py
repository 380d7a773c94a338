"""``python -m benchmarks``: every subcommand end to end against fakes, argument errors (exit 2),
service and data errors (exit 1)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import benchmarks.__main__ as cli
from benchmarks.runs.cider import CiderRunConfig
from benchmarks.runs.compare.config import CompareConfig
from benchmarks.runs.load.config import LoadRunConfig
from benchmarks.runs.mixed.config import MixedRunConfig
from benchmarks.runs.options import config_from_args
from benchmarks.runs.quality.config import HTML_QUERIES, QualityRunConfig
from benchmarks.runs.sweep.config import SweepConfig
from tests.fakes.fake_search_service import FakeSearchService
from tests.fakes.fake_service import FakeService, dual_tower_service
from tests.fakes.fake_variants import two_variants
from tests.fakes.tiny_data import TinyDataset
from tests.fakes.tiny_http import serve_in_thread
from tests.unit.benchmarks.runs.mixed.fake_live import FakeLive

HELP = Path(__file__).with_name("help")
"""``--help`` of ``crisscross-bench`` and of each subcommand as they were before the options were
generated from the run configs (80 columns)."""

# Every option of every subcommand: flag → (argparse destination, default, kind), with
# CRISSCROSS_DATA_DIR=/data/dir (as before the options were generated from the run configs).
DEFAULTS = {
    "cxc": {
        "--url": ("url", "http://127.0.0.1:8000", "value"),
        "--split": ("split", "val", "value"),
        "--data": ("data", Path("/data/dir"), "value"),
        "--out": ("out", None, "required"),
        "--dataset": ("dataset", "coco-karpathy", "value"),
        "--collection": ("collection", "captions", "value"),
        "--images-collection": ("images_collection", "images", "value"),
        "--images-dir": ("images_dir", None, "value"),
        "--image-queries": ("image_queries", "item", "value"),
        "--caption-queries": ("caption_queries", "text", "value"),
        "--bison": ("bison", None, "value"),
        "--tasks": (
            "tasks",
            (
                "t2t",
                "t2t_cocaptions",
                "i2t",
                "i2t_original",
                "t2i",
                "t2i_original",
                "i2i",
                "sts",
                "sis",
                "sits",
                "bison",
                "latency",
            ),
            "value",
        ),
        "--k": ("k", 1000, "value"),
        "--probe-k": ("probe_k", 20, "value"),
        "--limit-queries": ("limit_queries", None, "value"),
        "--replay-concurrency": ("replay_concurrency", 8, "value"),
        "--bulk-size": ("bulk_size", 256, "value"),
        "--score-batch": ("score_batch", 1024, "value"),
        "--max-uploads": ("max_uploads", 32, "value"),
        "--max-upload-bytes": ("max_upload_bytes", 900000, "value"),
        "--bootstrap-samples": ("bootstrap_samples", 1000, "value"),
        "--seed": ("seed", 0, "value"),
        "--concurrency": ("concurrency", (1, 8), "value"),
        "--latency-requests": ("latency_requests", 300, "value"),
        "--warmup": ("warmup", 20, "value"),
        "--latency-k": ("latency_k", 10, "value"),
        "--variant": ("variant", None, "value"),
        "--ready-timeout": ("ready_timeout", 120.0, "value"),
        "--timeout": ("timeout", 60.0, "value"),
        "--no-progress": ("no_progress", False, "switch"),
        "--cider": ("cider", "auto", "value"),
        "--cider-cache": ("cider_cache", None, "value"),
    },
    "load": {
        "--url": ("url", "http://127.0.0.1:8000", "value"),
        "--data": ("data", Path("/data/dir"), "value"),
        "--split": ("split", "val", "value"),
        "--out": ("out", None, "required"),
        "--closed": ("closed", (1, 8, 32), "value"),
        "--open-rates": ("open_rates", None, "value"),
        "--open-fractions": (
            "open_fractions",
            (0.25, 0.5, 0.75, 0.9, 1.0, 1.25, 1.5, 2.0),
            "value",
        ),
        "--duration-s": ("duration_s", 20.0, "value"),
        "--requests": ("requests", 20000, "value"),
        "--warmup": ("warmup", 50, "value"),
        "--open-warmup-s": ("open_warmup_s", 2.0, "value"),
        "--max-connections": ("max_connections", 256, "value"),
        "--drain-s": ("drain_s", 10.0, "value"),
        "--settle-s": ("settle_s", 30.0, "value"),
        "--timeout": ("timeout", 10.0, "value"),
        "--k": ("k", 10, "value"),
        "--collection": ("collection", "captions", "value"),
        "--variant": ("variant", None, "value"),
        "--no-metadata": ("no_metadata", False, "switch"),
        "--seed": ("seed", 0, "value"),
        "--inprocess-json": ("inprocess_json", None, "value"),
        "--ready-timeout": ("ready_timeout", 120.0, "value"),
    },
    "compare": {
        "--url": ("url", "http://127.0.0.1:8000", "value"),
        "--variants": ("variants", (), "value"),
        "--setting": ("setting", None, "value"),
        "--data": ("data", Path("/data/dir"), "value"),
        "--split": ("split", "val", "value"),
        "--dataset": ("dataset", "coco-karpathy", "value"),
        "--out": ("out", None, "required"),
        "--tasks": ("tasks", ("t2t", "t2t_cocaptions", "sts"), "value"),
        "--limit-queries": ("limit_queries", None, "value"),
        "--k": ("k", 1000, "value"),
        "--concurrency": ("concurrency", (1, 8), "value"),
        "--latency-requests": ("latency_requests", 300, "value"),
        "--rounds": ("rounds", 3, "value"),
        "--warmup": ("warmup", 20, "value"),
        "--latency-k": ("latency_k", 10, "value"),
        "--bootstrap-samples": ("bootstrap_samples", 1000, "value"),
        "--seed": ("seed", 0, "value"),
        "--ready-timeout": ("ready_timeout", 120.0, "value"),
        "--timeout": ("timeout", 60.0, "value"),
        "--no-progress": ("no_progress", False, "switch"),
        "--html-queries": ("html_queries", 500, "value"),
        "--collection": ("collection", "captions", "value"),
        "--images-collection": ("images_collection", "images", "value"),
        "--latency-collection": ("latency_collection", "captions", "value"),
        "--bulk-size": ("bulk_size", 256, "value"),
    },
    "sweep": {
        "--url": ("url", "http://127.0.0.1:8000", "value"),
        "--collection": ("collection", None, "required"),
        "--out": ("out", None, "required"),
        "--queries": ("queries", 200, "value"),
        "--values": ("values", None, "value"),
        "--warmup": ("warmup", 20, "value"),
        "--seed": ("seed", 0, "value"),
        "--variant": ("variant", None, "value"),
        "--ready-timeout": ("ready_timeout", 120.0, "value"),
        "--timeout": ("timeout", 60.0, "value"),
    },
    "hostile": {
        "--url": ("url", "http://127.0.0.1:8000", "value"),
        "--data": ("data", Path("/data/dir"), "value"),
        "--split": ("split", "val", "value"),
        "--out": ("out", None, "required"),
        "--stalled-bodies": ("stalled_bodies", 200, "value"),
        "--slowloris": ("slowloris", 1000, "value"),
        "--declared-bytes": ("declared_bytes", 100_000, "value"),
        "--sent-bytes": ("sent_bytes", 10, "value"),
        "--line-interval-s": ("line_interval_s", 5.0, "value"),
        "--duration-s": ("duration_s", 30.0, "value"),
        "--attack-s": ("attack_s", 75.0, "value"),
        "--warmup": ("warmup", 50, "value"),
        "--head-timeout-s": ("head_timeout_s", 10.0, "value"),
        "--body-timeout-s": ("body_timeout_s", 60.0, "value"),
        "--crowd-ready-s": ("crowd_ready_s", 30.0, "value"),
        "--collection": ("collection", "captions", "value"),
        "--k": ("k", 10, "value"),
        "--timeout": ("timeout", 30.0, "value"),
        "--seed": ("seed", 0, "value"),
        "--ready-timeout": ("ready_timeout", 120.0, "value"),
    },
    "mixed": {
        "--url": ("url", "http://127.0.0.1:8000", "value"),
        "--data": ("data", Path("/data/dir"), "value"),
        "--out": ("out", None, "required"),
        "--collection": ("collection", "mixed-bench", "value"),
        "--dim": ("dim", 384, "value"),
        "--vector-format": ("vector_format", "base64", "value"),
        "--preload": ("preload", 20_000, "value"),
        "--preload-batch": ("preload_batch", 1000, "value"),
        "--searchers": ("searchers", 4, "value"),
        "--writers": ("writers", 2, "value"),
        "--batch": ("batch", 100, "value"),
        "--delete-share": ("delete_share", 0.1, "value"),
        "--phase-s": ("phase_s", 20.0, "value"),
        "--k": ("k", 10, "value"),
        "--warmup": ("warmup", 20, "value"),
        "--visibility-timeout-s": ("visibility_timeout_s", 5.0, "value"),
        "--seed": ("seed", 0, "value"),
        "--keep": ("keep", False, "switch"),
        "--timeout": ("timeout", 30.0, "value"),
        "--ready-timeout": ("ready_timeout", 120.0, "value"),
        "--no-progress": ("no_progress", False, "switch"),
    },
    "cider": {
        "--data": ("data", Path("/data/dir"), "value"),
        "--split": ("split", "val", "value"),
        "--cache": ("cache", None, "value"),
        "--parity-pairs": ("parity_pairs", 2000, "value"),
        "--seed": ("seed", 0, "value"),
        "--rebuild": ("rebuild", False, "switch"),
        "--no-progress": ("no_progress", False, "switch"),
    },
}


def over_fake_transport(
    monkeypatch: pytest.MonkeyPatch, name: str, transport: httpx.AsyncBaseTransport
) -> None:
    """Make subcommand ``name`` run its real run over ``transport`` instead of the network."""
    command = next(command for command in cli.COMMANDS if command.name == name)

    async def run(config: Any) -> Any:
        return await command.run(config, transport=transport)

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

    over_fake_transport(monkeypatch, "cxc", service.transport())
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

    over_fake_transport(monkeypatch, "cxc", service.transport())
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


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_cxc_runs_every_task_with_image_flags(
    tiny: TinyDataset,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    service = dual_tower_service(tiny)

    over_fake_transport(monkeypatch, "cxc", service.transport())
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


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
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
                "--open-warmup-s",
                "0.2",
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


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_compare_end_to_end(
    tiny: TinyDataset,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    service = two_variants(tiny)

    over_fake_transport(monkeypatch, "compare", service.transport())
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
    assert (out / "compare.html").is_file()
    assert (out / "compare_queries.json").is_file()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--variants", "a,a"], "distinct"),
        (["--variants", "a", "--tasks", "t2t,latency"], "quality tasks"),
        ([], "name at least one variant (--variants) or setting (--setting)"),
        (["--variants", "a", "--setting", "b=mode:dense"], "--variants or --setting, not both"),
        (["--setting", "h=mode:hybrid,alpha:2"], r"setting 'h': alpha must be in [0, 1]"),
        (["--setting", "h=boost:2"], "setting 'h': unknown key 'boost'"),
        (["--setting", "a=", "--setting", "a=mode:lexical"], "setting names repeat"),
        (["--setting", "h=mode:hybrid,window:5"], "window 5 is less than --latency-k 10"),
    ],
)
def test_compare_rejects_bad_arguments(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["compare", "--out", "x", *arguments])
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


def test_compare_takes_lever_settings(
    tiny: TinyDataset,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    service = two_variants(tiny)
    over_fake_transport(monkeypatch, "compare", service.transport())
    out = tmp_path / "levers"
    arguments = ["compare", "--url", "http://fake", "--data", str(tiny.data_dir)]
    arguments += ["--setting", "fast=variant:full", "--setting", "exact=variant:full,exact:true"]
    arguments += ["--tasks", "t2t", "--limit-queries", "3", "--latency-requests", "2"]
    arguments += ["--rounds", "1", "--warmup", "0", "--concurrency", "1", "--html-queries", "0"]
    assert (
        cli.main([*arguments, "--bootstrap-samples", "20", "--no-progress", "--out", str(out)]) == 0
    )
    assert capsys.readouterr().out.startswith("# Crisscross lever comparison — coco-karpathy val")
    report = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert [entry["name"] for entry in report["variants"]] == ["fast", "exact"]
    assert report["variants"][1]["request"] == {"search_params": {"exact": True}}
    exact = [body for _, body in service.searches if "search_params" in body]
    assert exact
    assert all(body["search_params"] == {"exact": True} for body in exact)


def test_compare_reports_an_unloaded_variant(
    tiny: TinyDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = two_variants(tiny)

    over_fake_transport(monkeypatch, "compare", service.transport())
    arguments = ["compare", "--variants", "full,int9", "--data", str(tiny.data_dir)]
    assert cli.main([*arguments, "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    assert not (tmp_path / "o").exists()


def test_mixed_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    service = FakeLive()
    over_fake_transport(monkeypatch, "mixed", service.transport())
    out = tmp_path / "reports" / "mixed"
    arguments = ["mixed", "--url", "http://fake", "--out", str(out), "--dim", "8"]
    arguments += ["--preload", "30", "--preload-batch", "10", "--batch", "5", "--phase-s", "0.2"]
    arguments += ["--searchers", "2", "--vector-format", "json", "--no-progress"]
    assert cli.main(arguments) == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith("# Crisscross: searches while writing")
    assert (out / "mixed.md").read_text(encoding="utf-8") == stdout
    report = json.loads((out / "mixed.json").read_text(encoding="utf-8"))
    assert report["settings"]["vector_format"] == "json"
    assert report["preload"]["requests"] == 3
    assert report["phases"]["writing"]["items_per_s"] > 0
    assert (out / "mixed.png").is_file()
    assert not service.collections


def test_mixed_reports_a_service_without_live_collections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    over_fake_transport(monkeypatch, "mixed", FakeLive(writes_unavailable=True).transport())
    arguments = ["mixed", "--url", "http://fake", "--out", str(tmp_path / "o"), "--no-progress"]
    assert cli.main(arguments) == 1
    assert "--collections-dir" in caplog.text
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--delete-share", "1"], "share in [0, 1)"),
        (["--vector-format", "npy"], "invalid choice"),
        (["--collection", "bad name"], "collection 'bad name'"),
        (["--searchers", "0"], "positive integer"),
    ],
)
def test_mixed_rejects_bad_arguments(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["mixed", "--out", "x", *arguments])
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


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


@pytest.mark.parametrize(
    "command", ["", "cxc", "load", "compare", "sweep", "hostile", "mixed", "cider"]
)
def test_help_is_unchanged(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as caught:
        cli.main([command, "--help"] if command else ["--help"])
    assert caught.value.code == 0
    expected = (HELP / f"{command or 'main'}.txt").read_text(encoding="utf-8")
    assert capsys.readouterr().out == expected


def test_every_option_keeps_its_destination_default_and_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRISSCROSS_DATA_DIR", "/data/dir")
    parser = cli.build_parser()
    commands = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    found: dict[str, dict[str, tuple[str, object, str]]] = {}
    for name, subparser in commands.choices.items():
        found[name] = {}
        for action in subparser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            kind = "required" if action.required else "value"
            if isinstance(action, argparse._StoreTrueAction):
                kind = "switch"
            found[name][action.option_strings[0]] = (action.dest, action.default, kind)
    assert found == DEFAULTS
    for name, options in DEFAULTS.items():
        assert list(found[name]) == list(options), name  # the --help order


def test_configs_of_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no option given, each run's config is its dataclass defaults, but for the URL and
    data folder of the command line and, for cxc, R (eq. 1), the CIDEr-D metrics and the HTML
    report's per-query sample on."""
    monkeypatch.setenv("CRISSCROSS_DATA_DIR", "/data/dir")
    parser = cli.build_parser()
    common: dict[str, Any] = {
        "url": "http://127.0.0.1:8000",
        "data_dir": Path("/data/dir"),
        "out_dir": Path("o"),
    }
    args = parser.parse_args(["cxc", "--out", "o"])
    assert config_from_args(QualityRunConfig, args) == QualityRunConfig(
        **common, recall_eq1=True, cider="auto", html_queries=HTML_QUERIES
    )
    args = parser.parse_args(["load", "--out", "o"])
    assert config_from_args(LoadRunConfig, args) == LoadRunConfig(**common)
    args = parser.parse_args(["compare", "--out", "o", "--variants", "a,b"])
    assert config_from_args(CompareConfig, args) == CompareConfig(**common, variants=("a", "b"))
    args = parser.parse_args(["sweep", "--out", "o", "--collection", "ivf"])
    assert config_from_args(SweepConfig, args) == SweepConfig(
        url="http://127.0.0.1:8000", out_dir=Path("o"), collection="ivf"
    )
    args = parser.parse_args(["mixed", "--out", "o"])
    assert config_from_args(MixedRunConfig, args) == MixedRunConfig(**common)
    args = parser.parse_args(["cider"])
    assert config_from_args(CiderRunConfig, args) == CiderRunConfig(data_dir=Path("/data/dir"))


def test_negative_counts_and_durations_mean_none() -> None:
    parser = cli.build_parser()
    args = parser.parse_args(["load", "--out", "o", "--warmup", "-3", "--drain-s", "-1.5"])
    config = config_from_args(LoadRunConfig, args)
    assert (config.warmup_requests, config.drain_s) == (0, 0.0)
    assert isinstance(config.drain_s, float)
    args = parser.parse_args(["cxc", "--out", "o", "--warmup", "-1", "--no-progress"])
    quality = config_from_args(QualityRunConfig, args)
    assert (quality.warmup_requests, quality.show_progress) == (0, False)
