"""Measure the cost of one text-tower run against its shape and fit the model that
``encoders/length_runs.py`` cuts batches with: ``ms ≈ a + b·n·L + c·n·L²``.

usage: .venv/bin/python studies/text_run_cost.py [--variant artifacts/variants/minilm-l6-v2]
       [--threads 1] [--providers cpu]

Prints one line per shape (rows n, tokens L: ms per run, ms per row) and the fit, with the two
numbers the cutter uses: the overhead in tokens (a / b) and the attention length (b / c).
Random token ids; every row the full length (the cost of a run is that of its padded shape).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from encoders.text_encoder import OnnxTextEncoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", type=Path, default=Path("artifacts/variants/minilm-l6-v2"))
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    parser.add_argument("--providers", default="cpu")
    args = parser.parse_args()
    encoder = OnnxTextEncoder(args.variant, args.providers, args.threads)
    session = encoder._session  # the bare session: the measurement leaves the cutter out
    names = session.input_names
    rng = np.random.default_rng(0)
    shapes, costs = [], []
    for length in (8, 12, 16, 20, 24, 32):
        for rows in (1, 2, 4, 8, 16, 32):
            tensors = {
                "input_ids": rng.integers(1000, 20000, (rows, length)).astype(np.int64),
                "attention_mask": np.ones((rows, length), np.int64),
                "token_type_ids": np.zeros((rows, length), np.int64),
            }
            feed = {name: tensors[name] for name in names}
            session.run(feed, rows)
            repeats = max(3, 1600 // (rows * length))
            started = time.perf_counter()
            for _ in range(repeats):
                session.run(feed, rows)
            ms = (time.perf_counter() - started) / repeats * 1000.0
            shapes.append((rows, length))
            costs.append(ms)
            print(f"n={rows:3d} L={length:3d}  {ms:8.3f} ms/run  {ms / rows:7.3f} ms/row")
    design = np.array([[1.0, n * length, n * length * length] for n, length in shapes])
    (a, b, c), *_ = np.linalg.lstsq(design, np.array(costs), rcond=None)
    print(f"fit: {a:.3f} ms + {b:.4f} ms x n·L + {c:.2e} ms x n·L²")
    print(f"overhead_tokens = a/b = {a / b:.1f}; attention_tokens = b/c = {b / c:.0f}")


if __name__ == "__main__":
    main()
