"""Resident memory of the service with 1, 2 and 4 worker processes, on generated collections.

For each ``--sizes`` (default 25,000 and 1,000,000 rows) the script writes, once, a bundle of
seeded embedding-like vectors (a random mixture of cluster centres plus a low-rank part plus
noise, L2-normalised, float32 ``[n, 384]``; ids ``gen-0000001``..., metadata ``{}``) under
``<--work>/bundles/gen-<size>`` for the served MiniLM variant, and reuses it on later runs. Then,
for each ``--workers`` count N, it starts ``python -m service serve`` on a free loopback port with
that bundle only (``CRISSCROSS_WORKERS=N``), waits until every worker answers ``/v1/variants``,
sends searches over fresh connections until every worker has run some (each search's connection
then asks ``/v1/variants`` which worker it reached), and reads, for the supervisor, every worker
and the multiprocessing resource tracker (or the single process for N=1):

* ``/proc/PID/smaps_rollup``: Rss, Pss, Pss_Anon, Pss_File, Shared_Clean, Private_Dirty, ...;
* ``/proc/PID/smaps``: Rss and Pss of the mappings of files inside the bundle version folder
  (the ``.vectors.npy`` and ``.faiss`` memory maps: the index-attributable part).

The service is stopped with SIGTERM between runs. The report gives, per (size, N), the total
PSS of all the processes, growth per extra worker ``(PSS(N) - PSS(1)) / (N - 1)`` in bytes and
as a percentage of one index (``n * 384 * 4`` bytes), the Pss of the bundle mappings summed over
the processes (one copy of the touched pages when the page cache is shared, whatever N) and the
anonymous (per-process) part; and, measured in this process with ``tracemalloc`` around the real
loader, what loading a bundle allocates per row (ids, metadata, filter columns).

Writes ``reports/bench/worker_memory.json`` and ``reports/bench/worker_memory.md`` and prints
the table. Example::

    .venv/bin/python studies/worker_memory.py                    # 25k and 1M, N = 1, 2, 4
    .venv/bin/python studies/worker_memory.py --sizes 25000 --workers 1,2
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from encoders.variant import load_variant_manifest
from storage.manifest import BundleError, read_manifest
from storage.reader import load_bundle, resolve_current
from storage.writer import CollectionInput, write_bundle

REPO = Path(__file__).resolve().parent.parent
DIM = 384
COLLECTION = "gen"
VARIANT = "minilm-l6-v2"
SEED = 20261125
CENTRES = 1024
RANK = 48
MEAN_SCALE = 0.5
LOW_RANK_SCALE = 0.8
NOISE_SCALE = 0.6
CHUNK_ROWS = 100_000
GENERATOR: dict[str, object] = {
    "kind": "shared mean + unit cluster centre + low-rank part + isotropic noise, L2-normalised",
    "seed": SEED,
    "centres": CENTRES,
    "rank": RANK,
    "mean_scale": MEAN_SCALE,
    "low_rank_scale": LOW_RANK_SCALE,
    "noise_scale": NOISE_SCALE,
    "chunk_rows": CHUNK_ROWS,
}
"""The vector generator's parameters; a bundle is reused only when its build_info holds these."""
QUERIES = [
    f"{subject} {action}"
    for subject in ("a dog", "two cats", "a red car", "a man", "a woman", "a child", "a train")
    for action in ("on a couch", "in the park", "near the water", "on a street", "at night", "")
]
RUN_TIMEOUT_S = 900.0
STOP_TIMEOUT_S = 120.0
MIB = 1024 * 1024
_SMAPS_HEADER = re.compile(r"^[0-9a-f]+-[0-9a-f]+\s")
_SMAPS_FIELD = re.compile(r"^(\w+):\s+(\d+) kB$")
_ROLLUP_KEYS = (
    "Rss",
    "Pss",
    "Pss_Anon",
    "Pss_File",
    "Pss_Shmem",
    "Shared_Clean",
    "Shared_Dirty",
    "Private_Clean",
    "Private_Dirty",
    "Anonymous",
    "Swap",
)


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- vectors and bundles


