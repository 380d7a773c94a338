"""Export a CLIP checkpoint on local disk (Hugging Face or open_clip) to a two-tower fp32 variant.

``text.onnx``: input ``input_ids`` int64 ``[batch, sequence]`` (both dynamic, sequence ≤ the
model's context length, 77 for OpenAI's CLIPs) → text transformer → the end-of-text token's
features → ``text_projection`` → L2 normalisation → ``embeddings`` float32 ``[batch, dim]``.
There is no attention-mask input: CLIP's text attention is causal and the tokenizer pads on the
right, so padding never reaches the pooled position (the parity check compares against
``CLIPModel`` run *with* the attention mask, which proves it).

``image.onnx``: input ``pixel_values`` float32 ``[batch, 3, S, S]`` (batch dynamic) → vision
transformer → class token → ``post_layernorm`` → ``visual_projection`` → L2 normalisation →
``embeddings`` float32 ``[batch, dim]``.

``tokenizer.json`` is the checkpoint's own tokenizer, saved with CLIP's context length as the
truncation length and dynamic padding; ``variant.json`` records the checkpoint's own
preprocessing (``training.export.clip_checkpoint``). Parity: the staged folder, run through
``OnnxTextEncoder`` / ``OnnxImageEncoder`` as served, against ``CLIPModel`` in PyTorch on
``parity_texts()`` and ``parity_images()``; per-tower and overall numbers go into the manifest.

Needs the ``export`` extra (torch, transformers, onnx) and scikit-image (parity images).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import torch
import transformers
from PIL import Image
from transformers import CLIPModel

from encoders.image_encoder import OnnxImageEncoder
from encoders.image_preprocess import preprocess_images
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import (
    ParityReport,
    SourceModel,
    TextTower,
    Tower,
    VariantManifest,
    write_variant_manifest,
)
from formats.hashing import sha256_files
from training.export.clip_checkpoint import ClipCheckpoint, load_clip_checkpoint
from training.export.onnx_trace import export_tower
from training.parity.compare import (
    DEFAULT_PARITY_THRESHOLD,
    TowerEmbeddings,
    check_parity,
    compare_towers,
    log_exported,
    log_parity,
)
from training.parity.images import parity_images
from training.parity.texts import parity_texts
from training.staging import staged_directory

DEFAULT_OPSET: Final = 17
TEXT_ONNX: Final = "text.onnx"
IMAGE_ONNX: Final = "image.onnx"
TOKENIZER_JSON: Final = "tokenizer.json"
TEXT_INPUT: Final = "input_ids"
IMAGE_INPUT: Final = "pixel_values"
OUTPUT_NAME: Final = "embeddings"
_REFERENCE_BATCH: Final = 32
# Two rows of different lengths, so the traced graph takes the padded-batch path.
_TRACE_TEXTS: Final = ("a photo of a dog sitting on a wooden bench in the park", "a cat")

logger = logging.getLogger(__name__)


class ClipTextTower(torch.nn.Module):
    """``CLIPModel`` text features, L2-normalised: int64 ``[b, L]`` ids → float32 ``[b, dim]``."""

    def __init__(self, model: CLIPModel) -> None:
        """Wrap a loaded ``CLIPModel`` (its vision tower is left unused)."""
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Right-padded token ids → unit-length text embeddings."""
        features = self.model.get_text_features(input_ids=input_ids).pooler_output
        return torch.nn.functional.normalize(features, p=2.0, dim=1)


class ClipImageTower(torch.nn.Module):
    """``CLIPModel`` image features, L2-normalised: float32 ``[b, 3, S, S]`` → ``[b, dim]``."""

    def __init__(self, model: CLIPModel) -> None:
        """Wrap a loaded ``CLIPModel`` (its text tower is left unused)."""
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """Preprocessed pixels → unit-length image embeddings."""
        features = self.model.get_image_features(pixel_values=pixel_values).pooler_output
        return torch.nn.functional.normalize(features, p=2.0, dim=1)


def default_variant_name(source_dir: Path) -> str:
    """A variant name from the checkpoint folder's name (``clip-vit-base-patch32`` stays as is;
    characters other than letters, digits, ``.``, ``_``, ``-`` become ``-``)."""
    cleaned = "".join(
        char if char.isascii() and (char.isalnum() or char in "._-") else "-"
        for char in Path(source_dir).resolve().name
    ).strip("-._")
    return cleaned or "clip"


