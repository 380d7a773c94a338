"""What a random batch costs the text encoder against sorted full ones: CPU milliseconds per
caption of ``OnnxTextEncoder.encode_texts`` on one onnxruntime thread, over the first ``--n``
captions, (a) as one call (sorted by length and cut into runs of at most ``--max-run``, as the
bare peer-bench figure and an index build run) and (b) in shuffled batches of ``--batch`` (what
the service's batcher hands the encoder at c32: about ten captions), one call each.

usage: .venv/bin/python scripts/encoder_batches.py [--n 2000] [--batch 16] [--max-run 32]
       [--data ../shared/data] [--split val]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from encoders.text_encoder import OnnxTextEncoder
from formats.karpathy import read_captions
from formats.layout import captions_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", type=Path, default=Path("artifacts/variants/minilm-l6-v2"))
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--split", default="val", help="captions_<split>.csv (val)")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-run", type=int, default=32)
    args = parser.parse_args()
    captions = [caption.text for caption in read_captions(captions_path(args.data, args.split))]
    captions = captions[: args.n]
    encoder = OnnxTextEncoder(
        args.variant, providers="cpu", intra_op_threads=1, batch_size=args.max_run
    )
    encoder.encode_texts(captions[:200])  # warm-up
    shuffled = captions[:]
    random.Random(0).shuffle(shuffled)
    batches = [shuffled[i : i + args.batch] for i in range(0, len(shuffled), args.batch)]
    for label, calls in (
        (f"one call, sorted runs of <= {args.max_run}", [captions]),
        (f"shuffled batches of {args.batch}", batches),
    ):
        started = time.process_time()
        for call in calls:
            encoder.encode_texts(call)
        spent = time.process_time() - started
        print(f"{label:36s} {1000.0 * spent / len(captions):6.2f} CPU ms per caption")


if __name__ == "__main__":
    main()