def _generate(rows: int) -> np.ndarray:
    """Seeded embedding-like float32 ``[rows, DIM]``, L2-normalised, built in chunks of
    :data:`CHUNK_ROWS` (each drawn from its own seeded stream) to keep memory down.

    Pairwise cosines average about 0.1 and a row's nearest neighbour among 5,000 is at about
    0.6, roughly like sentence embeddings."""
    base = np.random.default_rng(SEED)
    mean = base.standard_normal(DIM).astype(np.float32)
    mean *= float(MEAN_SCALE / np.linalg.norm(mean))
    centres = base.standard_normal((CENTRES, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    basis = base.standard_normal((RANK, DIM)).astype(np.float32) / float(np.sqrt(DIM))
    out = np.empty((rows, DIM), dtype=np.float32)
    for number, start in enumerate(range(0, rows, CHUNK_ROWS)):
        stop = min(rows, start + CHUNK_ROWS)
        rng = np.random.default_rng([SEED, number])
        part = mean + centres[rng.integers(0, CENTRES, stop - start)]
        part += (rng.standard_normal((stop - start, RANK), dtype=np.float32) @ basis) * float(
            LOW_RANK_SCALE / np.sqrt(RANK)
        )
        part += rng.standard_normal((stop - start, DIM), dtype=np.float32) * float(
            NOISE_SCALE / np.sqrt(DIM)
        )
        part /= np.linalg.norm(part, axis=1, keepdims=True)
        out[start:stop] = part
    return out


def _ids(rows: int) -> list[str]:
    return [f"gen-{row + 1:07d}" for row in range(rows)]


def _bundle_name(rows: int) -> str:
    return f"gen-{rows}"


def _existing_bundle(bundles_root: Path, rows: int, fingerprint: str) -> Path | None:
    """The current version of ``gen-<rows>`` when it holds these rows from this generator."""
    try:
        version_dir = resolve_current(bundles_root / _bundle_name(rows))
        manifest = read_manifest(version_dir)
    except BundleError:
        return None
    entry = manifest.collections.get(COLLECTION)
    if (
        entry is None
        or entry.count != rows
        or manifest.variant_fingerprint != fingerprint
        or manifest.build_info.get("generator") != GENERATOR
    ):
        return None
    return version_dir


def ensure_bundle(bundles_root: Path, rows: int) -> Path:
    """The version folder of ``gen-<rows>``, written first when it is missing or stale."""
    variant = load_variant_manifest(REPO / "artifacts" / "variants" / VARIANT)
    existing = _existing_bundle(bundles_root, rows, variant.fingerprint)
    if existing is not None:
        _log(f"reusing bundle {existing}")
        return existing
    _log(f"generating {rows:,} vectors ({rows * DIM * 4 / MIB:,.0f} MiB)")
    started = time.perf_counter()
    vectors = _generate(rows)
    ids = _ids(rows)
    metadata: list[dict[str, object]] = [{} for _ in range(rows)]
    _log(f"writing bundle {_bundle_name(rows)} (hashing {2 * vectors.nbytes / MIB:,.0f} MiB)")
    version_dir = write_bundle(
        bundles_root,
        _bundle_name(rows),
        [CollectionInput(name=COLLECTION, ids=ids, metadata=metadata, vectors=vectors)],
        variant_name=variant.name,
        variant_fingerprint=variant.fingerprint,
        make_current=True,
        build_info={"generator": GENERATOR, "source": "studies/worker_memory.py"},
    )
    del vectors, ids, metadata
    gc.collect()
    _log(f"wrote {version_dir} in {time.perf_counter() - started:.0f} s")
    return version_dir


# ---------------------------------------------------------------- /proc


def _kib_fields(lines: Iterator[str] | Sequence[str]) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in lines:
        match = _SMAPS_FIELD.match(line.strip())
        if match:
            values[match.group(1)] = int(match.group(2)) * 1024
    return values


def read_rollup(pid: int) -> dict[str, int]:
    """``/proc/PID/smaps_rollup`` in bytes, for the keys of :data:`_ROLLUP_KEYS`."""
    text = Path(f"/proc/{pid}/smaps_rollup").read_text(encoding="utf-8")
    values = _kib_fields(text.splitlines())
    return {key: values.get(key, 0) for key in _ROLLUP_KEYS}


def read_file_maps(pid: int, folder: Path) -> dict[str, dict[str, int]]:
    """Rss, Pss and mapped size (bytes) of this process's mappings of files inside ``folder``,
    summed per file name."""
    prefix = str(folder) + "/"
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    with open(f"/proc/{pid}/smaps", encoding="utf-8") as handle:
        for line in handle:
            if _SMAPS_HEADER.match(line):
                parts = line.split(maxsplit=5)
                path = parts[5].strip() if len(parts) == 6 else ""
                if path.startswith(prefix):
                    name = path[len(prefix) :]
                    current = out.setdefault(name, {"Size": 0, "Rss": 0, "Pss": 0})
                else:
                    current = None
                continue
            if current is not None:
                match = _SMAPS_FIELD.match(line.strip())
                if match and match.group(1) in current:
                    current[match.group(1)] += int(match.group(2)) * 1024
    return out


def _cmdline(pid: int) -> str:
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return " ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)


def _children(pid: int) -> list[int]:
    """Every live descendant of ``pid``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8")
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        kids = sorted(child for child, ppid in parents.items() if ppid == parent)
        found += kids
        frontier += kids
    return found


# ---------------------------------------------------------------- the service


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _request(
    conn: http.client.HTTPConnection, method: str, path: str, body: object = None
) -> tuple[int, Any, bool]:
    """(status, parsed JSON or None, whether the server closes the connection)."""
    payload = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json"} if payload is not None else {}
    conn.request(method, path, body=payload, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    try:
        parsed: Any = json.loads(raw) if raw else None
    except ValueError:
        parsed = None
    return response.status, parsed, response.will_close


def _answering_pid(port: int) -> int | None:
    """The pid of the worker that answers ``/v1/variants`` on a fresh connection (None: not
    ready or not listening)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        status, body, _ = _request(conn, "GET", "/v1/variants")
    except OSError:
        return None
    finally:
        conn.close()
    if status != 200 or not isinstance(body, dict):
        return None
    return int(body["processes"]["pid"])


@dataclass
class Service:
    """A running ``python -m service serve`` (its log goes to ``log_path``)."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    worker_pids: set[int] = field(default_factory=set)


def start_service(bundles_root: Path, bundle: str, workers: int, log_path: Path) -> Service:
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("CRISSCROSS_")}
    env.update(
        {
            "CRISSCROSS_HOST": "127.0.0.1",
            "CRISSCROSS_PORT": str(port),
            "CRISSCROSS_BUNDLES_ROOT": str(bundles_root),
            "CRISSCROSS_BUNDLES": bundle,
            "CRISSCROSS_VARIANTS_ROOT": str(REPO / "artifacts" / "variants"),
            "CRISSCROSS_PROVIDERS": "cpu",
            "CRISSCROSS_LOG_LEVEL": "warning",
            "CRISSCROSS_WORKERS": str(workers),
        }
    )
    log = log_path.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "serve"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    return Service(process=process, port=port, log_path=log_path)


def wait_for_workers(service: Service, workers: int, timeout_s: float) -> float:
    """Poll ``/v1/variants`` over fresh connections until ``workers`` distinct pids answered;
    the seconds it took."""
    started = time.monotonic()
    last_report = started
    while len(service.worker_pids) < workers:
        if service.process.poll() is not None:
            tail = service.log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise RuntimeError(f"the service exited with {service.process.returncode}:\n{tail}")
        elapsed = time.monotonic() - started
        if elapsed > timeout_s:
            raise RuntimeError(
                f"only {len(service.worker_pids)} of {workers} workers answered in {timeout_s} s"
            )
        pid = _answering_pid(service.port)
        if pid is None:
            time.sleep(0.5)
        else:
            service.worker_pids.add(pid)
            time.sleep(0.05)
        if time.monotonic() - last_report > 15:
            last_report = time.monotonic()
            _log(f"  waiting: {len(service.worker_pids)}/{workers} workers seen, {elapsed:.0f} s")
    return time.monotonic() - started


def touch_index(
    service: Service, collection: str, searches: int, per_worker: int
) -> dict[int, int]:
    """Text searches, each on a fresh connection that then asks ``/v1/variants`` which worker
    it reached, until ``searches`` ran and every worker ran ``per_worker``; searches per pid."""
    ran: dict[int, int] = dict.fromkeys(service.worker_pids, 0)
    attempts = 0
    while attempts < searches or min(ran.values()) < per_worker:
        if attempts >= 20 * searches:
            _log(f"  giving up spreading searches: {ran}")
            break
        text = QUERIES[attempts % len(QUERIES)]
        attempts += 1
        conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=120)
        try:
            body = {"query": {"text": text}, "collection": collection, "k": 10}
            status, answer, closes = _request(conn, "POST", "/v1/search", body)
            if status != 200:
                raise RuntimeError(f"search answered {status}: {answer}")
            if closes:
                continue
            status, answer, _ = _request(conn, "GET", "/v1/variants")
        finally:
            conn.close()
        if status == 200 and isinstance(answer, dict):
            pid = int(answer["processes"]["pid"])
            ran[pid] = ran.get(pid, 0) + 1
    return ran


def stop_service(service: Service) -> int:
    """SIGTERM, then wait for the exit (SIGKILL after :data:`STOP_TIMEOUT_S`); the status."""
    if service.process.poll() is None:
        service.process.send_signal(signal.SIGTERM)
        try:
            service.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _log("  the service did not stop in time; killing it")
            service.process.kill()
            service.process.wait()
    return int(service.process.returncode)


def _role(pid: int, supervisor: int, workers: set[int], single: bool) -> str:
    if pid == supervisor:
        return "single" if single else "supervisor"
    if pid in workers:
        return "worker"
    command = _cmdline(pid)
    if "resource_tracker" in command:
        return "resource_tracker"
    if "spawn_main" in command:
        return "worker"
    return "other"


def measure(service: Service, workers: int, version_dir: Path) -> list[dict[str, Any]]:
    """Rollup and bundle-file maps of the service's processes (supervisor first)."""
    supervisor = service.process.pid
    processes: list[dict[str, Any]] = []
    for pid in [supervisor, *_children(supervisor)]:
        role = _role(pid, supervisor, service.worker_pids, workers == 1)
        processes.append(
            {
                "pid": pid,
                "role": role,
                "cmdline": _cmdline(pid)[:300],
                "rollup": read_rollup(pid),
                "bundle_maps": read_file_maps(pid, version_dir),
            }
        )
    return processes


def summarise(processes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Sums over the processes (bytes)."""

    def total(key: str, roles: tuple[str, ...] | None = None) -> int:
        return sum(int(p["rollup"][key]) for p in processes if roles is None or p["role"] in roles)

    def mapped(key: str, suffix: str = "") -> int:
        return sum(
            int(values[key])
            for p in processes
            for name, values in p["bundle_maps"].items()
            if name.endswith(suffix)
        )

    serving = ("worker", "single")
    return {
        "processes": len(processes),
        "pss": total("Pss"),
        "rss": total("Rss"),
        "pss_anon": total("Pss_Anon"),
        "pss_file": total("Pss_File"),
        "private_dirty": total("Private_Dirty"),
        "shared_clean": total("Shared_Clean"),
        "serving_pss": total("Pss", serving),
        "serving_pss_anon": total("Pss_Anon", serving),
        "overhead_pss": total("Pss") - total("Pss", serving),
        "bundle_pss": mapped("Pss"),
        "bundle_rss": mapped("Rss"),
        "bundle_npy_pss": mapped("Pss", ".npy"),
        "bundle_npy_rss": mapped("Rss", ".npy"),
        "bundle_faiss_pss": mapped("Pss", ".faiss"),
        "bundle_faiss_rss": mapped("Rss", ".faiss"),
    }


def run_once(
    bundles_root: Path, version_dir: Path, workers: int, args: argparse.Namespace
) -> dict[str, Any]:
    bundle = version_dir.parent.name
    log_path = args.work / f"service-{bundle}-w{workers}.log"
    _log(f"{bundle}: starting the service with {workers} worker(s) (log {log_path})")
    service = start_service(bundles_root, bundle, workers, log_path)
    try:
        ready_s = wait_for_workers(service, workers, args.timeout)
        _log(f"  {workers} worker(s) answered after {ready_s:.1f} s; searching")
        ran = touch_index(service, f"{bundle}:{COLLECTION}", args.searches, args.per_worker)
        _log(f"  searches per worker pid: {ran}")
        time.sleep(args.settle)
        processes = measure(service, workers, version_dir)
    finally:
        status = stop_service(service)
    _log(f"  stopped (exit status {status})")
    roles = [p["role"] for p in processes]
    if roles.count("worker") + roles.count("single") != workers:
        _log(f"  warning: expected {workers} serving processes, found roles {roles}")
    return {
        "workers": workers,
        "ready_s": round(ready_s, 2),
        "searches_per_worker": {str(pid): count for pid, count in sorted(ran.items())},
        "exit_status": status,
        "processes": processes,
        "totals": summarise(processes),
    }


# ---------------------------------------------------------------- loader cost


def loaded_bytes_per_row(version_dir: Path, rows: int) -> float:
    """Bytes per row that the bundle loader itself allocates in a process (the id table, the
    metadata rows, the filter columns; the vectors and the index are memory maps, not
    allocations): ``tracemalloc`` around :func:`storage.reader.load_bundle`."""
    gc.collect()
    tracemalloc.start()
    try:
        bundle = load_bundle(version_dir, verify=False)
        allocated, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del bundle
    return round(allocated / rows, 1)


# ---------------------------------------------------------------- report


def _mib(value: float) -> str:
    return f"{value / MIB:,.1f}"


def _machine() -> dict[str, Any]:
    mem_kib = 0
    for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "gpu": shutil.which("nvidia-smi") is not None,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def growth_rows(size: Mapping[str, Any]) -> list[dict[str, Any]]:
    runs = {run["workers"]: run for run in size["runs"]}
    index_bytes = int(size["index_bytes"])
    rows = []
    for workers, run in sorted(runs.items()):
        totals = run["totals"]
        row: dict[str, Any] = {
            "workers": workers,
            "total_pss": totals["pss"],
            "serving_pss": totals["serving_pss"],
            "overhead_pss": totals["overhead_pss"],
            "pss_anon": totals["pss_anon"],
            "anon_per_serving_process": totals["serving_pss_anon"] // workers,
            "bundle_pss": totals["bundle_pss"],
            "bundle_rss": totals["bundle_rss"],
            "bundle_npy_pss": totals["bundle_npy_pss"],
            "bundle_npy_rss": totals["bundle_npy_rss"],
            "bundle_faiss_pss": totals["bundle_faiss_pss"],
            "bundle_faiss_rss": totals["bundle_faiss_rss"],
            "growth_per_extra_worker": None,
            "growth_pct_of_index": None,
            "worker_growth_per_extra_worker": None,
        }
        if workers > 1 and 1 in runs:
            growth = (totals["pss"] - runs[1]["totals"]["pss"]) / (workers - 1)
            row["growth_per_extra_worker"] = round(growth)
            row["growth_pct_of_index"] = round(100 * growth / index_bytes, 1)
            # The same without the supervisor and resource tracker that N > 1 adds.
            worker_growth = (totals["serving_pss"] - runs[1]["totals"]["pss"]) / (workers - 1)
            row["worker_growth_per_extra_worker"] = round(worker_growth)
        rows.append(row)
    return rows


def markdown_table(sizes: Sequence[Mapping[str, Any]]) -> str:
    header = (
        "| rows | N | total PSS MiB | supervisor+tracker PSS MiB | Pss_Anon MiB (all) | "
        "anon per worker MiB | bundle-map Pss MiB (sum) | bundle-map Rss MiB (sum) | "
        "growth / extra worker MiB | growth % of one index | "
        "growth / extra worker excl. supervisor+tracker MiB |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = []
    for size in sizes:
        for row in size["growth"]:
            growth = row["growth_per_extra_worker"]
            worker_growth = row["worker_growth_per_extra_worker"]
            lines.append(
                f"| {size['rows']:,} | {row['workers']} | {_mib(row['total_pss'])} | "
                f"{_mib(row['overhead_pss'])} | {_mib(row['pss_anon'])} | "
                f"{_mib(row['anon_per_serving_process'])} | {_mib(row['bundle_pss'])} | "
                f"{_mib(row['bundle_rss'])} | {'-' if growth is None else _mib(growth)} | "
                f"{'-' if growth is None else row['growth_pct_of_index']} | "
                f"{'-' if worker_growth is None else _mib(worker_growth)} |"
            )
    return header + "\n".join(lines) + "\n"


def maps_table(sizes: Sequence[Mapping[str, Any]]) -> str:
    lines = [
        "| rows | N | .vectors.npy Pss MiB (sum) | .vectors.npy Rss MiB (sum) | "
        ".faiss Pss MiB (sum) | .faiss Rss MiB (sum) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        for row in size["growth"]:
            lines.append(
                f"| {size['rows']:,} | {row['workers']} | {_mib(row['bundle_npy_pss'])} | "
                f"{_mib(row['bundle_npy_rss'])} | {_mib(row['bundle_faiss_pss'])} | "
                f"{_mib(row['bundle_faiss_rss'])} |"
            )
    return "\n".join(lines) + "\n"


def files_table(sizes: Sequence[Mapping[str, Any]]) -> str:
    lines = [
        "| rows | one index (n x 384 x 4) MiB | .vectors.npy MiB | .faiss MiB | .ids.jsonl MiB |",
        "|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        files = size["files"]
        lines.append(
            f"| {size['rows']:,} | {_mib(size['index_bytes'])} | "
            f"{_mib(files.get(f'{COLLECTION}.vectors.npy', 0))} | "
            f"{_mib(files.get(f'{COLLECTION}.faiss', 0))} | "
            f"{_mib(files.get(f'{COLLECTION}.ids.jsonl', 0))} |"
        )
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, report: Mapping[str, Any]) -> None:
    machine = report["machine"]
    cost_text = "\n\nWhat the bundle loader allocates in each worker (tracemalloc around " + (
        "load_bundle; the vectors and the index are memory maps, not allocations): "
        + "; ".join(
            f"{size['loaded_bytes_per_row']:.0f} B/row at {size['rows']:,} rows"
            for size in report["sizes"]
        )
        + "."
    )
    text = (
        "# Resident memory per worker process\n\n"
        + markdown_table(report["sizes"])
        + "\n"
        + maps_table(report["sizes"])
        + "\n"
        + files_table(report["sizes"])
        + "\n"
        + f"Measured: `python -m service serve` (MiniLM text encoder on onnxruntime CPU, one "
        f"generated bundle of a flat collection of n seeded, L2-normalised 384-d vectors with "
        f"metadata `{{}}`) with CRISSCROSS_WORKERS=N, after every worker answered and ran "
        f"searches (at least {report['per_worker']} each, {report['searches']} or more in all, "
        f"each on a fresh connection). PSS (proportional set size, shared pages split between "
        f"the processes that map them) is summed over the supervisor, the workers and the "
        f"multiprocessing resource tracker (N=1: the single process) from "
        f"/proc/PID/smaps_rollup; bundle-map figures are the Pss/Rss of the mappings of the "
        f"bundle's .vectors.npy and .faiss files from /proc/PID/smaps, summed over processes "
        f"(one copy of the touched pages when the page cache is shared; Rss counts a shared "
        f"page once per process). Growth per extra worker is (PSS(N) - PSS(1)) / (N - 1) and "
        f"includes the supervisor and resource tracker that N > 1 adds. One index is "
        f"n x 384 x 4 bytes; the bundle stores the vectors twice (.vectors.npy and .faiss). "
        f"The searches have no filter: on a flat collection the service scores those from the "
        f".vectors.npy map (service/engine/collection/knn.py), so the .faiss map is barely "
        f"touched; filtered "
        f"searches go through faiss and would fault its pages in too (shared the same way). "
        f"Machine: {machine['cpus']} vCPU, {machine['memory_gib']} GiB RAM, "
        f"{'a GPU' if machine['gpu'] else 'no GPU'} ({machine['platform']}, Python "
        f"{machine['python']}). Command: `{report['command']}`." + cost_text + "\n"
    )
    path.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------- main


def _int_list(text: str) -> list[int]:
    return [int(part.replace("_", "")) for part in text.split(",") if part.strip()]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--work", type=Path, default=Path(".worker-memory"))
    parser.add_argument("--sizes", type=_int_list, default=[25_000, 1_000_000])
    parser.add_argument("--workers", type=_int_list, default=[1, 2, 4])
    parser.add_argument("--searches", type=int, default=50, help="searches per run, at least")
    parser.add_argument("--per-worker", type=int, default=5, help="searches per worker, at least")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds before reading /proc")
    parser.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S, help="start-up limit, s")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "bench")
    args = parser.parse_args(argv)
    if not args.work.is_absolute():
        args.work = (REPO / args.work).resolve()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = " ".join(
        [os.path.relpath(sys.executable, REPO), "studies/worker_memory.py", *sys.argv[1:]]
    )
    bundles_root = args.work / "bundles"
    bundles_root.mkdir(parents=True, exist_ok=True)
    sizes: list[dict[str, Any]] = []
    for rows in args.sizes:
        version_dir = ensure_bundle(bundles_root, rows).resolve()
        files = {path.name: path.stat().st_size for path in sorted(version_dir.iterdir())}
        runs = [run_once(bundles_root, version_dir, n, args) for n in args.workers]
        size: dict[str, Any] = {
            "rows": rows,
            "bundle": _bundle_name(rows),
            "version_dir": str(version_dir),
            "index_bytes": rows * DIM * 4,
            "files": files,
            "runs": runs,
            "loaded_bytes_per_row": loaded_bytes_per_row(version_dir, rows),
        }
        size["growth"] = growth_rows(size)
        sizes.append(size)
    report: dict[str, Any] = {
        "what": "resident memory of the service with N worker processes (see the .md)",
        "command": command,
        "machine": _machine(),
        "generator": GENERATOR,
        "searches": args.searches,
        "per_worker": args.per_worker,
        "sizes": sizes,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "worker_memory.json").write_text(
        json.dumps(report, indent=2) + "\n", encoding="utf-8"
    )
    write_markdown(args.out / "worker_memory.md", report)
    print(markdown_table(sizes))
    print(maps_table(sizes))
    print(files_table(sizes))
    _log(f"wrote {args.out / 'worker_memory.json'} and {args.out / 'worker_memory.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