def export_clip(
    source_dir: Path,
    out_dir: Path,
    *,
    name: str,
    overwrite: bool = False,
    parity_threshold: float = DEFAULT_PARITY_THRESHOLD,
    opset: int = DEFAULT_OPSET,
) -> VariantManifest:
    """Export the CLIP checkpoint in ``source_dir`` into the variant folder ``out_dir``.

    Builds the folder beside ``out_dir`` and renames it into place only after both towers pass
    parity (min cosine ≥ ``parity_threshold`` on every text and image); returns the manifest.
    Raises ``ParityError`` when they do not, ``FileExistsError`` when ``out_dir`` exists and not
    ``overwrite``, ``VariantError`` / ``OpenClipConversionError`` for an unusable checkpoint;
    nothing is written on failure.
    """
    started = time.perf_counter()
    if Path(out_dir).exists() and not overwrite:
        # staged_directory checks again at the end; failing here saves loading and tracing.
        raise FileExistsError(f"{out_dir} exists; pass overwrite=True (--force) to replace it")
    checkpoint = load_clip_checkpoint(source_dir)
    text_module = ClipTextTower(checkpoint.model).eval()
    image_module = ClipImageTower(checkpoint.model).eval()
    with staged_directory(out_dir, overwrite=overwrite) as staging:
        checkpoint.tokenizer.save(staging / TOKENIZER_JSON)
        _export_text(text_module, checkpoint, staging / TEXT_ONNX, opset)
        _export_image(image_module, checkpoint, staging / IMAGE_ONNX, opset)
        files = [TEXT_ONNX, IMAGE_ONNX, TOKENIZER_JSON]
        logger.info(
            "wrote %s",
            ", ".join(f"{file} ({(staging / file).stat().st_size / 1e6:.1f} MB)" for file in files),
        )
        manifest = VariantManifest(
            name=name,
            towers=["text", "image"],
            dim=checkpoint.dim,
            normalised=True,
            precision="fp32",
            text=TextTower(
                onnx_file=TEXT_ONNX,
                tokenizer_file=TOKENIZER_JSON,
                max_tokens=checkpoint.tokenizer.max_tokens,
            ),
            image=checkpoint.image_tower,
            files=sha256_files(staging, files),
            source_model=SourceModel(
                base_model=f"{Path(source_dir).resolve().name} ({checkpoint.kind} CLIP checkpoint, "
                f"weights {checkpoint.weights_file})",
                exporter=(
                    f"torch {torch.__version__} torch.onnx.export (TorchScript, dynamo=False), "
                    f"opset {opset}, transformers {transformers.__version__} CLIPModel (eager "
                    "attention); projected, L2-normalised text and image features"
                ),
            ),
            created_at=datetime.now(UTC),
        )
        # Parity runs on the staged folder through the serving classes, so it also covers the
        # saved tokenizer.json and the manifest's preprocessing fields.
        write_variant_manifest(staging, manifest)
        overall, by_tower = _measure_parity(staging, image_module, checkpoint, parity_threshold)
        for tower, report in by_tower.items():
            log_parity(report, tower)
        check_parity(overall)
        manifest = manifest.model_copy(update={"parity": overall, "parity_by_tower": by_tower})
        write_variant_manifest(staging, manifest)

    log_exported(manifest, out_dir, started)
    return manifest


def _export_text(module: ClipTextTower, checkpoint: ClipCheckpoint, path: Path, opset: int) -> None:
    """Trace the text tower with dynamic batch and sequence axes."""
    example = torch.from_numpy(checkpoint.tokenizer.encode(list(_TRACE_TEXTS)).input_ids)
    axes = {TEXT_INPUT: {0: "batch", 1: "sequence"}, OUTPUT_NAME: {0: "batch"}}
    with warnings.catch_warnings():
        _ignore_known_trace_warnings()
        export_tower(module, (example,), path, [TEXT_INPUT], OUTPUT_NAME, axes, opset)


