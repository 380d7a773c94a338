"""Compare trained dual-encoder variants on one split, in one run, through the harness's metrics.

Each variant's ONNX towers embed the split's captions and images once; the harness's in-memory
path (``evaluation.in_memory.evaluate_with_scorer``, the same metric code a live
run uses) then scores every CxC task and BISON. Prints one Markdown table and writes it with the
JSON.

    .venv/bin/python scripts/compare_variants.py --data artifacts/data/scenes --split test \
        --variant models/scenes-dual-encoder --variant /tmp/trained/i2t --out reports/compare
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from encoders.image_decode import ImageLimits, decode_image
from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder
from evaluation.data.corpus import load_cxc_data
from evaluation.in_memory import ScoreFn, Side, evaluate_with_scorer

RETRIEVAL = ("i2t", "t2i", "t2t", "i2i", "i2t_original", "t2i_original")
CORRELATION = ("sts", "sis", "sits")
LIMITS = ImageLimits(max_bytes=64 << 20, max_pixels=100_000_000)


def embedding_scorer(
    text: OnnxTextEncoder, image: OnnxImageEncoder, captions: dict[str, str], images_dir: Path
) -> ScoreFn:
    """Cosine scores from embeddings computed once per item (texts of unknown captions on
    demand)."""
    caption_keys = list(captions)
    caption_vectors = text.encode_texts([captions[key] for key in caption_keys])
    caption_row = {key: row for row, key in enumerate(caption_keys)}
    image_names = sorted(path.name for path in images_dir.iterdir())
    image_vectors = np.concatenate(
        [
            image.encode_images(
                [decode_image((images_dir / name).read_bytes(), LIMITS) for name in chunk]
            )
            for chunk in (image_names[i : i + 256] for i in range(0, len(image_names), 256))
        ]
    )
    image_row = {name: row for row, name in enumerate(image_names)}

    def vector(side: Side) -> np.ndarray:
        if side.collection == "images":
            assert side.id is not None
            return image_vectors[image_row[side.id]]
        if side.id is not None and side.id in caption_row:
            return caption_vectors[caption_row[side.id]]
        assert side.text is not None
        return text.encode_texts([side.text])[0]

    def score_fn(left: Sequence[Side], right: Sequence[Side]) -> np.ndarray:
        return np.stack([vector(s) for s in left]) @ np.stack([vector(s) for s in right]).T

    return score_fn


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--variant", type=Path, action="append", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    data = load_cxc_data(args.data, args.split, dataset="scenes")
    captions = {caption.key: caption.text for caption in data.captions}
    images_dir = args.data / "images" / args.split
    rows = {}
    for variant_dir in args.variant:
        started = time.perf_counter()
        text = OnnxTextEncoder(variant_dir, providers="cpu")
        image = OnnxImageEncoder(variant_dir, providers="cpu")
        result = evaluate_with_scorer(
            data,
            embedding_scorer(text, image, captions, images_dir),
            tasks=(*RETRIEVAL, *CORRELATION, "bison"),
        )
        source = text.manifest.source_model
        rows[variant_dir.name] = {
            "path": str(variant_dir),
            "training": source.model_dump() if hasattr(source, "model_dump") else str(source),
            "tasks": result.tasks,
            "seconds": round(time.perf_counter() - started, 1),
        }
        seconds = rows[variant_dir.name]["seconds"]
        print(f"evaluated {variant_dir.name} ({text.name}) in {seconds} s", file=sys.stderr)

    header = [
        "variant",
        *(f"{t} R@1" for t in RETRIEVAL),
        *(f"{t} ρ" for t in CORRELATION),
        "BISON",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, row in rows.items():
        tasks = row["tasks"]
        cells = [name]
        cells += [f"{100 * tasks[t]['R@1']:.1f}" for t in RETRIEVAL]
        cells += [
            f"{tasks[t]['spearman_mean']:.1f} ± {tasks[t]['spearman_std']:.1f}" for t in CORRELATION
        ]
        cells.append(f"{100 * tasks['bison']['accuracy']:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compare.json").write_text(json.dumps(rows, indent=2, default=str) + "\n")
    (args.out / "compare.md").write_text(
        f"# Trained variants on scenes {args.split} (one run, in-memory harness metrics)\n\n"
        f"{table}\n"
    )
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
