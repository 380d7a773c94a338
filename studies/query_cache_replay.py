"""What does the query-embedding cache buy on a replay that repeats its queries?

Serves the coco-captions bundle twice — ``CRISSCROSS_QUERY_CACHE_ENTRIES`` 0 (off), then 10,000
(on) — and replays the first ``--captions`` distinct val captions as text searches from 32
closed-loop clients for ``--duration-s`` seconds each (``benchmarks load``), so each caption is
searched many times; prints throughput and latency from each run's ``load.json`` and the cache's
hit and miss counters from ``/metrics``.

    .venv/bin/python studies/query_cache_replay.py --out /tmp/query-cache

Needs ``make bundle`` (MiniLM and the coco-captions bundle). Result (2026-11-28, the developer
VM, 2 vCPU AMD EPYC): see studies/README.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"


def _subset(data: Path, out: Path, captions: int) -> Path:
    source = data / "coco-karpathy-captions" / "captions_val.csv"
    target = out / "data" / "coco-karpathy-captions" / "captions_val.csv"
    target.parent.mkdir(parents=True, exist_ok=True)
    with source.open(newline="") as reader, target.open("w", newline="") as writer:
        rows = csv.reader(reader)
        lines = csv.writer(writer)
        lines.writerow(next(rows))
        for _, row in zip(range(captions), rows, strict=False):
            lines.writerow(row)
    return out / "data"


def _wait_ready(url: str) -> None:
    for _ in range(120):
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise SystemExit(f"{url} never became ready")


def _lookups(url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("crisscross_query_cache_lookups_total{"):
            result = line.split('result="')[1].split('"')[0]
            found[result] = found.get(result, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--captions", type=int, default=500)
    parser.add_argument("--duration-s", type=float, default=20.0)
    parser.add_argument("--port", type=int, default=8123)
    options = parser.parse_args()
    data = _subset(options.data, options.out, options.captions)
    url = f"http://127.0.0.1:{options.port}"
    for label, entries in (("off", 0), ("on", 10_000)):
        env = dict(
            os.environ,
            CRISSCROSS_BUNDLES="coco-captions",
            CRISSCROSS_QUERY_CACHE_ENTRIES=str(entries),
            CRISSCROSS_VARIANTS_ROOT=str(ROOT / "artifacts" / "variants"),
            CRISSCROSS_BUNDLES_ROOT=str(ROOT / "artifacts" / "bundles"),
        )
        log = (options.out / f"service-{label}.log").open("w")
        command = [str(PYTHON), "-m", "service", "serve", "--port", str(options.port)]
        service = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=log)
        try:
            _wait_ready(url)
            run = options.out / f"load-{label}"
            subprocess.run(
                [
                    str(PYTHON),
                    "-m",
                    "benchmarks",
                    "load",
                    "--url",
                    url,
                    "--data",
                    str(data),
                    "--split",
                    "val",
                    "--out",
                    str(run),
                    "--closed",
                    "32",
                    "--open-rates",
                    "none",
                    "--duration-s",
                    str(options.duration_s),
                ],
                cwd=ROOT,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            lookups = _lookups(url)
        finally:
            service.send_signal(signal.SIGTERM)
            service.wait(timeout=60)
        closed = json.loads((run / "load.json").read_text())["closed"]["c32"]
        figures = {key: closed[key] for key in ("requests", "qps", "p50_ms", "p99_ms")}
        json.dump({"cache": label, "lookups": lookups, **figures}, sys.stdout)
        print()


if __name__ == "__main__":
    main()
