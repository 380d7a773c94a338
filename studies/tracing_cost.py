"""What tracing costs a search: the c32 text-search load with tracing off and on.

Question: the service traces its requests when ``otlp_endpoint`` is set (a server span per
request and a span per timed stage, exported in batches over OTLP/HTTP). Does tracing off cost
nothing against the code before tracing existed, and what does tracing on cost, in throughput
and latency at 32 concurrent clients?

Method: an OTLP/HTTP sink in this process accepts every export (200) and keeps the bodies, which
are decoded only after the runs. Modes: ``off``, ``on`` and ``sampled`` (this checkout: tracing
off, on with every request sampled, on with ``--sampled-ratio`` of them) and, with ``--baseline
DIR`` (the product packages as they were before tracing, e.g. ``git archive <commit> service
encoders storage formats | tar -x -C DIR``), ``before``: that code served from DIR with the
same environment. Each round runs every mode once, the order reversed every other round
(before, off, on, sampled, sampled, on, off, before, ...: a drift of the shared machine's speed
falls on every mode alike). Each run: the real service serves the
demo's coco-captions bundle (MiniLM, `make serve`'s layout) on a free port — with
CRISSCROSS_OTLP_ENDPOINT pointing at the sink when tracing is on — and
`python -m benchmarks load --closed 32 --open-rates none` drives it for `--duration-s` seconds
(the `c32` level of `make bench`). After the last traced run, one search with a W3C traceparent
checks the export end to end: its server span is in the caller's trace and its stage spans
last what its x-timing-* headers say (within 1 ms). Prints and writes a JSON summary with each
run's throughput and latency percentiles and each mode's medians.

    .venv/bin/python studies/tracing_cost.py --rounds 3 --duration-s 20 \
        --baseline /tmp/crisscross-base --out reports/tracing-cost
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

TRACE_ID = "5b8efff798038103d269b633813fc60c"
PARENT_ID = "eee19b7ec3c1b174"


class Sink:
    """An OTLP/HTTP endpoint that answers 200 to every export and keeps the bodies."""

    def __init__(self) -> None:
        bodies: list[bytes] = []
        self.bodies = bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                bodies.append(self.rfile.read(length))
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                return  # quiet: one line per export would drown the study's output

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list[Any]:
        found = []
        for body in self.bodies:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    found.extend(scope.spans)
        return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_service(
    port: int, log: Path, sink_port: int | None, code: Path | None, ratio: float = 1.0
) -> subprocess.Popen[bytes]:
    """The service on ``port``: this checkout's, or the one in ``code`` (``python -m`` puts the
    working folder first on the path), exporting ``ratio`` of its traces to the sink when
    ``sink_port`` is given."""
    env = {**os.environ, "CRISSCROSS_BUNDLES": "coco-captions"}
    env.setdefault("CRISSCROSS_BUNDLES_ROOT", str(Path("artifacts/bundles").resolve()))
    env.setdefault("CRISSCROSS_VARIANTS_ROOT", str(Path("artifacts/variants").resolve()))
    if sink_port is not None:
        env["CRISSCROSS_OTLP_ENDPOINT"] = f"http://127.0.0.1:{sink_port}"
        env["CRISSCROSS_TRACE_SAMPLE_RATIO"] = str(ratio)
    command = [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1"]
    with log.open("wb") as out:
        return subprocess.Popen(
            [*command, "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=code,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)


def run_load(url: str, out: Path, duration_s: float, data: str) -> dict[str, Any]:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "load",
            "--url",
            url,
            "--data",
            data,
            "--out",
            str(out),
            "--closed",
            "32",
            "--open-rates",
            "none",
            "--duration-s",
            str(duration_s),
            "--ready-timeout",
            "180",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    level: dict[str, Any] = json.loads((out / "load.json").read_text())["closed"]["c32"]
    return level


def traced_search(url: str) -> dict[str, float]:
    """One search in a caller's trace; its x-timing-* stage headers (ms)."""
    response = httpx.post(
        f"{url}/v1/search",
        json={"query": {"text": "a man riding a horse on a beach"}, "collection": "captions"},
        headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
        timeout=30,
    )
    response.raise_for_status()
    return {
        name.removeprefix("x-timing-").removesuffix("-ms"): float(value)
        for name, value in response.headers.items()
        if name.startswith("x-timing-")
    }


def check_export(spans: list[Any], headers: dict[str, float]) -> dict[str, Any]:
    """The traced search's spans as exported: in the caller's trace, stages matching headers."""
    mine = [span for span in spans if span.trace_id.hex() == TRACE_ID]
    [server] = [span for span in mine if span.parent_span_id.hex() == PARENT_ID]
    stages: dict[str, float] = {}
    for span in mine:
        if span.parent_span_id == server.span_id:
            ms = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e6
            stages[span.name] = stages.get(span.name, 0.0) + ms
    differences = {name: abs(stages[name] - headers[name]) for name in stages}
    assert set(stages) == {"queue", "encode", "search"}, stages
    assert all(difference <= 1.0 for difference in differences.values()), differences
    by_name: dict[str, int] = {}
    for span in spans:
        by_name[span.name] = by_name.get(span.name, 0) + 1
    return {
        "server_span": server.name,
        "stage_ms_spans": stages,
        "stage_ms_headers": {name: headers[name] for name in stages},
        "exported_spans_by_name": by_name,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs of each mode")
    parser.add_argument("--duration-s", type=float, default=15.0, help="seconds per run")
    parser.add_argument("--data", default="../shared/data", help="folder of the query captions")
    parser.add_argument("--out", type=Path, default=Path("reports/tracing-cost"))
    parser.add_argument(
        "--sampled-ratio", type=float, default=0.1, help="trace_sample_ratio of mode 'sampled'"
    )
    parser.add_argument(
        "--baseline", type=Path, help="the product packages before tracing: adds mode 'before'"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sink = Sink()
    modes = (["before"] if args.baseline else []) + ["off", "on", "sampled"]
    order = [
        mode
        for round_ in range(args.rounds)
        for mode in (modes if round_ % 2 == 0 else modes[::-1])
    ]
    runs: list[dict[str, Any]] = []
    export: dict[str, Any] = {}
    for position, mode in enumerate(order):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        run_dir = args.out / f"{position}-{mode}"
        run_dir.mkdir(exist_ok=True)
        service = start_service(
            port,
            run_dir / "service.log",
            sink.port if mode in ("on", "sampled") else None,
            args.baseline.resolve() if mode == "before" else None,
            args.sampled_ratio if mode == "sampled" else 1.0,
        )
        try:
            level = run_load(url, run_dir, args.duration_s, args.data)
            headers = traced_search(url) if mode == "on" else {}
        finally:
            stop(service)  # a traced service exports what it still holds as it stops
        runs.append(
            {
                "mode": mode,
                "qps": level["qps"],
                "p50_ms": level["p50_ms"],
                "p99_ms": level["p99_ms"],
                "errors": level["errors"],
                "rejected": level["rejected"],
            }
        )
        print(json.dumps(runs[-1]), flush=True)
        if mode == "on":
            export = check_export(sink.spans(), headers)
        sink.bodies.clear()
    medians = {
        mode: {
            key: statistics.median(run[key] for run in runs if run["mode"] == mode)
            for key in ("qps", "p50_ms", "p99_ms")
        }
        for mode in modes
    }
    summary = {
        "runs": runs,
        "medians": medians,
        "export_check": export,
        "duration_s": args.duration_s,
        "cpu_count": os.cpu_count(),
        "load_average_after": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({"medians": medians, "export_check": export}, indent=2))


if __name__ == "__main__":
    main()
