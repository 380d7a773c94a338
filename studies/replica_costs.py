"""What do replicas of a live collection cost: in write throughput, in how far followers lag,
in how fast a follower catches up, in how long a failover takes, and in search throughput?

Every figure comes from real ``python -m service serve`` processes on free 127.0.0.1 ports, each
with its own temporary collections dir, an empty bundles root and an empty variants root,
``--advertise-url http://127.0.0.1:<port>`` and ``CRISSCROSS_LOG_LEVEL=warning``. Vectors are
384-d unit vectors (client vectors, sent as ``vector_base64``) with metadata ``{"cat": "c<k>"}``.

1. **Write throughput**: ``--n`` items in batches of 100 into a fresh collection, from 1 client
   and from 8 concurrent clients (one ``httpx.Client`` each), for ``single`` (one server,
   replica set size 1) and a 3-server set (leader + 2 followers) with ``?acks=leader``,
   ``majority`` and ``all``: items/s and batch p50/p99 ms.
2. **Replication lag** on the 3-server set while 8 clients upsert batches as fast as they can
   (acks=leader; threads of a child process, so that the probes' timings do not wait for their
   GIL): every 50 ms the leader's ``GET /v1/replication``, leader seq minus each follower's
   durable position (records); and ``--probes`` (300) probes interleaved with that load
   (upsert 1 item on the leader, then ``items/get`` on the follower with
   ``follower_reads=local`` every 1 ms until found): time from the leader's 200 to found. The
   load runs until the probes are done (at least ``--lag-min-s``); with the product's default
   compact_own_rows (100,000) every server compacts during it, and the figures say how often.
3. **Catch-up**: a leader that never compacts by itself (``CRISSCROSS_COMPACT_OWN_ROWS`` and
   ``CRISSCROSS_COMPACT_MIN_ROWS`` 10,000,000), one follower stopped (SIGTERM) while
   ``--catchup-records`` upserts of 1 item each are written (8 clients, acks=leader), then
   started again: time until its sequence equals the leader's (records/s). Then across a
   compaction: compact, stop the follower, write a tenth as many more, compact again, start it:
   time to install the base and catch up.
4. **Promotion**: SIGKILL that leader; ``POST /v1/replication/promote`` on the follower with the
   highest seq (answer time), and the time from the kill to the first write (acks=majority)
   the new leader answers 200 (503 retried every 20 ms).
5. **Search throughput, 1 vs 2 processes**: 25,000 vectors (the first 25,000 caption vectors of
   ``artifacts/bundles/coco-captions`` where present, else random), ``k`` 10 vector searches
   from 8 clients for ``--search-s`` seconds: the leader alone; leader + 1 follower (each client
   alternates between the two) with default follower reads (the follower asks the leader's
   position before each search); the same with ``follower_reads=local``.

Phases 1, 2 and 5 run on one 3-server set (leader, a follower with default reads, a follower
with ``follower_reads=local``), phases 3 and 4 on a second one. Prints a progress line per phase
and Markdown tables; writes every figure (with each server's log lines, all at warning or above)
as JSON to ``--out``. Clients and servers share this machine's cores: the figures are for that,
not for one machine per replica.

usage: .venv/bin/python studies/replica_costs.py [--n 20000] [--catchup-records 100000]
       [--search-s 15] [--probes 300] [--lag-min-s 10] [--lag-max-s 300]
       [--out reports/replicas/replica_costs.json] [--quick]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import itertools
import json
import multiprocessing
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

DIM = 384
BATCH = 100
CLIENTS = 8
FIELDS = {"cat": "string"}
WAIT_S = 120.0
"""Longest any wait for a server (ready, caught up, answered) may take."""
NO_COMPACTION = {
    "CRISSCROSS_COMPACT_OWN_ROWS": "10000000",
    "CRISSCROSS_COMPACT_MIN_ROWS": "10000000",
}
LOCAL_READS = {"CRISSCROSS_FOLLOWER_READS": "local"}
COCO = Path("artifacts/bundles/coco-captions")
_STARTED = time.perf_counter()


def progress(text: str) -> None:
    """One progress line, with the seconds since the study started."""
    print(f"[{time.perf_counter() - _STARTED:7.1f}s] {text}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(
    check: Callable[[], Any], what: str, timeout: float = WAIT_S, every: float = 0.05
) -> Any:
    """Poll ``check`` until it returns something truthy (returned); connection errors count as
    not yet; :class:`TimeoutError` naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if result := check():
                return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(every)


def quantiles(values: Sequence[float]) -> dict[str, float | None]:
    """p50, p99 and max of ``values`` (None when empty)."""
    if not values:
        return {"p50": None, "p99": None, "max": None, "count": 0}
    array = np.asarray(values, dtype=np.float64)
    return {
        "p50": float(np.percentile(array, 50)),
        "p99": float(np.percentile(array, 99)),
        "max": float(array.max()),
        "count": len(values),
    }


