"""One training run end to end: train, evaluate in memory, export the variant with parity."""

from __future__ import annotations

import logging
import platform
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

import numpy as np
import torch
from PIL import Image

from encoders.variant import VariantManifest
from formats.layout import captions_path
from training.parity.compare import DEFAULT_PARITY_THRESHOLD
from training.trainer.corpus import CaptionedImages, load_images, read_split
from training.trainer.export import MIN_PARITY_INPUTS, export_dual_encoder
from training.trainer.reproducibility import deterministic_torch
from training.trainer.retrieval import Metrics
from training.trainer.trainer import TrainConfig, TrainedModel, evaluate_split, train_dual_encoder

TRAINING_RECORD_FORMAT: Final = 1
EVALUATION_SPLITS: Final = ("val", "test")
# Parity inputs: this many val captions and images, plus the hand-made corner cases below.
PARITY_SAMPLES: Final = 120
_PARITY_EDGE_TEXTS: Final = (
    "",
    " ",
    "!",
    "A",
    "RED CIRCLE",
    "a small red circle to the left of a large blue star",
    "a zebra riding a unicycle through a volcano",  # words the vocabulary never saw
    "ünïcödé wörds, ｆｕｌｌｗｉｄｔｈ letters and emoji 🙂",
    "left " * 80,  # far beyond max_tokens: truncation
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingOutcome:
    """What a run produced: the published manifest, the model, in-memory metrics, wall time."""

    manifest: VariantManifest
    trained: TrainedModel
    evaluation: dict[str, dict[str, Metrics]]
    seconds: float


def train_variant(
    config: TrainConfig,
    out_dir: Path,
    *,
    name: str,
    command: str,
    overwrite: bool = False,
    parity_threshold: float = DEFAULT_PARITY_THRESHOLD,
) -> TrainingOutcome:
    """Train per ``config``, evaluate on the val and test splits present, export to ``out_dir``.

    ``command``: the command line that reproduces the run (recorded in ``training.json``, with
    placeholders for paths). Raises what ``train_dual_encoder`` and ``export_dual_encoder``
    raise; ``FileExistsError`` before any training when ``out_dir`` exists and not
    ``overwrite``.
    """
    started = time.perf_counter()
    if Path(out_dir).exists() and not overwrite:
        # staged_directory checks again at the end; failing here saves the training time.
        raise FileExistsError(f"{out_dir} exists; pass overwrite=True (--force) to replace it")
    trained = train_dual_encoder(config)
    evaluation: dict[str, dict[str, Metrics]] = {}
    # The same thread count as training, so the recorded metrics repeat exactly too.
    with deterministic_torch(config.seed, config.threads):
        for split in EVALUATION_SPLITS:
            if captions_path(config.data_dir, split).is_file():
                evaluation[split] = evaluate_split(trained, split, progress=config.progress)
                logger.info("in-memory %s: %s", split, format_metrics(evaluation[split]))
    val = read_split(config.data_dir, "val")
    manifest = export_dual_encoder(
        trained,
        out_dir,
        name=name,
        training_record=training_record(trained, name=name, command=command, evaluation=evaluation),
        parity_texts=parity_texts(val),
        parity_images=parity_images(config.data_dir, val),
        overwrite=overwrite,
        parity_threshold=parity_threshold,
    )
    return TrainingOutcome(
        manifest=manifest,
        trained=trained,
        evaluation=evaluation,
        seconds=time.perf_counter() - started,
    )


def training_record(
    trained: TrainedModel,
    *,
    name: str,
    command: str,
    evaluation: dict[str, dict[str, Metrics]],
) -> dict[str, object]:
    """The content of ``training.json``: deterministic for a deterministic run (no wall times,
    no paths, no dates)."""
    return {
        "format": TRAINING_RECORD_FORMAT,
        "name": name,
        "command": command,
        "data": {
            "fingerprint": trained.data_fingerprint,
            "split": "train",
            "images": trained.train_image_count,
            "captions": trained.train_caption_count,
        },
        "config": trained.config.as_record(),
        "architecture": trained.model.architecture.as_record(),
        "image_preprocessing": trained.image_tower.model_dump(mode="json"),
        "history": [record.as_record() for record in trained.history],
        "evaluation": {
            "protocol": "in-memory, original pairs: i2t (image → its captions), t2i (caption → "
            "its image), t2t (caption → the other captions of its image, itself excluded); "
            "ties by row; fractions 0-1",
            **evaluation,
        },
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "numpy": np.__version__,
            "tokenizers": metadata.version("tokenizers"),
            "onnx": metadata.version("onnx"),
        },
    }


def parity_texts(split: CaptionedImages) -> list[str]:
    """The first ``PARITY_SAMPLES`` captions of ``split`` and hand-made corner cases."""
    texts = list(split.caption_texts[:PARITY_SAMPLES]) + list(_PARITY_EDGE_TEXTS)
    if len(texts) < MIN_PARITY_INPUTS:
        # A tiny corpus: repeat what there is, shifted by case, to reach the minimum.
        texts += [text.upper() for text in texts][: MIN_PARITY_INPUTS - len(texts)]
    return texts


def parity_images(data_dir: Path, split: CaptionedImages) -> list[tuple[str, Image.Image]]:
    """The first ``PARITY_SAMPLES`` images of ``split`` and synthetic ones of other sizes and
    aspect ratios (which exercise the resize and crop), as ``(name, RGB image)``."""
    filenames = split.filenames[:PARITY_SAMPLES]
    named = list(zip(filenames, load_images(data_dir, split.split, filenames), strict=True))
    rng = np.random.default_rng(0)
    for width, height in ((200, 100), (37, 311), (8, 8), (300, 300)):
        noise = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        named.append((f"noise-{width}x{height}", Image.fromarray(noise)))
    for colour in ((0, 0, 0), (255, 255, 255), (200, 30, 30)):
        named.append((f"flat-{colour}", Image.new("RGB", (96, 96), colour)))
    while len(named) < MIN_PARITY_INPUTS:
        # A tiny corpus: mirrored copies are new inputs to the same graph.
        source_name, source = named[len(named) % len(filenames)]
        named.append(
            (
                f"{source_name}/mirrored-{len(named)}",
                source.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
            )
        )
    return named


def format_metrics(metrics: dict[str, Metrics]) -> str:
    """``i2t R@1 0.512 R@5 ... | t2i ...`` for logs."""
    parts = []
    for task, values in metrics.items():
        recalls = " ".join(
            f"{key} {values[key]:.3f}" for key in ("R@1", "R@5", "R@10") if key in values
        )
        parts.append(f"{task} {recalls} (median rank {values.get('median_rank', float('nan')):g})")
    return " | ".join(parts)
