"""End to end, several worker processes under the supervisor (``CRISSCROSS_WORKERS=2``) serving
real COCO captions with the real MiniLM: both workers answer on one port, ``/v1/variants`` and
``/metrics`` say so, a killed worker is replaced and serves the versions the others serve (a
reload's, not CURRENT's), and the answers equal a single process's.

Drain, reload under load and the refusal of a corrupt version in this layout are in
``test_operations.py`` (parametrised over both layouts).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from storage.reader import resolve_current
from tests.e2e.conftest import LiveService, free_port
from tests.e2e.test_operations import (
    ADMIN,
    BUNDLE,
    RELOAD_ENV,
    TIMEOUT_S,
    search,
    serving,
    write_tagged_version,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TWO_WORKERS = {**RELOAD_ENV, "CRISSCROSS_WORKERS": "2"}
# Fresh connections land on either worker; this many find both with near certainty.
PROBES = 40


def answering(service: LiveService) -> dict[int, dict[str, object]]:
    """Worker pid → its ``processes`` and served versions, over fresh connections (a worker
    still loading answers 503 and is left out)."""
    seen: dict[int, dict[str, object]] = {}
    for _ in range(PROBES):
        response = httpx.get(f"{service.url}/v1/variants", timeout=TIMEOUT_S)
        if response.status_code == 503:
            continue
        assert response.status_code == 200, response.text
        variants = response.json()
        (variant,) = variants["variants"]
        seen[variants["processes"]["pid"]] = {
            **variants["processes"],
            "versions": variant["bundle_versions"],
        }
    return seen


def test_two_workers_answer_on_one_port_and_metrics_add_them_up(
    private_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    with serving(private_roots, tmp_path, TWO_WORKERS) as service:
        # The service is ready once one worker is; the other takes connections once it is too.
        deadline, rounds = time.monotonic() + TIMEOUT_S, 1
        while len(seen := answering(service)) < 2:
            assert time.monotonic() < deadline, service.log()
            rounds += 1
        assert sorted(str(info["worker"]) for info in seen.values()) == ["0", "1"]
        assert {info["workers"] for info in seen.values()} == {2}
        with httpx.Client(base_url=service.url, timeout=TIMEOUT_S) as client:
            one = search(client, "a dog on a couch", k=5)
        assert one.status_code == 200, one.text
        metrics = httpx.get(f"{service.url}/metrics", timeout=TIMEOUT_S).text
        # Whichever worker answers /metrics counts every worker's requests.
        counted = 'crisscross_requests_total{method="GET",route="/v1/variants",status="200"}'
        assert f"{counted} {rounds * PROBES}.0" in metrics
        assert "crisscross_workers 2.0" in metrics
        assert "crisscross_ready 1.0" in metrics


def test_a_killed_worker_is_replaced_and_serves_the_reloaded_version(
    private_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    _, bundles_root = private_roots
    current = resolve_current(bundles_root / BUNDLE).name
    pinned = "20990303T000000000000Z"
    write_tagged_version(bundles_root, pinned)  # CURRENT stays on the old version
    with serving(private_roots, tmp_path, TWO_WORKERS) as service:
        reloaded = httpx.post(
            f"{service.url}/v1/admin/reload",
            json={"bundle": BUNDLE, "version": pinned},
            headers=ADMIN,
            timeout=TIMEOUT_S,
        )
        assert reloaded.status_code == 200, reloaded.text
        assert reloaded.json()["workers"] == 2
        before = answering(service)
        assert {str(info["versions"]) for info in before.values()} == {str({BUNDLE: pinned})}
        victim = next(iter(before))
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + TIMEOUT_S * 2
        while True:
            assert time.monotonic() < deadline, service.log()
            try:
                after = answering(service)
            except httpx.TransportError:
                continue  # a connection the kernel had queued for the killed worker
            # The replacement loaded CURRENT, then the latest reload order before its first
            # answer: no worker ever answers with another version.
            assert {str(info["versions"]) for info in after.values()} == {str({BUNDLE: pinned})}
            if len(after) == 2 and victim not in after:
                break
            time.sleep(0.2)
        assert current != pinned
        assert "exited with status -9; replacing it" in service.log()
        assert "caught up with reload order 1" in service.log()


def test_two_workers_answer_exactly_as_one_process(
    private_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    queries = ["a dog on a couch", "two people riding horses on a beach", "a red bus"]
    answers: dict[int, list[object]] = {}
    for workers in (1, 2):
        env = {**RELOAD_ENV, "CRISSCROSS_WORKERS": str(workers)}
        (tmp_path / str(workers)).mkdir()
        with (
            serving(private_roots, tmp_path / str(workers), env) as service,
            httpx.Client(base_url=service.url, timeout=TIMEOUT_S) as client,
        ):
            answers[workers] = [
                [(hit["id"], hit["score"]) for hit in search(client, q).json()["results"]]
                for q in queries
            ]
    assert answers[1] == answers[2]


def test_sigterm_while_the_workers_start_exits_0(
    served_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    variants_root, bundles_root = served_roots
    env = {
        **os.environ,
        "CRISSCROSS_VARIANTS_ROOT": str(variants_root),
        "CRISSCROSS_BUNDLES_ROOT": str(bundles_root),
        "CRISSCROSS_WORKERS": "2",
    }
    log_path = tmp_path / "service.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", str(free_port())],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + TIMEOUT_S
    while "worker 1 started" not in log_path.read_text():  # spawned, not yet serving
        assert time.monotonic() < deadline, log_path.read_text()
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=TIMEOUT_S) == 0, log_path.read_text()


def test_a_hung_worker_is_killed_and_replaced(
    private_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    env = {**TWO_WORKERS, "CRISSCROSS_WORKER_HEARTBEAT_TIMEOUT_S": "3"}
    with serving(private_roots, tmp_path, env) as service:
        deadline = time.monotonic() + TIMEOUT_S
        while len(before := answering(service)) < 2:
            assert time.monotonic() < deadline, service.log()
        victim = next(iter(before))
        os.kill(victim, signal.SIGSTOP)  # alive, but its event loop no longer runs
        try:
            while True:
                assert time.monotonic() < deadline + TIMEOUT_S, service.log()
                log = service.log()
                if "has not beaten" in log and "replacing it" in log:
                    break
                time.sleep(0.2)
        finally:
            with contextlib.suppress(ProcessLookupError):  # gone once killed and reaped
                os.kill(victim, signal.SIGCONT)
        while len(after := answering(service)) < 2 or victim in after:
            assert time.monotonic() < deadline + 2 * TIMEOUT_S, service.log()
        assert f"(pid {victim}) has not beaten" in service.log()