class Server:
    """A ``python -m service serve`` on a free port with its own collections dir and empty
    bundles and variants roots (kept across a restart: same port, same dir)."""

    def __init__(
        self,
        root: Path,
        name: str,
        set_size: int,
        follow: Server | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.folder = root / name
        for sub in ("collections", "bundles", "variants"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.set_size = set_size
        self.follow = follow
        self.env = env or {}
        self.log = self.folder / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=self.url, timeout=WAIT_S)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> float:
        """Start the process (does not wait); returns the perf_counter of the start."""
        command = [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--collections-dir", str(self.folder / "collections")]
        command += ["--bundles-root", str(self.folder / "bundles")]
        command += ["--variants-root", str(self.folder / "variants")]
        command += ["--replica-set-size", str(self.set_size), "--advertise-url", self.url]
        if self.follow is not None:
            command += ["--follow", self.follow.url]
        env = {**os.environ, "CRISSCROSS_LOG_LEVEL": "warning", **self.env}
        started = time.perf_counter()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        return started

    def wait_ready(self) -> None:
        def ready() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.process.returncode}); {self.log}")
            return self.http.get("/readyz").status_code == 200

        wait_for(ready, f"{self.name} ready", every=0.1)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Send ``sig`` and wait for the process to end (SIGKILL after WAIT_S)."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        self.http.close()
        self.http = httpx.Client(base_url=self.url, timeout=WAIT_S)

    def status(self) -> dict[str, Any]:
        """``GET /v1/replication``."""
        answer = self.http.get("/v1/replication")
        answer.raise_for_status()
        result: dict[str, Any] = answer.json()
        return result

    def seq(self, collection: str) -> int | None:
        """The sequence number readers see of ``collection`` here (None: not here)."""
        value = self.status()["collections"].get(collection)
        return None if value is None else int(value)

    def metric_lines(self, prefix: str) -> list[str]:
        """The /metrics lines starting with ``prefix`` (not the ``_created`` timestamps)."""
        text = self.http.get("/metrics").text
        return [
            line
            for line in text.splitlines()
            if line.startswith(prefix) and not line.split("{")[0].split(" ")[0].endswith("_created")
        ]

    def compactions(self) -> dict[str, float]:
        """Compactions done so far (every trigger and outcome) and their seconds in all."""
        done = seconds = 0.0
        for line in self.metric_lines("crisscross_compaction"):
            name, _, value = line.rpartition(" ")
            if name.startswith("crisscross_compactions_total"):
                done += float(value)
            elif name == "crisscross_compaction_seconds_sum":
                seconds += float(value)
        return {"count": done, "seconds": seconds}

    def bad_log_lines(self) -> list[str]:
        """Its log lines at warning and above (the access log is off at level warning)."""
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return [line for line in lines if line.strip()]


class Cluster:
    """Every server the study started, so that all are stopped at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.servers: list[Server] = []

    def server(self, name: str, set_size: int, follow: Server | None = None, **env: str) -> Server:
        server = Server(self.root, name, set_size, follow, env)
        self.servers.append(server)
        return server

    def replica_set(
        self, prefix: str, leader_env: dict[str, str], follower_envs: Sequence[dict[str, str]]
    ) -> list[Server]:
        """A leader and followers, started, ready, and every follower fetching from it."""
        leader = self.server(f"{prefix}-leader", 1 + len(follower_envs), **leader_env)
        leader.start()
        leader.wait_ready()
        followers = [
            self.server(f"{prefix}-follower{i + 1}", 1 + len(follower_envs), leader, **env)
            for i, env in enumerate(follower_envs)
        ]
        for follower in followers:
            follower.start()
        for follower in followers:
            follower.wait_ready()
        urls = {f.url for f in followers}
        wait_for(
            lambda: urls <= {f["url"] for f in leader.status()["followers"]},
            f"{prefix}: followers fetching",
        )
        return [leader, *followers]

    def stop_all(self) -> None:
        """Stop every server, the last started first (followers before their leader)."""
        for server in reversed(self.servers):
            with contextlib.suppress(Exception):
                server.stop()
            if server.process is not None and server.process.poll() is None:
                server.process.kill()
            server.http.close()


# Payloads


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def packed(vectors: np.ndarray) -> list[str]:
    """Standard base64 of each row as little-endian float32."""
    rows = np.ascontiguousarray(vectors, dtype="<f4")
    return [base64.b64encode(row.tobytes()).decode("ascii") for row in rows]


def upsert_body(ids: Sequence[str], vectors: Sequence[str]) -> bytes:
    items = [
        {"id": item_id, "vector_base64": vector, "metadata": {"cat": f"c{i % 16}"}}
        for i, (item_id, vector) in enumerate(zip(ids, vectors, strict=True))
    ]
    return json.dumps({"items": items}).encode()


def batch_bodies(vectors: Sequence[str], prefix: str = "i") -> list[bytes]:
    """Upsert bodies of ``BATCH`` items over ``vectors`` (ids ``<prefix><row>``)."""
    return [
        upsert_body(
            [f"{prefix}{j}" for j in range(i, min(i + BATCH, len(vectors)))], vectors[i : i + BATCH]
        )
        for i in range(0, len(vectors), BATCH)
    ]


HEADERS = {"content-type": "application/json"}


def create(leader: Server, name: str, followers: Sequence[Server] = ()) -> None:
    """Create client-vector collection ``name`` and wait until every follower holds it."""
    answer = leader.http.post("/v1/collections", json={"name": name, "dim": DIM, "fields": FIELDS})
    if answer.status_code != 201:
        raise RuntimeError(f"create {name}: {answer.status_code} {answer.text[:300]}")
    wait_caught_up(leader, followers, name)


def wait_caught_up(leader: Server, followers: Sequence[Server], name: str) -> int:
    """Wait until the leader's status shows every follower's durable position of ``name`` at
    the leader's seq; returns that seq."""
    urls = {f.url for f in followers}

    def caught_up() -> int | None:
        status = leader.status()
        seq = status["collections"].get(name)
        positions = {f["url"]: f["positions"].get(name) for f in status["followers"]}
        if seq is not None and all(positions.get(url) == seq for url in urls):
            return int(seq) + 1  # truthy even at seq 0
        return None

    return int(wait_for(caught_up, f"followers of {leader.name} caught up on {name}")) - 1


