"""``python -m service serve``: flags over environment, clear refusals, uvicorn options."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import uvicorn

import service.__main__ as cli
import service.runtime.server as server
from service.lifecycle.state import STATE_ATTRIBUTE
from service.settings import Settings
from tests.fakes.fake_bundles import write_fake_bundle
from tests.fakes.fake_encoders import FAKE_VARIANT


@pytest.fixture
def uvicorn_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Capture the server's config instead of serving; leave the test process's logging alone."""
    calls: list[dict[str, Any]] = []

    class RecordingServer:
        def __init__(
            self,
            config: uvicorn.Config,
            on_shutdown_signal: Callable[[], None],
            *,
            shutdown_delay_s: float = 0.0,
        ) -> None:
            calls.append(
                {
                    "app": config.app,
                    "host": config.host,
                    "port": config.port,
                    "workers": config.workers,
                    "access_log": config.access_log,
                    "timeout_graceful_shutdown": config.timeout_graceful_shutdown,
                    "on_shutdown_signal": on_shutdown_signal,
                    "shutdown_delay_s": shutdown_delay_s,
                }
            )

        def run(self, _sockets: object = None) -> None:
            return None

    monkeypatch.setattr(server, "DrainingServer", RecordingServer)
    monkeypatch.setattr(server, "configure_logging", lambda *_args: None)
    monkeypatch.setattr(server, "tune_process_threads", lambda *_args: {})
    monkeypatch.setattr(cli, "usable_cores", lambda: 2)  # automatic workers: 1, in-process
    return calls


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    write_fake_bundle(tmp_path / "bundles")
    (tmp_path / "variants" / FAKE_VARIANT).mkdir(parents=True)
    return tmp_path / "bundles", tmp_path / "variants"


def test_serve_runs_one_uvicorn_worker_with_graceful_shutdown(
    roots: tuple[Path, Path], uvicorn_calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRISSCROSS_PORT", "9100")
    monkeypatch.setenv("CRISSCROSS_GRACEFUL_SHUTDOWN_S", "7")
    bundles_root, variants_root = roots
    status = cli.main(
        [
            "serve",
            "--bundles-root",
            str(bundles_root),
            "--variants-root",
            str(variants_root),
            "--port",
            "9200",
        ]
    )
    assert status == 0
    (call,) = uvicorn_calls
    assert call["port"] == 9200  # the flag wins over CRISSCROSS_PORT
    assert call["host"] == "127.0.0.1"
    assert call["timeout_graceful_shutdown"] == 7  # from the environment
    assert call["workers"] == 1
    assert call["access_log"] is False


def test_missing_bundles_root_exits_2_with_a_clear_message(
    tmp_path: Path, uvicorn_calls: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    status = cli.main(["serve", "--bundles-root", str(tmp_path / "absent")])
    assert status == cli.EXIT_BAD_SETTINGS
    assert "absent" in capsys.readouterr().err
    assert uvicorn_calls == []


def test_invalid_setting_exits_2(
    roots: tuple[Path, Path],
    uvicorn_calls: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    bundles_root, variants_root = roots
    status = cli.main(
        [
            "serve",
            "--bundles-root",
            str(bundles_root),
            "--variants-root",
            str(variants_root),
            "--port",
            "70000",
        ]
    )
    assert status == cli.EXIT_BAD_SETTINGS
    assert "port" in capsys.readouterr().err
    assert uvicorn_calls == []


def test_a_command_is_required() -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([])
    assert exited.value.code == 2


def test_a_shutdown_signal_turns_readiness_off_first(
    roots: tuple[Path, Path], uvicorn_calls: list[dict[str, Any]]
) -> None:
    bundles_root, variants_root = roots
    argv = ["serve", "--bundles-root", str(bundles_root), "--variants-root", str(variants_root)]
    assert cli.main(argv) == 0
    (call,) = uvicorn_calls
    state = getattr(call["app"].state, STATE_ATTRIBUTE)
    assert state.draining is False
    call["on_shutdown_signal"]()
    assert state.draining is True
    assert state.not_ready_error().retry_after_s is not None


def test_serve_passes_the_shutdown_delay(
    roots: tuple[Path, Path],
    uvicorn_calls: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRISSCROSS_SHUTDOWN_DELAY_S", "2.5")
    bundles_root, variants_root = roots
    argv = ["serve", "--bundles-root", str(bundles_root), "--variants-root", str(variants_root)]
    assert cli.main(argv) == 0
    assert uvicorn_calls[0]["shutdown_delay_s"] == 2.5


def test_a_refused_key_exits_2_without_printing_it(
    roots: tuple[Path, Path],
    uvicorn_calls: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRISSCROSS_READ_KEYS", "tiny-secret")
    bundles_root, variants_root = roots
    argv = ["serve", "--bundles-root", str(bundles_root), "--variants-root", str(variants_root)]
    assert cli.main(argv) == cli.EXIT_BAD_SETTINGS
    err = capsys.readouterr().err
    assert "shorter than 16" in err
    assert "tiny-secret" not in err
    assert uvicorn_calls == []


def test_a_public_host_without_keys_exits_2(
    roots: tuple[Path, Path],
    uvicorn_calls: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    bundles_root, variants_root = roots
    argv = ["serve", "--host", "0.0.0.0", "--bundles-root", str(bundles_root)]
    argv += ["--variants-root", str(variants_root)]
    assert cli.main(argv) == cli.EXIT_BAD_SETTINGS
    assert "CRISSCROSS_READ_KEYS" in capsys.readouterr().err
    assert uvicorn_calls == []


def test_openapi_prints_the_document(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The document does not depend on the environment (not even on unsafe settings there).
    monkeypatch.setenv("CRISSCROSS_HOST", "0.0.0.0")
    assert cli.main(["openapi"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed)["paths"]["/v1/admin/reload"]
    assert printed == cli.openapi_document()
    out = tmp_path / "openapi.json"
    assert cli.main(["openapi", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == printed


def test_several_workers_run_under_the_supervisor(
    roots: tuple[Path, Path],
    uvicorn_calls: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    supervised: list[tuple[Settings, int]] = []

    class RecordingSupervisor:
        def __init__(self, settings: Settings, workers: int) -> None:
            supervised.append((settings, workers))

        def run(self) -> int:
            return 0

    monkeypatch.setattr(cli, "WorkerSupervisor", RecordingSupervisor)
    monkeypatch.setenv("CRISSCROSS_WORKERS", "3")
    bundles_root, variants_root = roots
    argv = ["serve", "--bundles-root", str(bundles_root), "--variants-root", str(variants_root)]
    assert cli.main(argv) == 0
    assert [workers for _, workers in supervised] == [3]
    assert uvicorn_calls == []  # the supervisor's workers run the servers


def test_automatic_workers_on_two_cores_serve_in_process(
    roots: tuple[Path, Path],
    uvicorn_calls: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRISSCROSS_WORKERS", "0")
    bundles_root, variants_root = roots
    argv = ["serve", "--bundles-root", str(bundles_root), "--variants-root", str(variants_root)]
    assert cli.main(argv) == 0
    assert len(uvicorn_calls) == 1
