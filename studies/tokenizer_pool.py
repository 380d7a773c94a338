"""What the tokenizers library's own thread pool costs the service's small batches: CPU and wall
milliseconds per caption of ``TextTokenizer.encode`` over the first ``--n`` captions in batches
of ``--batch`` (the service's encoder threads tokenize about ten captions at a time at c32),
once with the pool (``TOKENIZERS_PARALLELISM=true``) and once without, each in a fresh process.
The service turns the pool off (``CRISSCROSS_TOKENIZER_PARALLELISM``, docs/settings.md).

usage: .venv/bin/python studies/tokenizer_pool.py [--n 2000] [--batch 10] [--repeats 3]
       [--variant artifacts/variants/minilm-l6-v2] [--data ../shared/data] [--split val]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from encoders.text_encoder import OnnxTextEncoder
from formats.karpathy import read_captions
from formats.layout import captions_path
from service.runtime.process_threads import TOKENIZERS_PARALLELISM


def _measure(args: argparse.Namespace) -> None:
    """In this process (the pool as the variable says): one line of ms per caption."""
    tokenizer = OnnxTextEncoder(args.variant, providers="cpu", intra_op_threads=1).tokenizer
    captions = [caption.text for caption in read_captions(captions_path(args.data, args.split))]
    captions = captions[: args.n]
    batches = [captions[i : i + args.batch] for i in range(0, len(captions), args.batch)]
    tokenizer.encode(captions[:200])  # warm-up
    for _ in range(args.repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        for batch in batches:
            tokenizer.encode(batch)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(
            f"pool {os.environ[TOKENIZERS_PARALLELISM]:5s}: "
            f"{1000.0 * cpu / len(captions):.3f} CPU ms and "
            f"{1000.0 * wall / len(captions):.3f} wall ms per caption",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", type=Path, default=Path("artifacts/variants/minilm-l6-v2"))
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--split", default="val", help="captions_<split>.csv (val)")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        _measure(args)
        return
    for pool in ("true", "false"):
        subprocess.run(
            [sys.executable, __file__, "--measure", *sys.argv[1:]],
            env={**os.environ, TOKENIZERS_PARALLELISM: pool},
            check=True,
        )


if __name__ == "__main__":
    main()