def drop(leader: Server, name: str) -> None:
    leader.http.delete(f"/v1/collections/{name}")


# Runs


class Load:
    """Threads that send bodies; each keeps its own ``httpx.Client`` and latencies."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self.errors: list[str] = []
        self.done_items = 0
        self._lock = threading.Lock()

    def record(self, status: int, seconds: float, items: int, text: str) -> None:
        with self._lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if status == 200:
                self.latencies.append(seconds)
                self.done_items += items
            elif len(self.errors) < 5:
                self.errors.append(f"{status} {text[:200]}")

    def run(self, clients: int, work: Callable[[httpx.Client, int], None]) -> float:
        """Run ``work(client, thread_index)`` on ``clients`` threads; returns the seconds
        from the first start to the last end. A thread's exception is raised here."""
        failures: list[BaseException] = []

        def thread_main(index: int) -> None:
            try:
                with httpx.Client(timeout=WAIT_S) as client:
                    work(client, index)
            except BaseException as exc:  # re-raised below
                failures.append(exc)

        threads = [threading.Thread(target=thread_main, args=(i,)) for i in range(clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        if failures:
            raise failures[0]
        return elapsed


def send_bodies(
    url: str, bodies: Sequence[bytes], clients: int, items_per_body: Sequence[int]
) -> tuple[Load, float]:
    """POST every body of ``bodies`` to ``url`` from ``clients`` threads (each takes the next)."""
    load = Load()
    position = itertools.count()

    def work(client: httpx.Client, _: int) -> None:
        while (i := next(position)) < len(bodies):
            started = time.perf_counter()
            answer = client.post(url, content=bodies[i], headers=HEADERS)
            load.record(
                answer.status_code, time.perf_counter() - started, items_per_body[i], answer.text
            )

    return load, load.run(clients, work)


def write_figures(load: Load, elapsed: float) -> dict[str, Any]:
    lat = quantiles([s * 1000 for s in load.latencies])
    return {
        "items": load.done_items,
        "seconds": elapsed,
        "items_per_s": load.done_items / elapsed,
        "batch_p50_ms": lat["p50"],
        "batch_p99_ms": lat["p99"],
        "statuses": {str(k): v for k, v in sorted(load.statuses.items())},
        "errors": load.errors,
    }


def write_throughput(
    layout: str,
    servers: Sequence[Server],
    acks: str | None,
    bodies: Sequence[bytes],
    clients: int,
    name: str,
) -> dict[str, Any]:
    leader, followers = servers[0], servers[1:]
    create(leader, name, followers)
    query = "" if acks is None else f"?acks={acks}"
    sizes = [BATCH] * len(bodies)
    cpu = time.process_time()
    load, elapsed = send_bodies(
        f"{leader.url}/v1/collections/{name}/items{query}", bodies, clients, sizes
    )
    figures = {
        "layout": layout,
        "acks": acks or "(server default)",
        "clients": clients,
        **write_figures(load, elapsed),
        "client_cpu_cores": (time.process_time() - cpu) / elapsed,
    }
    progress(
        f"write {layout:16} clients {clients}: {figures['items_per_s']:8.0f} items/s, batch "
        f"p50 {figures['batch_p50_ms']:.1f} ms p99 {figures['batch_p99_ms']:.1f} ms "
        f"{figures['statuses']}"
    )
    if followers:
        wait_caught_up(leader, followers, name)
    drop(leader, name)
    return figures


def lag_writers(
    url: str, pool: list[str], clients: int, stop: Any, done: Any, answers: Any
) -> None:
    """In a child process (so that the probes' timings do not wait on these threads' GIL):
    ``clients`` threads upsert fresh batches of ``BATCH`` to ``url`` until ``stop`` is set,
    counting the items answered 200 in ``done``; puts the statuses on ``answers``."""
    load = Load()

    def writer(client: httpx.Client, index: int) -> None:
        for batch in itertools.count():
            if stop.is_set():
                return
            start = (batch * BATCH + index * 997) % (len(pool) - BATCH)
            body = upsert_body(
                [f"w{index}-{batch}-{j}" for j in range(BATCH)], pool[start : start + BATCH]
            )
            started = time.perf_counter()
            answer = client.post(url, content=body, headers=HEADERS)
            load.record(answer.status_code, time.perf_counter() - started, BATCH, answer.text)
            if answer.status_code == 200:
                with done.get_lock():
                    done.value += BATCH

    failure = None
    try:
        load.run(clients, writer)
    except Exception as exc:  # reported to the parent
        failure = f"{type(exc).__name__}: {exc}"
    answers.put(
        {
            "statuses": {str(k): v for k, v in sorted(load.statuses.items())},
            "errors": load.errors,
            "batch_ms": quantiles([v * 1000 for v in load.latencies]),
            "failure": failure,
        }
    )


def replication_lag(
    servers: Sequence[Server],
    local: Server,
    pool: Sequence[str],
    probes: int,
    min_load_s: float,
    max_load_s: float,
) -> dict[str, Any]:
    """Phase 2 (see the module docstring) on ``servers`` (leader first); ``local`` is the
    follower with follower_reads=local."""
    leader = servers[0]
    name = "lag"
    create(leader, name, servers[1:])
    url = f"{leader.url}/v1/collections/{name}/items?acks=leader"
    context = multiprocessing.get_context("spawn")
    stop, done, answers = context.Event(), context.Value("q", 0), context.Queue()
    writers = context.Process(
        target=lag_writers, args=(url, list(pool), CLIENTS, stop, done, answers)
    )
    sampling = threading.Event()

    samples: dict[str, list[int]] = {f.url: [] for f in servers[1:]}
    sampler_failures: list[BaseException] = []

    def sampler() -> None:
        try:
            with httpx.Client(base_url=leader.url, timeout=WAIT_S) as client:
                while not sampling.is_set():
                    status = client.get("/v1/replication").json()
                    seq = status["collections"].get(name)
                    for follower in status["followers"]:
                        held = follower["positions"].get(name)
                        if seq is not None and held is not None and follower["url"] in samples:
                            samples[follower["url"]].append(int(seq) - int(held))
                    time.sleep(0.05)
        except BaseException as exc:  # re-raised below
            sampler_failures.append(exc)

    visible: list[float] = []
    probe_upserts: list[float] = []
    probe_polls: list[int] = []
    probe_failures: list[str] = []

    def prober() -> None:
        rng = np.random.default_rng(7)
        give_up = time.perf_counter() + max_load_s
        with httpx.Client(timeout=WAIT_S) as client:
            for i in range(probes):
                if time.perf_counter() > give_up:
                    probe_failures.append(f"stopped after {i} probes: --lag-max-s {max_load_s}")
                    return
                item = f"probe{i}"
                body = upsert_body([item], packed(unit_vectors(rng, 1)))
                sent = time.perf_counter()
                answer = client.post(url, content=body, headers=HEADERS)
                answered = time.perf_counter()
                probe_upserts.append(answered - sent)
                if answer.status_code != 200:
                    probe_failures.append(f"upsert {answer.status_code} {answer.text[:200]}")
                    continue
                deadline = answered + WAIT_S
                get = {"ids": [item]}
                for poll in itertools.count(1):
                    found = client.post(f"{local.url}/v1/collections/{name}/items/get", json=get)
                    if found.status_code == 200 and found.json()["items"]:
                        visible.append(time.perf_counter() - answered)
                        probe_polls.append(poll)
                        break
                    if found.status_code != 200 and len(probe_failures) < 5:
                        probe_failures.append(f"get {found.status_code} {found.text[:200]}")
                    if time.perf_counter() > deadline:
                        raise TimeoutError(f"probe {i} not visible on the follower in {WAIT_S} s")
                    time.sleep(0.001)
                time.sleep(0.01)

    writers.start()
    sampler_thread = threading.Thread(target=sampler)
    try:
        wait_for(lambda: done.value > 0, "the writers' first batch")
        time.sleep(1.0)  # the load under way before anything is measured
        measured_from = done.value, time.perf_counter()
        sampler_thread.start()
        prober()
        remaining = min_load_s - (time.perf_counter() - measured_from[1])
        if remaining > 0:
            time.sleep(remaining)
        measured_items = done.value - measured_from[0]
        measured_s = time.perf_counter() - measured_from[1]
    finally:
        stop.set()
        sampling.set()
        if sampler_thread.is_alive():
            sampler_thread.join(timeout=WAIT_S)
        writers.join(timeout=WAIT_S)
        if writers.is_alive():
            writers.kill()
            writers.join(timeout=30)
    load = answers.get(timeout=WAIT_S)
    if load.get("failure"):
        raise RuntimeError(f"writers: {load['failure']}")
    if sampler_failures:
        raise sampler_failures[0]
    per_follower = {url: quantiles(values) for url, values in samples.items()}
    every = [v for values in samples.values() for v in values]
    figures = {
        "writers": f"{CLIENTS} threads in a child process (acks=leader, batches of {BATCH})",
        "load_items_per_s": measured_items / measured_s,
        "load_seconds": measured_s,
        "load_batch_ms": load["batch_ms"],
        "load_statuses": load["statuses"],
        "load_errors": load["errors"],
        "lag_records": quantiles(every),
        "lag_records_by_follower": per_follower,
        "probes": probes,
        "probe_visible_ms": quantiles([s * 1000 for s in visible]),
        "probe_upsert_ms": quantiles([s * 1000 for s in probe_upserts]),
        "probe_polls": quantiles(probe_polls),
        "probe_failures": probe_failures,
        # Compactions (compact_own_rows) run while the load goes on: the leader's writes wait
        # for its own, a follower fetches nothing while it compacts.
        "compactions": {server.name: server.compactions() for server in servers},
    }
    lag, seen = figures["lag_records"], figures["probe_visible_ms"]
    progress(
        f"lag under {figures['load_items_per_s']:.0f} items/s {load['statuses']}: records p50 "
        f"{lag['p50']} p99 {lag['p99']} max {lag['max']} ({lag['count']} samples); probe visible "
        f"on the local-reads follower p50 {seen['p50']:.1f} ms p99 {seen['p99']:.1f} ms "
        f"({seen['count']} probes)"
    )
    wait_caught_up(leader, servers[1:], name)
    drop(leader, name)
    return figures


def single_writes(
    leader: Server, name: str, records: int, prefix: str, pool: Sequence[str]
) -> dict[str, Any]:
    """``records`` upserts of 1 item each from ``CLIENTS`` threads with acks=leader."""
    url = f"{leader.url}/v1/collections/{name}/items?acks=leader"
    position = itertools.count()
    load = Load()

    def work(client: httpx.Client, _: int) -> None:
        while (i := next(position)) < records:
            body = upsert_body([f"{prefix}{i}"], [pool[i % len(pool)]])
            started = time.perf_counter()
            answer = client.post(url, content=body, headers=HEADERS)
            load.record(answer.status_code, time.perf_counter() - started, 1, answer.text)

    elapsed = load.run(CLIENTS, work)
    figures = write_figures(load, elapsed)
    return {
        "requests": records,
        "seconds": elapsed,
        "requests_per_s": load.done_items / elapsed,
        "request_p50_ms": figures["batch_p50_ms"],
        "request_p99_ms": figures["batch_p99_ms"],
        "statuses": figures["statuses"],
        "errors": figures["errors"],
    }


def restart_and_catch_up(follower: Server, name: str, target: int) -> dict[str, Any]:
    """Start ``follower`` again; seconds until it answers and until its seq of ``name`` is
    ``target``."""
    started = follower.start()
    answered: list[float] = []

    def caught_up() -> bool:
        if follower.process is not None and follower.process.poll() is not None:
            raise RuntimeError(f"{follower.name} exited; see {follower.log}")
        seq = follower.seq(name)
        if not answered:
            answered.append(time.perf_counter())
        return seq == target

    wait_for(caught_up, f"{follower.name} caught up to seq {target}", every=0.02)
    done = time.perf_counter()
    follower.wait_ready()
    info = follower.http.get(f"/v1/collections/{name}").json()
    return {
        "seconds_from_start": done - started,
        "seconds_from_first_answer": done - answered[0],
        "seconds_to_first_answer": answered[0] - started,
        "follower_seq": target,
        "follower_base_count": info.get("base_count"),
        "follower_base_version": info.get("base_version"),
        "follower_metrics": follower.metric_lines("crisscross_replication_installs")
        + follower.metric_lines("crisscross_replication_catchup_bytes"),
    }


def catch_up(
    servers: Sequence[Server], records: int, extra: int, pool: Sequence[str]
) -> dict[str, Any]:
    """Phase 3 on ``servers`` = leader (no compaction), follower kept, follower stopped."""
    leader, kept, stopped = servers
    name = "catchup"
    create(leader, name, [kept, stopped])
    before = stopped.seq(name)
    stopped.stop()
    progress(
        f"catch-up: {stopped.name} stopped at seq {before}; writing {records} upserts of 1 item"
    )
    writes = single_writes(leader, name, records, "r", pool)
    progress(
        f"catch-up: {writes['requests_per_s']:.0f} single-item upserts/s (acks=leader, "
        f"{CLIENTS} clients) {writes['statuses']}"
    )
    target = wait_caught_up(leader, [kept], name)
    log = restart_and_catch_up(stopped, name, target)
    log["records"] = target - int(before or 0)
    log["records_per_s"] = log["records"] / log["seconds_from_start"]
    log["records_per_s_after_first_answer"] = log["records"] / log["seconds_from_first_answer"]
    progress(
        f"catch-up from the log: {log['records']} records in {log['seconds_from_start']:.2f} s "
        f"from process start ({log['records_per_s']:.0f} records/s; answering after "
        f"{log['seconds_to_first_answer']:.2f} s)"
    )
    started = time.perf_counter()
    compact = leader.http.post(f"/v1/collections/{name}/compact", timeout=WAIT_S)
    first_compaction_s = time.perf_counter() - started
    if compact.status_code != 200:
        raise RuntimeError(f"compact: {compact.status_code} {compact.text[:300]}")
    wait_caught_up(leader, [kept, stopped], name)
    before = stopped.seq(name)
    stopped.stop()
    extra_writes = single_writes(leader, name, extra, "x", pool)
    started = time.perf_counter()
    compact = leader.http.post(f"/v1/collections/{name}/compact", timeout=WAIT_S)
    second_compaction_s = time.perf_counter() - started
    if compact.status_code != 200:
        raise RuntimeError(f"compact: {compact.status_code} {compact.text[:300]}")
    target = wait_caught_up(leader, [kept], name)
    base = restart_and_catch_up(stopped, name, target)
    base["records"] = target - int(before or 0)
    base["leader_compactions_s"] = [first_compaction_s, second_compaction_s]
    base["extra_writes"] = extra_writes
    installs = [
        line
        for line in base["follower_metrics"]
        if line.startswith("crisscross_replication_installs_total")
    ]
    progress(
        f"catch-up across a compaction: {base['records']} records (base + log) in "
        f"{base['seconds_from_start']:.2f} s from process start "
        f"({base['seconds_from_first_answer']:.2f} s after its first answer); installs: {installs}"
    )
    wait_caught_up(leader, [kept, stopped], name)
    return {"collection": name, "writes": writes, "from_log": log, "across_compaction": base}


def promotion(servers: Sequence[Server], name: str) -> dict[str, Any]:
    """Phase 4: SIGKILL the leader, promote the most advanced follower, write through it."""
    leader, followers = servers[0], list(servers[1:])
    wait_caught_up(leader, followers, name)
    assert leader.process is not None
    leader.process.send_signal(signal.SIGKILL)
    killed = time.perf_counter()
    leader.process.wait(timeout=WAIT_S)
    seqs = {f.name: f.seq(name) or 0 for f in followers}
    chosen = max(followers, key=lambda f: seqs[f.name])
    started = time.perf_counter()
    answer = chosen.http.post("/v1/replication/promote", timeout=WAIT_S)
    promote_s = time.perf_counter() - started
    if answer.status_code != 200:
        raise RuntimeError(f"promote: {answer.status_code} {answer.text[:300]}")
    statuses: dict[int, int] = {}
    body = upsert_body(["after-failover"], packed(unit_vectors(np.random.default_rng(3), 1)))
    deadline = killed + WAIT_S
    while True:
        write = chosen.http.post(
            f"/v1/collections/{name}/items?acks=majority", content=body, headers=HEADERS
        )
        statuses[write.status_code] = statuses.get(write.status_code, 0) + 1
        if write.status_code == 200:
            break
        if write.status_code != 503 or time.perf_counter() > deadline:
            raise RuntimeError(f"write after promotion: {write.status_code} {write.text[:300]}")
        time.sleep(0.02)
    first_write_s = time.perf_counter() - killed
    figures = {
        "follower_seqs": seqs,
        "promoted": chosen.name,
        "promote_answer_s": promote_s,
        "kill_to_promote_answer_s": started + promote_s - killed,
        "kill_to_first_write_200_s": first_write_s,
        "write_statuses": {str(k): v for k, v in sorted(statuses.items())},
        "role_after": chosen.status()["role"],
    }
    progress(
        f"promotion: promote answered in {promote_s * 1000:.0f} ms; first acks=majority write "
        f"200 {first_write_s * 1000:.0f} ms after the kill {figures['write_statuses']}"
    )
    return figures


def search_vectors(n: int, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    if (COCO / "CURRENT").exists():
        version = COCO / (COCO / "CURRENT").read_text(encoding="utf-8").strip()
        vectors = np.load(version / "captions.vectors.npy", mmap_mode="r")
        if vectors.shape[0] >= n and vectors.shape[1] == DIM:
            return np.asarray(vectors[:n], dtype=np.float32), f"{version}/captions.vectors.npy"
    return unit_vectors(rng, n), "random unit vectors"


def search_throughput(
    targets: Sequence[Server], bodies: Sequence[bytes], seconds: float, label: str
) -> dict[str, Any]:
    """``CLIENTS`` threads search for ``seconds``; each alternates over ``targets``."""
    stop = time.perf_counter() + seconds
    loads = {t.url: Load() for t in targets}

    def work(client: httpx.Client, index: int) -> None:
        urls = [f"{t.url}/v1/search" for t in targets]
        for _ in range(20):  # warm-up, not counted
            client.post(urls[index % len(urls)], content=bodies[index], headers=HEADERS)
        for j in itertools.count():
            if time.perf_counter() > stop:
                return
            target = (index + j) % len(urls)
            body = bodies[(index * 7919 + j) % len(bodies)]
            started = time.perf_counter()
            answer = client.post(urls[target], content=body, headers=HEADERS)
            loads[targets[target].url].record(
                answer.status_code, time.perf_counter() - started, 1, answer.text
            )

    cpu = time.process_time()
    elapsed = Load().run(CLIENTS, work)
    cpu = time.process_time() - cpu
    every = [v * 1000 for load in loads.values() for v in load.latencies]
    lat = quantiles(every)
    statuses: dict[str, int] = {}
    for load in loads.values():
        for code, count in load.statuses.items():
            statuses[str(code)] = statuses.get(str(code), 0) + count
    figures = {
        "layout": label,
        "clients": CLIENTS,
        "seconds": elapsed,
        "requests": len(every),
        "requests_per_s": len(every) / elapsed,
        "p50_ms": lat["p50"],
        "p99_ms": lat["p99"],
        "statuses": statuses,
        "client_cpu_cores": cpu / elapsed,
        "by_target": {
            t.name: {
                "requests": len(loads[t.url].latencies),
                **quantiles([v * 1000 for v in loads[t.url].latencies]),
            }
            for t in targets
        },
        "errors": [e for load in loads.values() for e in load.errors][:5],
    }
    progress(
        f"search {label:32}: {figures['requests_per_s']:7.1f} requests/s p50 "
        f"{figures['p50_ms']:.1f} ms p99 {figures['p99_ms']:.1f} ms {statuses}"
    )
    return figures


# Report


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": list(os.getloadavg()),
    }


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Machine: {result['machine']['cpus']} cores ({result['machine']['cpu_model']}); the "
        "3 server processes and every client thread share them, so these figures are for "
        "replicas on one small machine, not one machine per replica.",
        "",
        "| layout | acks | clients | items/s | batch p50 ms | batch p99 ms | client CPU cores "
        "| non-200 |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in result["write"]:
        bad = {k: v for k, v in row["statuses"].items() if k != "200"}
        lines.append(
            f"| {row['layout']} | {row['acks']} | {row['clients']} | {fmt(row['items_per_s'], 0)} "
            f"| {fmt(row['batch_p50_ms'])} | {fmt(row['batch_p99_ms'])} "
            f"| {fmt(row['client_cpu_cores'], 2)} | {bad or '-'} |"
        )
    lag = result["lag"]
    lines += [
        "",
        f"Replication lag under {CLIENTS} writers (acks=leader, {fmt(lag['load_items_per_s'], 0)} "
        "items/s):",
        "",
        "| measure | p50 | p99 | max | samples |",
        "|---|---:|---:|---:|---:|",
        "| leader seq - follower durable seq (records), every 50 ms "
        f"| {fmt(lag['lag_records']['p50'])} "
        f"| {fmt(lag['lag_records']['p99'])} | {fmt(lag['lag_records']['max'], 0)} "
        f"| {lag['lag_records']['count']} |",
        f"| leader 200 → visible on a follower_reads=local follower (ms) "
        f"| {fmt(lag['probe_visible_ms']['p50'])} | {fmt(lag['probe_visible_ms']['p99'])} "
        f"| {fmt(lag['probe_visible_ms']['max'])} | {lag['probe_visible_ms']['count']} |",
        "| the probe's own upsert on the leader, under the load (ms) "
        f"| {fmt(lag['probe_upsert_ms']['p50'])} | {fmt(lag['probe_upsert_ms']['p99'])} "
        f"| {fmt(lag['probe_upsert_ms']['max'])} | {lag['probe_upsert_ms']['count']} |",
    ]
    compactions = ", ".join(
        f"{name} {c['count']:.0f} ({c['seconds']:.1f} s)" for name, c in lag["compactions"].items()
    )
    lines += [
        "",
        f"During that load ({fmt(lag['load_seconds'])} s measured): writer batches "
        f"{lag['load_statuses']}, batch p50 {fmt(lag['load_batch_ms']['p50'])} ms, max "
        f"{fmt(lag['load_batch_ms']['max'])} ms; compactions so far (count, seconds in all): "
        f"{compactions}.",
    ]
    cu = result["catchup"]
    log, base = cu["from_log"], cu["across_compaction"]
    lines += [
        "",
        "| catch-up | records | s from process start | s after first answer "
        "| records/s (from start) |",
        "|---|---:|---:|---:|---:|",
        f"| from the log ({cu['writes']['requests']:,} single-item upserts) | {log['records']:,} "
        f"| {fmt(log['seconds_from_start'], 2)} | {fmt(log['seconds_from_first_answer'], 2)} "
        f"| {fmt(log['records_per_s'], 0)} |",
        f"| across a compaction (base install + log) | {base['records']:,} "
        f"| {fmt(base['seconds_from_start'], 2)} | {fmt(base['seconds_from_first_answer'], 2)} "
        f"| {fmt(base['records'] / base['seconds_from_start'], 0)} |",
    ]
    pro = result["promotion"]
    lines += [
        "",
        "Promotion: `POST /v1/replication/promote` answered in "
        f"{fmt(pro['promote_answer_s'] * 1000, 0)} ms; the first acks=majority write answered "
        f"200 {fmt(pro['kill_to_first_write_200_s'] * 1000, 0)} ms after the leader's SIGKILL "
        f"(write statuses {pro['write_statuses']}).",
        "",
        f"Search ({result['search_source']}, 25,000 x {DIM}, k 10, {CLIENTS} clients, "
        f"{result['args']['search_s']:.0f} s each):",
        "",
        "| layout | requests/s | p50 ms | p99 ms | client CPU cores | non-200 |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in result["search"]:
        bad = {k: v for k, v in row["statuses"].items() if k != "200"}
        lines.append(
            f"| {row['layout']} | {fmt(row['requests_per_s'])} | {fmt(row['p50_ms'])} "
            f"| {fmt(row['p99_ms'])} | {fmt(row['client_cpu_cores'], 2)} | {bad or '-'} |"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace, cluster: Cluster) -> dict[str, Any]:
    rng = np.random.default_rng(42)
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
    }
    progress(f"payloads: {args.n} vectors of {DIM}")
    bodies = batch_bodies(packed(unit_vectors(rng, args.n)))
    pool = packed(unit_vectors(rng, 4096))

    # 1. Write throughput
    writes = []
    single = cluster.server("single", 1)
    single.start()
    single.wait_ready()
    for clients in (1, CLIENTS):
        writes.append(
            write_throughput("single", [single], None, bodies, clients, f"single-c{clients}")
        )
    single.stop()
    progress("3-server set A: leader, follower (default reads), follower (follower_reads=local)")
    set_a = cluster.replica_set("a", {}, [{}, LOCAL_READS])
    for acks in ("leader", "majority", "all"):
        for clients in (1, CLIENTS):
            writes.append(
                write_throughput(
                    f"3 servers, {acks}", set_a, acks, bodies, clients, f"w-{acks}-c{clients}"
                )
            )
    result["write"] = writes

    # 2. Replication lag
    result["lag"] = replication_lag(
        set_a, set_a[2], pool, args.probes, args.lag_min_s, args.lag_max_s
    )

    # 5. Search throughput (on set A, before it is stopped)
    vectors, source = search_vectors(25_000, rng)
    result["search_source"] = source
    progress(f"search: loading 25,000 vectors ({source})")
    name = "search"
    create(set_a[0], name, set_a[1:])
    load, _ = send_bodies(
        f"{set_a[0].url}/v1/collections/{name}/items?acks=all",
        batch_bodies(packed(vectors)),
        CLIENTS,
        [BATCH] * ((len(vectors) + BATCH - 1) // BATCH),
    )
    if load.done_items != len(vectors):
        raise RuntimeError(
            f"search collection: {load.done_items} of {len(vectors)} loaded: {load.errors}"
        )
    wait_caught_up(set_a[0], set_a[1:], name)
    picks = rng.choice(len(vectors), size=512, replace=False)
    queries = [
        json.dumps(
            {
                "collection": name,
                "query": {"vector": [round(float(x), 7) for x in vectors[i]]},
                "k": 10,
            }
        ).encode()
        for i in picks
    ]
    leader, default_follower, local_follower = set_a
    result["search"] = [
        search_throughput([leader], queries, args.search_s, "leader alone"),
        search_throughput(
            [leader, default_follower], queries, args.search_s, "leader + follower (reads=leader)"
        ),
        search_throughput(
            [leader, local_follower], queries, args.search_s, "leader + follower (reads=local)"
        ),
    ]
    for server in reversed(set_a):
        server.stop()

    # 3. Catch-up, 4. promotion
    progress("3-server set B: leader without compaction, 2 followers")
    set_b = cluster.replica_set("b", NO_COMPACTION, [{}, {}])
    result["catchup"] = catch_up(
        set_b, args.catchup_records, max(1000, args.catchup_records // 10), pool
    )
    result["promotion"] = promotion(set_b, result["catchup"]["collection"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="items per write-throughput run")
    parser.add_argument("--catchup-records", type=int, default=100_000)
    parser.add_argument("--search-s", type=float, default=15.0, help="seconds per search layout")
    parser.add_argument("--probes", type=int, default=300, help="visibility probes (phase 2)")
    parser.add_argument("--lag-min-s", type=float, default=10.0, help="least load time (phase 2)")
    parser.add_argument(
        "--lag-max-s", type=float, default=300.0, help="most probing time (phase 2)"
    )
    parser.add_argument("--out", type=Path, default=Path("reports/replicas/replica_costs.json"))
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.n, args.catchup_records, args.search_s, args.lag_min_s = 2000, 5000, 5.0, 3.0
    with tempfile.TemporaryDirectory(prefix="replica-costs-") as folder:
        cluster = Cluster(Path(folder))
        try:
            result = run(args, cluster)
        except BaseException:
            for server in cluster.servers:
                tail = server.bad_log_lines()[-20:]
                if tail:
                    print(
                        f"--- {server.name} ({server.url}) log tail:",
                        *tail,
                        sep="\n",
                        file=sys.stderr,
                    )
            raise
        finally:
            cluster.stop_all()
        result["server_log_lines"] = {s.name: s.bad_log_lines()[:50] for s in cluster.servers}
    result["machine"]["load_average_after"] = list(os.getloadavg())
    result["seconds"] = time.perf_counter() - _STARTED
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print()
    print(markdown(result))
    print()
    for name, lines in result["server_log_lines"].items():
        if lines:
            print(f"{name}: {len(lines)} log lines at warning or above, first: {lines[0][:200]}")
    progress(f"wrote {args.out}")


if __name__ == "__main__":
    main()
