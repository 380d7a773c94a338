"""Real ``python -m service serve`` processes replicating live collections on loopback, for the
end-to-end replication tests (test_replica_failover_loop.py, test_read_your_writes.py).

Each :class:`Replica` keeps its port, its collections folder and its log across restarts (the
other replicas know it by its advertised URL, so a restarted one must come back at the same
address). It serves no bundle (an empty bundles root and variants root: the process is ready at
once and serves its live collections only), runs in a session of its own so a SIGKILL takes the
whole process group, and appends its output to its log after a marker line per start.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from tests.e2e.conftest import free_port

READY_TIMEOUT_S: Final = 60.0
KILL_WAIT_S: Final = 10.0
STOP_WAIT_S: Final = 30.0
LOG_TAIL_LINES: Final = 60
POLL_S: Final = 0.02
STATUS_TIMEOUT = httpx.Timeout(3.0, connect=1.0)


_ROUTINE: Final = re.compile(
    r"crisscross\.access .*route=(?!\S*(promote|follow|compact))\S* status=200"
)
"""Access lines of requests answered 200 but promotions, follow orders and compactions."""


class ReplicaError(AssertionError):
    """A replica that would not start, stop or catch up (the tests report it with the seed)."""


def serving_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a replica process: this one's, one worker, CPU, a short drain on
    SIGTERM, and ``extra`` (``CRISSCROSS_*`` settings) on top."""
    return {
        **os.environ,
        "CRISSCROSS_PROVIDERS": "cpu",
        "CRISSCROSS_WORKERS": "1",
        "CRISSCROSS_GRACEFUL_SHUTDOWN_S": "5",
        **(extra or {}),
    }


