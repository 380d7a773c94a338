"""The least memory one more Python worker process can add: a floor for the per-worker growth
that ``studies/worker_memory.py`` measures on the real service.

A parent imports every module the service imports (numpy, onnxruntime, faiss, FastAPI, uvicorn,
pydantic, Pillow, prometheus-client and the ``service`` package), builds a small NumPy matrix,
collects and freezes its garbage collector (``gc.freeze``: the objects made so far are left alone
by later collections, so their pages stay shared), binds one listening socket and then *forks*
N children. Each child serves one trivial FastAPI route on the inherited socket with uvicorn: a
JSON vector in, the top 10 of 1,000 x 384 inner products out. No encoder, no bundle, no
middleware. The parent then sends ``--requests`` searches (each on a fresh connection, so the
kernel spreads them over the children) and reads ``/proc/PID/smaps_rollup`` of itself and of
every child.

This layout shares more than any real worker can: everything imported or built before the fork
is shared copy-on-write, and a child's only own memory is what it writes afterwards (reference
counts, the event loop, uvicorn's and FastAPI's per-request objects, malloc arenas). Growth per
extra worker is ``(PSS(N) - PSS(1)) / (N - 1)`` with PSS summed over the parent and its children,
as ``worker_memory.py`` reports it; each N runs in a fresh process.

Example::

    .venv/bin/python studies/forked_worker_floor.py                 # N = 1, 2, 4
    .venv/bin/python studies/forked_worker_floor.py --workers 1,2 --requests 1000
"""

from __future__ import annotations

import argparse
import gc
import http.client
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

from worker_memory import MIB, read_rollup

ROWS = 1000
DIM = 384
# What the service imports, imported before the fork so every child shares it.
IMPORTED = (
    "faiss",
    "numpy",
    "onnxruntime",
    "PIL.Image",
    "prometheus_client",
    "pydantic",
    "uvicorn",
    "fastapi",
    "service.http.app",
    "service.http.schemas",
    "service.engine.search.searcher",
    "service.runtime.server",
)


def rollup_mib(pid: int) -> dict[str, float]:
    """``/proc/PID/smaps_rollup`` in MiB (:func:`worker_memory.read_rollup`)."""
    return {key: value / MIB for key, value in read_rollup(pid).items()}


def serve_forked(workers: int, requests: int) -> dict[str, object]:
    """One measurement: import, freeze, fork ``workers`` servers, send ``requests``, read."""
    for module in IMPORTED:
        importlib.import_module(module)
    import numpy as np
    import uvicorn
    from fastapi import FastAPI

    app = FastAPI()
    vectors = np.random.default_rng(0).standard_normal((ROWS, DIM)).astype(np.float32)

    @app.post("/search")
    async def search(body: dict[str, list[float]]) -> dict[str, list[int] | list[float]]:
        scores = vectors @ np.asarray(body["vector"], dtype=np.float32)
        top = np.argsort(-scores)[:10]
        return {"ids": [int(i) for i in top], "scores": [float(scores[i]) for i in top]}

    gc.collect()
    gc.freeze()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    children: list[int] = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            config = uvicorn.Config(app, log_level="warning", access_log=False)
            uvicorn.Server(config).run(sockets=[listener])
            os._exit(0)
        children.append(pid)
    time.sleep(2.0)
    body = json.dumps({"vector": [0.1] * DIM})
    for _ in range(requests):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("POST", "/search", body, {"content-type": "application/json"})
        connection.getresponse().read()
        connection.close()
    parent = rollup_mib(os.getpid())
    per_child = [rollup_mib(pid) for pid in children]
    for pid in children:
        os.kill(pid, signal.SIGTERM)
    for pid in children:
        os.waitpid(pid, 0)
    total_pss = parent["Pss"] + sum(child["Pss"] for child in per_child)
    return {"workers": workers, "total_pss_mib": total_pss, "parent": parent, "children": per_child}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker counts")
    parser.add_argument("--requests", type=int, default=500, help="searches sent per count")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one count, JSON out
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(serve_forked(args.one, args.requests)))
        return 0
    runs = []
    for count in [int(value) for value in args.workers.split(",")]:
        command = [sys.executable, __file__, "--one", str(count), "--requests", str(args.requests)]
        done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    base = runs[0]
    print("| N | total PSS MiB | growth / extra worker MiB | child USS MiB (each) |")
    print("|---:|---:|---:|---|")
    for run in runs:
        workers = int(run["workers"])
        growth = "-"
        if workers > int(base["workers"]):
            extra = workers - int(base["workers"])
            growth = f"{(run['total_pss_mib'] - base['total_pss_mib']) / extra:.1f}"
        uss = ", ".join(
            f"{child['Private_Clean'] + child['Private_Dirty']:.1f}" for child in run["children"]
        )
        print(f"| {workers} | {run['total_pss_mib']:.1f} | {growth} | {uss} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
