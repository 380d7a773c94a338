"""Does a live text collection hold up against the offline bundle it could replace — in what
its upserts cost next to the bare encoder, and in what it answers on CxC?

Against a real ``python -m service serve`` (the demo's ``coco-captions`` bundle and variant, live
collections in a temporary folder), this study

1. measures the **bare encoder**: ``OnnxTextEncoder.encode_texts`` on the first ``--rate-n``
   captions in batches of ``--batch``, in ``--processes`` processes side by side of one
   onnxruntime thread each (what the service runs on 2 cores);
2. measures **text upserts over HTTP**: the same captions sent to a live collection as
   ``{"id", "text", "metadata"}`` items in batches of ``--batch`` from ``--clients`` threads; a
   200 means embedded, fsynced and visible; reports items/s and the ratio to (1);
3. upserts **all 25,000 Karpathy val captions** into a fresh live collection, in the bundle's
   row order (one client, so write order is row order and the tie rule orders as the bundle),
   compares a sample of stored vectors with the bundle's, then replays ``benchmarks cxc``
   (t2t, t2t_cocaptions, STS; caption queries as items) against the live collection and
   against the bundle's ``coco-captions:captions``, and compares every task value;
4. compacts the live collection (its items become a base bundle with a Flat faiss index) and
   replays CxC against it again.

usage: .venv/bin/python studies/live_text_collection.py [--out reports/live]
       [--bundles-root artifacts/bundles] [--variants-root artifacts/variants]
       [--rate-n 4000] [--batch 100] [--clients 8] [--processes 2] [--skip-cxc]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from encoders.text_encoder import OnnxTextEncoder

VARIANT = "minilm-l6-v2"
FIELDS = {"text": "string", "image_id": "integer", "filename": "string", "sentid": "integer"}


def _bundle_rows(bundle_dir: Path) -> tuple[list[dict[str, Any]], np.ndarray]:
    version = bundle_dir / (bundle_dir / "CURRENT").read_text(encoding="utf-8").strip()
    with (version / "captions.ids.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return rows, np.load(version / "captions.vectors.npy", mmap_mode="r")


def _encode_share(args: tuple[str, list[list[str]]]) -> float:
    variant, batches = args
    encoder = OnnxTextEncoder(Path(variant), providers="cpu", intra_op_threads=1)
    encoder.encode_texts(batches[0])  # warm-up
    started = time.perf_counter()
    for batch in batches:
        encoder.encode_texts(batch)
    return time.perf_counter() - started


def bare_rate(variant: Path, texts: Sequence[str], batch: int, processes: int) -> float:
    """Captions/s of ``processes`` bare encoders side by side, each on its share."""
    batches = [list(texts[i : i + batch]) for i in range(0, len(texts), batch)]
    shares = [(str(variant), batches[p::processes]) for p in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        seconds = pool.map(_encode_share, shares)
    return sum(
        sum(len(b) for b in share[1]) / spent for share, spent in zip(shares, seconds, strict=True)
    )


class Service:
    """A ``python -m service serve`` on a free port, live collections in ``collections``."""

    def __init__(self, bundles_root: Path, variants_root: Path, collections: Path, log: Path):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        command = [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--bundles-root", str(bundles_root)]
        command += ["--variants-root", str(variants_root), "--collections-dir", str(collections)]
        env = {**os.environ, "CRISSCROSS_BUNDLES": "coco-captions", "CRISSCROSS_PROVIDERS": "cpu"}
        self.process = subprocess.Popen(command, env=env, stdout=log.open("wb"), stderr=-2)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if self.call("GET", "/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"service not ready; see {log}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call(
        self,
        method: str,
        path: str,
        body: object = None,
        conn: http.client.HTTPConnection | None = None,
    ) -> tuple[int, Any]:
        own = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        data = None if body is None else json.dumps(body)
        own.request(method, path, data, {"content-type": "application/json"})
        response = own.getresponse()
        payload = response.read()
        if conn is None:
            own.close()
        return response.status, json.loads(payload) if payload else None

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def _item(row: dict[str, Any]) -> dict[str, Any]:
    metadata = {key: row[key] for key in FIELDS if key in row}
    return {"id": row["id"], "text": row["text"], "metadata": metadata}


def upsert_all(
    service: Service, name: str, rows: Sequence[dict[str, Any]], batch: int, clients: int
) -> float:
    """Upsert ``rows`` into collection ``name`` from ``clients`` threads; returns items/s."""
    status, answer = service.call(
        "POST", "/v1/collections", {"name": name, "variant": VARIANT, "fields": FIELDS}
    )
    if status != 201:
        raise RuntimeError(f"create {name}: {status} {answer}")
    bodies = [
        json.dumps({"items": [_item(row) for row in rows[i : i + batch]]})
        for i in range(0, len(rows), batch)
    ]
    lock, position, failures = threading.Lock(), [0], []

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=600)
        while True:
            with lock:
                if position[0] == len(bodies):
                    return
                body = bodies[position[0]]
                position[0] += 1
            conn.request(
                "POST", f"/v1/collections/{name}/items", body, {"content-type": "application/json"}
            )
            response = conn.getresponse()
            payload = response.read()
            if response.status != 200:
                failures.append(payload[:300])

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"{len(failures)} upserts failed: {failures[0]!r}")
    return len(rows) / elapsed


def vector_gap(
    service: Service, name: str, rows: Sequence[dict[str, Any]], vectors: np.ndarray
) -> float:
    """Largest |live - bundle| over the stored vectors of 1,000 spread rows."""
    picks = np.linspace(0, len(rows) - 1, 1000).astype(int)
    ids = [rows[i]["id"] for i in picks]
    _, answer = service.call(
        "POST", f"/v1/collections/{name}/items/get", {"ids": ids, "include_vectors": True}
    )
    live = np.array([item["vector"] for item in answer["items"]], dtype=np.float32)
    return float(np.abs(live - vectors[picks]).max())


def cxc(service: Service, collection: str, out: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks", "cxc", "--url", service.url]
    command += ["--dataset", "coco-karpathy", "--variant", VARIANT, "--collection", collection]
    command += ["--caption-queries", "item", "--tasks", "t2t,t2t_cocaptions,sts", "--out", str(out)]
    subprocess.run([*command, "--no-progress"], check=True)
    tasks: dict[str, Any] = json.loads((out / "report.json").read_text())["tasks"]
    return tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports/live"))
    parser.add_argument("--bundles-root", type=Path, default=Path("artifacts/bundles"))
    parser.add_argument("--variants-root", type=Path, default=Path("artifacts/variants"))
    parser.add_argument("--rate-n", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--skip-cxc", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows, vectors = _bundle_rows(args.bundles_root / "coco-captions")
    texts = [row["text"] for row in rows[: args.rate_n]]
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    result["bare_items_s"] = bare_rate(
        args.variants_root / VARIANT, texts, args.batch, args.processes
    )
    print(f"bare encoder: {result['bare_items_s']:.0f} captions/s", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        service = Service(
            args.bundles_root,
            args.variants_root,
            Path(folder) / "collections",
            args.out / "service.log",
        )
        try:
            rate = upsert_all(service, "rate-probe", rows[: args.rate_n], args.batch, args.clients)
            result["upsert_items_s"] = rate
            result["ratio_to_bare"] = rate / result["bare_items_s"]
            print(
                f"text upserts: {rate:.0f} items/s, {result['ratio_to_bare']:.2f}x bare", flush=True
            )
            if not args.skip_cxc:
                result["sequential_items_s"] = upsert_all(service, "live-captions", rows, 250, 1)
                result["max_vector_gap"] = vector_gap(service, "live-captions", rows, vectors)
                live = cxc(service, "live-captions", args.out / "cxc-live")
                offline = cxc(service, "captions", args.out / "cxc-bundle")
                status, compaction = service.call("POST", "/v1/collections/live-captions/compact")
                if status != 200:
                    raise RuntimeError(f"compact: {status} {compaction}")
                result["compaction"] = compaction
                based = cxc(service, "live-captions", args.out / "cxc-live-base")
                result["tasks_live"], result["tasks_bundle"] = live, offline
                result["tasks_live_after_compaction"] = based
                result["tasks_equal"] = live == offline
                result["tasks_equal_after_compaction"] = based == offline
                print(
                    f"stored vectors: max gap {result['max_vector_gap']:.2e}; "
                    f"CxC tasks equal: {result['tasks_equal']}; after compaction into a base "
                    f"({compaction['seconds']:.1f} s): {result['tasks_equal_after_compaction']}",
                    flush=True,
                )
        finally:
            service.stop()
    (args.out / "live_text_collection.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