@dataclass
class Replica:
    """One member of a replica set: a fixed port and folder, and the process serving them now
    (None while it is down)."""

    name: str
    root: Path
    """Holds its collections folder and its log (and the empty bundle and variant roots)."""
    set_size: int
    env: Mapping[str, str] = field(default_factory=dict)
    """``CRISSCROSS_*`` settings on top of :func:`serving_env`'s."""
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    spawned_at: float = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def collections_dir(self) -> Path:
        return self.root / "collections"

    @property
    def log_path(self) -> Path:
        return self.root / "service.log"

    @property
    def up(self) -> bool:
        """Whether its process runs (it may not be ready yet)."""
        return self.process is not None and self.process.poll() is None

    def spawn(self, follow: str | None = None) -> None:
        """Start the process (following ``follow``, else as its saved state says: a leader
        restarted without it leads its old term); :meth:`wait_ready` waits for it."""
        if self.up:
            raise ReplicaError(f"{self.name} is already running")
        empty_bundles, empty_variants = self.root / "no-bundles", self.root / "no-variants"
        empty_bundles.mkdir(parents=True, exist_ok=True)
        empty_variants.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--collections-dir", str(self.collections_dir)]
        command += ["--replica-set-size", str(self.set_size), "--advertise-url", self.url]
        command += ["--bundles-root", str(empty_bundles), "--variants-root", str(empty_variants)]
        if follow is not None:
            command += ["--follow", follow]
        self.starts += 1
        with self.log_path.open("ab") as log:
            marker = f"\n===== {self.name} start {self.starts} (follow {follow}) =====\n"
            log.write(marker.encode())
            log.flush()
            self.spawned_at = time.monotonic()
            self.process = subprocess.Popen(
                command,
                env=serving_env(self.env),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> float:
        """Wait until /readyz answers 200; the seconds from the spawn to ready."""
        deadline = time.monotonic() + timeout_s
        with httpx.Client(base_url=self.url, timeout=STATUS_TIMEOUT) as client:
            while True:
                if self.process is None or self.process.poll() is not None:
                    code = None if self.process is None else self.process.returncode
                    raise ReplicaError(f"{self.name} exited with {code} before it was ready")
                with contextlib.suppress(httpx.TransportError):
                    if client.get("/readyz").status_code == 200:
                        return time.monotonic() - self.spawned_at
                if time.monotonic() > deadline:
                    raise ReplicaError(f"{self.name} was not ready after {timeout_s} s")
                time.sleep(POLL_S)

    def start(self, follow: str | None = None) -> float:
        """:meth:`spawn` and :meth:`wait_ready`."""
        self.spawn(follow)
        return self.wait_ready()

    def kill(self) -> None:
        """SIGKILL the process group and reap it (nothing when it is down)."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=KILL_WAIT_S)

    def stop(self) -> int:
        """SIGTERM, then wait; the exit code (a process that ignores it is killed: -9)."""
        process, self.process = self.process, None
        if process is None:
            return 0
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=KILL_WAIT_S)
            return -9

    def status(self, client: httpx.Client) -> dict[str, Any]:
        """``GET /v1/replication`` (raises ``httpx.TransportError`` while it is down)."""
        response = client.get(f"{self.url}/v1/replication", timeout=STATUS_TIMEOUT)
        if response.status_code != 200:
            raise ReplicaError(
                f"{self.name}: GET /v1/replication answered {response.status_code} {response.text}"
            )
        status: dict[str, Any] = response.json()
        return status

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of its log, but the access lines of routine requests
        answered 200 (the writers' and the reader's thousands would hide the rest)."""
        if not self.log_path.exists():
            return "(no log)"
        kept = [
            line
            for line in self.log_path.read_text(errors="replace").splitlines()
            if not _ROUTINE.search(line)
        ]
        return "\n".join(kept[-lines:])


def start_all(replicas: Iterable[Replica], follow: str | None = None) -> list[float]:
    """Spawn every replica of ``replicas`` at once (following ``follow``), then wait until each
    is ready: the seconds each took (the processes start side by side)."""
    started = list(replicas)
    for replica in started:
        replica.spawn(follow)
    return [replica.wait_ready() for replica in started]


def stop_all(replicas: Iterable[Replica]) -> dict[str, int]:
    """SIGTERM every running replica; each one's exit code."""
    return {replica.name: replica.stop() for replica in replicas}


def logs_of(replicas: Sequence[Replica], lines: int = LOG_TAIL_LINES) -> str:
    """The tail of each replica's log, for a failure message."""
    return "\n".join(
        f"--- {replica.name} ({replica.url}) log, tail of {replica.log_path} ---\n"
        f"{replica.log_tail(lines)}"
        for replica in replicas
    )


def wait_caught_up(
    client: httpx.Client,
    leader: Replica,
    followers: Sequence[Replica],
    collection: str,
    timeout_s: float,
) -> dict[str, dict[str, Any]]:
    """Wait until ``leader`` leads, every follower follows it, and each holds ``collection`` up
    to the leader's sequence number (the leader's own moving on is waited for too); every
    replica's status (by name). :class:`ReplicaError` naming each one's last status after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    statuses: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    while True:
        errors.clear()
        for replica in (leader, *followers):
            try:
                statuses[replica.name] = replica.status(client)
            except httpx.TransportError as exc:
                errors[replica.name] = f"{type(exc).__name__}: {exc}"
        if not errors and _caught_up(statuses, leader, followers, collection):
            return statuses
        if time.monotonic() > deadline:
            shown = {name: _summary(status) for name, status in statuses.items()}
            raise ReplicaError(
                f"the replicas did not catch up with {leader.name} ({leader.url}) on "
                f"{collection!r} within {timeout_s} s: statuses {shown}, unreachable {errors}"
            )
        time.sleep(POLL_S * 2)


def _caught_up(
    statuses: Mapping[str, Mapping[str, Any]],
    leader: Replica,
    followers: Sequence[Replica],
    collection: str,
) -> bool:
    lead = statuses[leader.name]
    if lead["role"] != "leader" or collection not in lead["collections"]:
        return False
    seq = lead["collections"][collection]
    for follower in followers:
        status = statuses[follower.name]
        if status["role"] != "follower" or status["leader"] != leader.url:
            return False
        if status["collections"].get(collection) != seq:
            return False
    return True


def _summary(status: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("role", "term", "leader", "collections", "last_error")
    return {key: status.get(key) for key in keys}