def _export_image(
    module: ClipImageTower, checkpoint: ClipCheckpoint, path: Path, opset: int
) -> None:
    """Trace the image tower with a dynamic batch axis."""
    height, width = checkpoint.image_tower.input_size
    # Two rows, so nothing batch-size-specific can be folded into the graph.
    example = torch.rand(2, 3, height, width, generator=torch.Generator().manual_seed(0))
    axes = {IMAGE_INPUT: {0: "batch"}, OUTPUT_NAME: {0: "batch"}}
    with warnings.catch_warnings():
        _ignore_known_trace_warnings()
        export_tower(module, (example,), path, [IMAGE_INPUT], OUTPUT_NAME, axes, opset)


def _ignore_known_trace_warnings() -> None:
    """Silence the warnings this trace is known to raise and that are harmless for it.

    transformers' causal-mask and attention code compares shapes (sequence length against
    itself, batch against batch): the traced answer holds for every input shape, and the parity
    check runs the graph on batches and lengths other than the traced ones. Call inside
    ``warnings.catch_warnings()``.
    """
    # TracerWarning is not re-exported by torch.jit's stubs, hence the lookup by attribute.
    tracer_warning: type[Warning] = torch.jit.TracerWarning  # type: ignore[attr-defined]
    warnings.filterwarnings(
        "ignore", message="Converting a tensor to a Python boolean", category=tracer_warning
    )
    warnings.filterwarnings(
        "ignore", message="Converting a tensor to a Python integer", category=tracer_warning
    )
    # The text pooling indexes with arange(batch) and argmax positions: never negative, the
    # case this warning says is exported correctly.
    warnings.filterwarnings(
        "ignore",
        message="Exporting aten::index operator of advanced indexing",
        category=UserWarning,
    )


def _measure_parity(
    variant_dir: Path,
    image_module: ClipImageTower,
    checkpoint: ClipCheckpoint,
    threshold: float,
) -> tuple[ParityReport, dict[Tower, ParityReport]]:
    """Both towers of the staged variant against ``CLIPModel`` on the parity texts and images."""
    texts = parity_texts()
    named_images = parity_images()
    images = [image for _, image in named_images]
    text_candidate = OnnxTextEncoder(variant_dir, providers="cpu").encode_texts(texts)
    image_candidate = OnnxImageEncoder(variant_dir, providers="cpu").encode_images(images)
    return compare_towers(
        {
            "text": TowerEmbeddings(text_candidate, _reference_texts(checkpoint, texts), texts),
            "image": TowerEmbeddings(
                image_candidate,
                _reference_images(image_module, checkpoint, images),
                [name for name, _ in named_images],
            ),
        },
        reference_name=(
            f"torch {torch.__version__} CPU transformers {transformers.__version__} CLIPModel "
            "get_text_features (with attention mask) / get_image_features, L2-normalised, on the "
            "same token ids and preprocessed pixels"
        ),
        threshold=threshold,
    )


def _reference_texts(checkpoint: ClipCheckpoint, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """``CLIPModel`` text embeddings, run as Hugging Face users run it: ids + attention mask."""
    batches = []
    with torch.inference_mode():
        for start in range(0, len(texts), _REFERENCE_BATCH):
            tokens = checkpoint.tokenizer.encode(texts[start : start + _REFERENCE_BATCH])
            features = checkpoint.model.get_text_features(
                input_ids=torch.from_numpy(tokens.input_ids),
                attention_mask=torch.from_numpy(tokens.attention_mask),
            ).pooler_output
            batches.append(torch.nn.functional.normalize(features, p=2.0, dim=1).numpy())
    return np.concatenate(batches).astype(np.float32)


def _reference_images(
    module: ClipImageTower, checkpoint: ClipCheckpoint, images: Sequence[Image.Image]
) -> npt.NDArray[np.float32]:
    """The PyTorch image tower on the same pixels ``preprocess_images`` gives the ONNX graph."""
    batches = []
    with torch.inference_mode():
        for start in range(0, len(images), _REFERENCE_BATCH):
            pixels = preprocess_images(
                images[start : start + _REFERENCE_BATCH], checkpoint.image_tower
            )
            batches.append(module(torch.from_numpy(pixels)).numpy())
    return np.concatenate(batches).astype(np.float32)
