"""The sweep run end to end over real HTTP: a uvicorn server on loopback serving the app with
the fake encoder and a real bundle of tuned IVF and HNSW indexes over clustered vectors; the
command line writes sweep.json, sweep.md and sweep.png."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

import benchmarks.__main__ as cli
from service.http.app import create_app
from service.settings import Settings
from tests.fakes.approx_bundles import APPROX_NLIST, write_approx_bundle
from tests.fakes.fake_encoders import FAKE_VARIANT, FakeTextEncoder, fake_factory
from tests.fakes.service_app import clear_service_env

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def served_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("sweep-live")
    write_approx_bundle(root / "bundles")
    (root / "variants" / FAKE_VARIANT).mkdir(parents=True)
    with pytest.MonkeyPatch.context() as monkeypatch:
        clear_service_env(monkeypatch)
        settings = Settings(bundles_root=root / "bundles", variants_root=root / "variants")
        app = create_app(settings, encoder_factory=fake_factory(FakeTextEncoder()))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20.0
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the service did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10.0)


def test_sweep_of_an_ivf_index_over_http(
    served_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    status = cli.main(
        [
            "sweep",
            "--url",
            served_url,
            "--collection",
            "ivf",
            "--queries",
            "40",
            "--warmup",
            "3",
            "--out",
            str(out),
        ]
    )
    assert status == 0
    report = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert report["parameter"] == "nprobe"
    assert report["index_kind"] == "ivf_flat"
    # The build's tuning sweep (1..8, stopping at the chosen 8), then two doublings past it,
    # the second at the index's 32 lists.
    assert report["values"] == [1, 2, 4, 8, 16, APPROX_NLIST]
    assert report["queries"] == 40
    assert report["exact"]["recall_at_10"] == 1.0  # the exact search checks the harness itself
    recalls = [point["recall_at_10"] for point in report["points"]]
    assert recalls == sorted(recalls)  # more lists, more of the exact answers
    assert recalls[0] < 0.95
    assert all(
        point["p50_ms"] > 0 and point["p99_ms"] >= point["p50_ms"] for point in report["points"]
    )
    measured_at_build = [point["build_recall_at_10"] is not None for point in report["points"]]
    assert measured_at_build == [True] * 4 + [False] * 2
    markdown = (out / "sweep.md").read_text(encoding="utf-8")
    assert capsys.readouterr().out == markdown
    assert "| nprobe | recall@10 |" in markdown
    assert "| 8 (default) |" in markdown
    assert (out / "sweep.png").stat().st_size > 10_000


def test_sweep_with_given_values_of_an_hnsw_index(served_url: str, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    status = cli.main(
        [
            "sweep",
            "--url",
            served_url,
            "--collection",
            "approx:hnsw",
            "--queries",
            "20",
            "--values",
            "8,64",
            "--warmup",
            "0",
            "--seed",
            "3",
            "--out",
            str(out),
        ]
    )
    assert status == 0
    report = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert (report["parameter"], report["values"]) == ("ef_search", [8, 64])
    assert report["points"][1]["recall_at_10"] >= report["points"][0]["recall_at_10"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--collection", "flat"], "no search parameter to sweep"),
        (["--collection", "nope"], "no served collection matches 'nope'"),
        (["--collection", "ivf", "--values", str(APPROX_NLIST + 1)], "nlist=32"),
    ],
)
def test_sweep_refusals_exit_1(
    served_url: str,
    tmp_path: Path,
    arguments: list[str],
    message: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    status = cli.main(
        ["sweep", "--url", served_url, "--queries", "5", "--out", str(tmp_path), *arguments]
    )
    assert status == 1
    assert message in caplog.text
