"""Exporting a trained dual encoder as one variant folder with both towers, checked for parity.

The folder (built in a staging folder, published by one rename, ``training.staging``)::

    text.onnx       input_ids, attention_mask int64 [batch, sequence] → embeddings float32
                    [batch, dim], L2-normalised
    image.onnx      pixel_values float32 [batch, 3, S, S] → embeddings float32 [batch, dim],
                    L2-normalised
    tokenizer.json  the word-level tokenizer, with its truncation and dynamic padding
    training.json   how the weights were made: command, seed, data fingerprint, loss, schedule,
                    per-epoch loss and monitor R@1, final in-memory metrics (no wall times and no
                    paths, so a rerun writes the same bytes)
    variant.json    the manifest: both towers, the exact preprocessing trained with, sha256 of
                    the four files above, the training summary, and the parity report

Parity: the staged folder is loaded with ``OnnxTextEncoder`` and ``OnnxImageEncoder`` exactly
as served, and their embeddings are compared with the PyTorch model's on the same inputs (the
texts tokenized by the in-memory tokenizer, the images preprocessed by ``preprocess_images``);
the minimum cosine over every text and image must reach the threshold or nothing is published.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import numpy as np
import torch
from PIL import Image

from encoders.image_encoder import OnnxImageEncoder
from encoders.image_preprocess import preprocess_images
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import (
    ParityReport,
    SourceModel,
    TextTower,
    VariantError,
    VariantManifest,
    write_variant_manifest,
)
from formats.hashing import sha256_files
from training.export.onnx_trace import export_tower
from training.parity.compare import DEFAULT_PARITY_THRESHOLD, check_parity, compare_embeddings
from training.staging import staged_directory
from training.trainer.evaluation import embed_captions, embed_pixels
from training.trainer.trainer import TrainedModel

TEXT_ONNX: Final = "text.onnx"
IMAGE_ONNX: Final = "image.onnx"
TOKENIZER_JSON: Final = "tokenizer.json"
TRAINING_JSON: Final = "training.json"
TEXT_INPUTS: Final = ("input_ids", "attention_mask")
IMAGE_INPUT: Final = "pixel_values"
OUTPUT_NAME: Final = "embeddings"
DEFAULT_OPSET: Final = 17
# The committed variant must stay small enough for the repository.
MAX_VARIANT_BYTES: Final = 20 * 1024 * 1024
MIN_PARITY_INPUTS: Final = 100

logger = logging.getLogger(__name__)


def export_dual_encoder(
    trained: TrainedModel,
    out_dir: Path,
    *,
    name: str,
    training_record: Mapping[str, object],
    parity_texts: Sequence[str],
    parity_images: Sequence[tuple[str, Image.Image]],
    overwrite: bool = False,
    parity_threshold: float = DEFAULT_PARITY_THRESHOLD,
    opset: int = DEFAULT_OPSET,
) -> VariantManifest:
    """Write ``trained`` as the variant folder ``out_dir``; returns its manifest.

    ``training_record``: JSON-serialisable description written as ``training.json`` (and
    summarised in ``source_model``). ``parity_texts`` / ``parity_images`` (``(name, RGB image)``):
    the inputs compared, at least ``MIN_PARITY_INPUTS`` of each. Raises ``ParityError`` when the
    ONNX towers disagree with PyTorch (min cosine < ``parity_threshold``), ``VariantError`` when
    the files exceed ``MAX_VARIANT_BYTES``, ``FileExistsError`` when ``out_dir`` exists and not
    ``overwrite``, ``ValueError`` for too few parity inputs; nothing is written on failure.
    """
    if len(parity_texts) < MIN_PARITY_INPUTS or len(parity_images) < MIN_PARITY_INPUTS:
        raise ValueError(
            f"parity needs at least {MIN_PARITY_INPUTS} texts and images, got "
            f"{len(parity_texts)} and {len(parity_images)}"
        )
    model = trained.model.eval()
    architecture = model.architecture
    with staged_directory(out_dir, overwrite=overwrite) as staging:
        trained.tokenizer.save(staging / TOKENIZER_JSON)
        _export_text(trained, staging / TEXT_ONNX, opset)
        _export_image(trained, staging / IMAGE_ONNX, opset)
        (staging / TRAINING_JSON).write_text(
            json.dumps(training_record, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        files = [TEXT_ONNX, IMAGE_ONNX, TOKENIZER_JSON, TRAINING_JSON]
        total_bytes = sum((staging / file).stat().st_size for file in files)
        if total_bytes > MAX_VARIANT_BYTES:
            raise VariantError(
                f"variant {name!r} would be {total_bytes / 1e6:.1f} MB, over the "
                f"{MAX_VARIANT_BYTES / 1e6:.1f} MB limit for a committed variant"
            )
        manifest = VariantManifest(
            name=name,
            towers=["text", "image"],
            dim=architecture.dim,
            normalised=True,
            precision="fp32",
            text=TextTower(
                onnx_file=TEXT_ONNX,
                tokenizer_file=TOKENIZER_JSON,
                max_tokens=trained.tokenizer.max_tokens,
            ),
            image=trained.image_tower,
            files=sha256_files(staging, files),
            source_model=_source_model(trained, opset),
            created_at=datetime.now(UTC),
        )
        # Parity runs on the staged folder through the serving classes, so it also covers the
        # saved tokenizer.json and the manifest's preprocessing fields.
        write_variant_manifest(staging, manifest)
        report = _measure_parity(trained, staging, parity_texts, parity_images, parity_threshold)
        logger.info(
            "parity on %d inputs vs %s: min cosine %.6f, mean %.6f, max abs diff %.2e (worst %s)",
            report.inputs,
            report.reference,
            report.min_cosine,
            report.mean_cosine,
            report.max_abs_diff,
            report.worst_input,
        )
        check_parity(report)
        manifest = manifest.model_copy(update={"parity": report})
        write_variant_manifest(staging, manifest)
    logger.info(
        "variant %s (%.2f MB, fingerprint %s…) written to %s",
        name,
        total_bytes / 1e6,
        manifest.fingerprint[:12],
        out_dir,
    )
    return manifest


def _source_model(trained: TrainedModel, opset: int) -> SourceModel:
    """What produced the weights: trained from scratch here, on which data, how."""
    config = trained.config
    return SourceModel(
        base_model=(
            f"crisscross scenes dual encoder, trained from scratch (python -m training train, "
            f"seed {config.seed}, {config.epochs} epochs, batch {config.batch_size}) on "
            f"{trained.train_image_count} images / {trained.train_caption_count} captions of "
            f"the scenes train split ({trained.data_fingerprint}); loss "
            f"{config.loss.describe()}"
        ),
        exporter=(
            f"torch {torch.__version__} torch.onnx.export (TorchScript, dynamo=False), opset "
            f"{opset}; details in {TRAINING_JSON}"
        ),
    )


def _export_text(trained: TrainedModel, path: Path, opset: int) -> None:
    """Trace the text tower to ``path`` with dynamic batch and sequence axes."""
    # Two rows of different lengths, so the traced graph takes the padding path.
    example = trained.tokenizer.encode(["a small red circle to the left of a blue star", "a"])
    inputs = (torch.from_numpy(example.input_ids), torch.from_numpy(example.attention_mask))
    axes: dict[str, dict[int, str]] = {name: {0: "batch", 1: "sequence"} for name in TEXT_INPUTS}
    axes[OUTPUT_NAME] = {0: "batch"}
    export_tower(trained.model.text, inputs, path, TEXT_INPUTS, OUTPUT_NAME, axes, opset)


def _export_image(trained: TrainedModel, path: Path, opset: int) -> None:
    """Trace the image tower to ``path`` with a dynamic batch axis."""
    height, width = trained.image_tower.input_size
    # Two rows, so nothing batch-size-specific can be folded into the graph.
    example = torch.rand(2, 3, height, width, generator=torch.Generator().manual_seed(0))
    axes = {IMAGE_INPUT: {0: "batch"}, OUTPUT_NAME: {0: "batch"}}
    export_tower(trained.model.image, (example,), path, [IMAGE_INPUT], OUTPUT_NAME, axes, opset)


def _measure_parity(
    trained: TrainedModel,
    variant_dir: Path,
    texts: Sequence[str],
    images: Sequence[tuple[str, Image.Image]],
    threshold: float,
) -> ParityReport:
    """Embed ``texts`` and ``images`` with the staged ONNX variant and with PyTorch; compare."""
    text_encoder = OnnxTextEncoder(variant_dir, providers="cpu")
    image_encoder = OnnxImageEncoder(variant_dir, providers="cpu")
    pictures = [image for _name, image in images]
    candidate = np.concatenate(
        [text_encoder.encode_texts(texts), image_encoder.encode_images(pictures)]
    )
    reference = np.concatenate(
        [
            embed_captions(trained.model, trained.tokenizer.encode(list(texts))),
            embed_pixels(trained.model, preprocess_images(pictures, trained.image_tower)),
        ]
    )
    names = [f"text {text!r}" for text in texts] + [f"image {name}" for name, _ in images]
    return compare_embeddings(
        candidate,
        reference,
        names,
        reference_name=(
            f"torch {torch.__version__} CPU DualEncoder (eval mode) on {len(texts)} texts and "
            f"{len(images)} images, through OnnxTextEncoder / OnnxImageEncoder"
        ),
        threshold=threshold,
    )
