"""What the shape of a batch costs the text encoder: ``OnnxTextEncoder.encode_texts`` on one
onnxruntime thread over the first ``--n`` captions, cut into batches of each ``--batches`` size
two ways: *sorted* (consecutive captions in token-length order, as the bare peer-bench figure and
an index build run them) and *shuffled* (random captions, what the service's batcher hands the
encoder: about ten at c32), one call per batch.

Printed per shape: CPU milliseconds per caption in this process, then the sentences/s of
``--processes`` copies of the same run side by side (each its own process, one onnxruntime
thread), their sum being the encoder-only ceiling of that shape on this machine: on 2 cores the
service runs two encoder threads of one thread each.

With ``--scan-bundle`` every batch is also searched as the service searches it after encoding:
the exact scan (:class:`service.engine.rank.exact_scan.ExactScan`, one thread) of that bundle's
``captions`` vectors for each caption's top ``--fetch`` (k 10 plus the service's margin: 27). The
sum is then the ceiling of a text search server's own work, with no HTTP, queue or event loop.

usage: .venv/bin/python studies/encoder_batches.py [--n 2000] [--batches 10,32] [--processes 2]
       [--data ../shared/data] [--split val]
       [--scan-bundle artifacts/bundles/coco-captions] [--fetch 27]
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from encoders.text_encoder import OnnxTextEncoder
from formats.karpathy import read_captions
from formats.layout import captions_path
from service.engine.rank.exact_scan import ExactScan
from storage.reader import load_bundle, resolve_current

SHAPES = ("sorted", "shuffled")


def _batches(
    captions: Sequence[str], lengths: np.ndarray, shape: str, size: int
) -> list[list[str]]:
    if shape == "sorted":
        ordered = [captions[i] for i in np.argsort(lengths, kind="stable")]
    else:
        ordered = list(captions)
        random.Random(0).shuffle(ordered)
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def _encoder(variant: Path, max_run: int) -> OnnxTextEncoder:
    return OnnxTextEncoder(variant, providers="cpu", intra_op_threads=1, batch_size=max_run)


class Scan:
    """The service's search of one encoded batch: the exact scan of a bundle's ``captions``."""

    def __init__(self, bundle: Path, fetch: int) -> None:
        self.fetch = fetch
        self._vectors = load_bundle(resolve_current(bundle)).collections["captions"].vectors
        self._scan = ExactScan(threads=1)

    def __call__(self, queries: np.ndarray) -> None:
        self._scan.top(queries, self._vectors, self.fetch)


def _timed(
    encoder: OnnxTextEncoder, batches: list[list[str]], scan: Scan | None
) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) to encode ``batches``, one call each, and
    scan for each with ``scan``."""
    wall, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        queries = encoder.encode_texts(batch)
        if scan is not None:
            scan(queries)
    return time.perf_counter() - wall, time.process_time() - cpu


def _side_by_side(
    variant: Path,
    max_run: int,
    batches: list[list[str]],
    scan_of: tuple[Path, int] | None,
    start: Any,
    rates: Any,
) -> None:
    """One of the side-by-side copies: warm up, wait for the others, put its sentences/s."""
    encoder = _encoder(variant, max_run)
    scan = None if scan_of is None else Scan(*scan_of)
    encoder.encode_texts(batches[0])
    start.wait()
    wall, _ = _timed(encoder, batches, scan)
    rates.put(sum(len(batch) for batch in batches) / wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", type=Path, default=Path("artifacts/variants/minilm-l6-v2"))
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--split", default="val", help="captions_<split>.csv (val)")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--batches", default="10,32", help="batch sizes, comma-separated")
    parser.add_argument("--processes", type=int, default=2, help="copies run side by side")
    parser.add_argument("--scan-bundle", type=Path, help="also scan this bundle's captions")
    parser.add_argument("--fetch", type=int, default=27, help="rows scanned for per caption")
    args = parser.parse_args()
    scan_of = None if args.scan_bundle is None else (args.scan_bundle, args.fetch)
    scan = None if scan_of is None else Scan(*scan_of)
    sizes = [int(size) for size in args.batches.split(",")]
    captions = [caption.text for caption in read_captions(captions_path(args.data, args.split))]
    captions = captions[: args.n]
    max_run = max(sizes)
    encoder = _encoder(args.variant, max_run)
    lengths = encoder.tokenizer.encode(captions).lengths
    encoder.encode_texts(captions[:200])  # warm-up
    context = multiprocessing.get_context("spawn")
    for size in sizes:
        for shape in SHAPES:
            batches = _batches(captions, lengths, shape, size)
            _, cpu = _timed(encoder, batches, scan)
            start, queue = context.Barrier(args.processes), context.Queue()
            copies = [
                context.Process(
                    target=_side_by_side,
                    args=(args.variant, max_run, batches, scan_of, start, queue),
                )
                for _ in range(args.processes)
            ]
            for copy in copies:
                copy.start()
            rates = [queue.get() for _ in copies]
            for copy in copies:
                copy.join()
            print(
                f"{shape:8s} batches of {size:3d}: {1000.0 * cpu / len(captions):5.2f} CPU ms per "
                f"caption; {args.processes} side by side: {sum(rates):6.1f} sentences/s "
                f"({', '.join(f'{rate:.1f}' for rate in rates)})"
            )


if __name__ == "__main__":
    main()
