"""What is each search lever worth on CxC, and what does it cost?

Two ``benchmarks compare`` runs against one running service (``make serve`` after ``make demo``,
``make variant-int8 bundle-int8``, ``make variant-mpnet`` and the coco-captions-mpnet bundle, and
the scenes-tagged bundle of ``studies/scenes_tags.py``), each row one lever setting:

- ``coco``: CxC val on the COCO captions (t2t, t2t with co-captions, STS): dense MiniLM, lexical,
  hybrid (RRF k 60 and k 2, weighted sums), int8 MiniLM alone and re-scored by fp32 MiniLM,
  mpnet alone and as MiniLM's re-ranker;
- ``scenes``: the scenes test split, text→image with keywords on the images' tags: dense,
  lexical, hybrid.

    .venv/bin/python studies/levers_on_cxc.py --url http://127.0.0.1:8000 --out reports/levers

Result (2026-11-28, the developer VM): docs/studies/2026-11-28-levers-on-cxc.md.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"

MINILM, INT8, MPNET = "minilm-l6-v2", "minilm-l6-v2-int8", "mpnet-base-v2"

COCO_SETTINGS = [
    f"dense=variant:{MINILM}",
    f"lexical=variant:{MINILM},mode:lexical",
    f"hybrid-rrf60=variant:{MINILM},mode:hybrid,fusion:rrf,rrf_k:60",
    f"hybrid-rrf2=variant:{MINILM},mode:hybrid,fusion:rrf,rrf_k:2",
    f"hybrid-w0.5=variant:{MINILM},mode:hybrid,fusion:weighted,alpha:0.5",
    f"hybrid-w0.7=variant:{MINILM},mode:hybrid,fusion:weighted,alpha:0.7",
    f"hybrid-w0.9=variant:{MINILM},mode:hybrid,fusion:weighted,alpha:0.9",
    f"int8=variant:{INT8}",
    f"int8+fp32=variant:{INT8},rerank:{MINILM},window:100",
    f"mpnet=variant:{MPNET}",
    f"minilm+mpnet=variant:{MINILM},rerank:{MPNET},window:100",
]

SCENES_SETTINGS = [
    "dense=variant:scenes-dual-encoder",
    "lexical=variant:scenes-dual-encoder,mode:lexical,lexical_field:tags",
    "hybrid-rrf60=variant:scenes-dual-encoder,mode:hybrid,fusion:rrf,rrf_k:60,lexical_field:tags",
    "hybrid-w0.5=variant:scenes-dual-encoder,mode:hybrid,fusion:weighted,alpha:0.5,"
    "lexical_field:tags",
    "hybrid-w0.7=variant:scenes-dual-encoder,mode:hybrid,fusion:weighted,alpha:0.7,"
    "lexical_field:tags",
    "hybrid-w0.9=variant:scenes-dual-encoder,mode:hybrid,fusion:weighted,alpha:0.9,"
    "lexical_field:tags",
]


def _compare(url: str, out: Path, extra: list[str], settings: list[str]) -> None:
    command = [str(PYTHON), "-m", "benchmarks", "compare", "--url", url, "--out", str(out)]
    command += extra
    for setting in settings:
        command += ["--setting", setting]
    print(" ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "levers")
    parser.add_argument("--runs", default="scenes,coco", help="which runs, in order")
    parser.add_argument("--limit-queries", default="3000", help="first N queries per task")
    parser.add_argument("--latency-requests", default="200", help="per setting and level")
    options = parser.parse_args()
    common = [
        "--limit-queries",
        options.limit_queries,
        "--latency-requests",
        options.latency_requests,
        "--concurrency",
        "1,8",
        "--rounds",
        "2",
        "--no-progress",
    ]
    for run in options.runs.split(","):
        if run == "coco":
            extra = ["--data", str(ROOT.parent / "shared" / "data"), "--split", "val"]
            extra += ["--tasks", "t2t,t2t_cocaptions,sts"]
            _compare(options.url, options.out / "coco", common + extra, COCO_SETTINGS)
        elif run == "scenes":
            extra = ["--dataset", "scenes", "--data", str(ROOT / "artifacts" / "data" / "scenes")]
            extra += ["--split", "test", "--tasks", "t2i,t2i_original"]
            extra += ["--images-collection", "images_tagged", "--latency-collection", "images"]
            _compare(options.url, options.out / "scenes", common + extra, SCENES_SETTINGS)
        else:
            raise SystemExit(f"unknown run {run!r}: coco or scenes")


if __name__ == "__main__":
    main()
