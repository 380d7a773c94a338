"""Reduced-precision variants derived from an fp32 variant: int8 (for CPUs) and fp16 (for GPUs).

- **int8**: ``onnxruntime.quantization.quantize_dynamic`` on every tower: the weights of
  ``MatMul`` (all linear layers) and ``Gather`` (embedding tables) become int8, per output
  channel; activations are quantised to uint8 at run time, per tensor. Convolutions (a ViT's
  patch embedding) stay float: onnxruntime's CPU ``ConvInteger`` takes no int8 weights. Per-channel
  weights matter: on all-MiniLM-L6-v2 per-tensor int8 reaches only ~0.93 minimum cosine against
  fp32 on COCO captions, per-channel ~0.987.
- **fp16**: onnxruntime's float16 converter (``onnxruntime.transformers.float16``, the maintained
  copy of onnxconverter-common's) with ``keep_io_types``: inputs and outputs stay float32 / int64,
  so the encoders, bundles and the service see the same tensors. Meant for GPUs; onnxruntime's
  CPU provider runs it too (casting where it lacks fp16 kernels), which is how parity is
  measured here, but not faster than fp32.

Every derived variant gets its own ``variant.json``: ``precision``, ``derived_from`` (source name,
fingerprint and the exact method), new file hashes (so a new fingerprint), and a parity report
against the *fp32 variant* run through the same serving classes, per tower and overall. A report
is labelled ``passed`` only when its minimum cosine reaches the threshold (0.999); otherwise it is
kept and labelled ``below_bar`` with its numbers: dynamic int8 typically lands there while losing
nothing measurable on retrieval, which the benchmark harness, not this check, decides.
"""

from __future__ import annotations

import logging
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

import onnx
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic
from onnxruntime.transformers.float16 import convert_float_to_float16

from encoders.providers import ProviderRequest
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import (
    DerivedFrom,
    ParityReport,
    Tower,
    VariantError,
    VariantManifest,
    load_variant_manifest,
    verify_variant_files,
    write_variant_manifest,
)
from formats.hashing import sha256_files
from training.parity.compare import DEFAULT_PARITY_THRESHOLD, TowerEmbeddings, compare_towers
from training.parity.texts import caption_texts, parity_texts
from training.staging import staged_directory

DerivedPrecision = Literal["int8", "fp16"]
DERIVED_PRECISIONS: Final[tuple[DerivedPrecision, ...]] = ("int8", "fp16")
INT8_OP_TYPES: Final = ("MatMul", "Gather")
DEFAULT_CAPTIONS: Final = 1000

logger = logging.getLogger(__name__)


def derive_variant(
    source_dir: Path,
    out_dir: Path,
    precision: DerivedPrecision,
    *,
    name: str | None = None,
    overwrite: bool = False,
    captions_csv: Path | None = None,
    captions: int = DEFAULT_CAPTIONS,
    parity_threshold: float = DEFAULT_PARITY_THRESHOLD,
    providers: ProviderRequest = "cpu",
) -> VariantManifest:
    """Write the ``precision`` version of the fp32 variant in ``source_dir`` to ``out_dir``.

    ``name`` defaults to ``<source name>-<precision>``. Parity inputs: ``parity_texts()`` plus
    the first ``captions`` rows' ``text`` of ``captions_csv`` (a Karpathy captions CSV) for a text
    tower, ``parity_images()`` for an image tower; both variants run on ``providers``. The
    variant is published whatever its parity; the report says ``passed`` or ``below_bar``.
    Raises ``VariantError`` when the source is not a verified fp32 variant, ``FileExistsError``
    when ``out_dir`` exists and not ``overwrite``; nothing is written on failure.
    """
    started = time.perf_counter()
    source = load_variant_manifest(source_dir)
    verify_variant_files(source_dir, source)
    if source.precision != "fp32":
        raise VariantError(
            f"variant {source.name!r} is {source.precision}; derive from an fp32 variant"
        )
    name = name or f"{source.name}-{precision}"
    onnx_files = {tower: _onnx_file(source, tower) for tower in source.towers}
    with staged_directory(out_dir, overwrite=overwrite) as staging:
        for tower, onnx_file in onnx_files.items():
            tower_started = time.perf_counter()
            _convert(source_dir / onnx_file, staging / onnx_file, precision)
            logger.info(
                "%s tower: %s %.1f MB → %s %.1f MB in %.1f s",
                tower,
                source.precision,
                (source_dir / onnx_file).stat().st_size / 1e6,
                precision,
                (staging / onnx_file).stat().st_size / 1e6,
                time.perf_counter() - tower_started,
            )
        for other in sorted(set(source.files) - set(onnx_files.values())):
            shutil.copy2(source_dir / other, staging / other)
        manifest = VariantManifest.model_validate(
            {
                **source.model_dump(),
                "name": name,
                "precision": precision,
                "files": sha256_files(staging, source.files),
                "parity": None,
                "parity_by_tower": None,
                "derived_from": DerivedFrom(
                    name=source.name,
                    fingerprint=source.fingerprint,
                    precision=source.precision,
                    method=_method(precision),
                    target="cpu" if precision == "int8" else "gpu",
                ),
                "created_at": datetime.now(UTC),
            }
        )
        write_variant_manifest(staging, manifest)
        overall, by_tower = measure_derived_parity(
            staging,
            source_dir,
            captions_csv=captions_csv,
            captions=captions,
            threshold=parity_threshold,
            providers=providers,
        )
        manifest = manifest.model_copy(
            update={
                "parity": overall,
                "parity_by_tower": by_tower if len(by_tower) > 1 else None,
            }
        )
        write_variant_manifest(staging, manifest)
    for tower, report in by_tower.items():
        logger.log(
            logging.INFO if report.status == "passed" else logging.WARNING,
            "%s %s parity vs fp32 on %d inputs: min cosine %.6f, mean %.6f (%s at threshold %s; "
            "worst %s)",
            name,
            tower,
            report.inputs,
            report.min_cosine,
            report.mean_cosine,
            report.status,
            report.threshold,
            report.worst_input,
        )
    logger.info(
        "variant %s (%s, fingerprint %s…) derived from %s in %.1f s",
        name,
        precision,
        manifest.fingerprint[:12],
        source.name,
        time.perf_counter() - started,
    )
    return manifest


def measure_derived_parity(
    variant_dir: Path,
    reference_dir: Path,
    *,
    captions_csv: Path | None = None,
    captions: int = DEFAULT_CAPTIONS,
    threshold: float = DEFAULT_PARITY_THRESHOLD,
    providers: ProviderRequest = "cpu",
) -> tuple[ParityReport, dict[Tower, ParityReport]]:
    """Compare every tower of ``variant_dir`` with the same tower of ``reference_dir``.

    Returns ``(overall, by_tower)`` as ``compare_towers`` does. Texts: ``parity_texts()`` then
    the first ``captions`` captions of ``captions_csv`` (when given); images: ``parity_images()``.
    """
    manifest = load_variant_manifest(variant_dir)
    towers: dict[Tower, TowerEmbeddings] = {}
    if "text" in manifest.towers:
        texts = parity_texts()
        if captions_csv is not None:
            texts += caption_texts(captions_csv, captions)
        towers["text"] = TowerEmbeddings(
            OnnxTextEncoder(variant_dir, providers=providers).encode_texts(texts),
            OnnxTextEncoder(reference_dir, providers=providers).encode_texts(texts),
            texts,
        )
    if "image" in manifest.towers:
        # Imported here: the parity images need scikit-image, which only image towers use.
        from encoders.image_encoder import OnnxImageEncoder
        from training.parity.images import parity_images

        named = parity_images()
        images = [image for _, image in named]
        towers["image"] = TowerEmbeddings(
            OnnxImageEncoder(variant_dir, providers=providers).encode_images(images),
            OnnxImageEncoder(reference_dir, providers=providers).encode_images(images),
            [image_name for image_name, _ in named],
        )
    reference = load_variant_manifest(reference_dir)
    return compare_towers(
        towers,
        reference_name=(
            f"{reference.precision} variant {reference.name} ({reference.fingerprint[:12]}…), "
            f"onnxruntime {ort.__version__} {providers}, same inputs"
        ),
        threshold=threshold,
    )


def _onnx_file(manifest: VariantManifest, tower: Tower) -> str:
    """The ONNX file name of ``tower``."""
    section = manifest.text if tower == "text" else manifest.image
    if section is None:  # the manifest's validator makes this unreachable
        raise VariantError(f"variant {manifest.name!r} lists tower {tower!r} without a section")
    return section.onnx_file


def _convert(source: Path, target: Path, precision: DerivedPrecision) -> None:
    """Write the ``precision`` version of the ONNX graph ``source`` to ``target``."""
    if precision == "int8":
        # The quantizer logs one INFO line per tensor on the root logger; keep its warnings.
        logging.disable(logging.INFO)
        try:
            quantize_dynamic(
                source,
                target,
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=list(INT8_OP_TYPES),
            )
        finally:
            logging.disable(logging.NOTSET)
        return
    model = convert_float_to_float16(onnx.load(str(source)), keep_io_types=True)
    onnx.save(model, str(target))


def _method(precision: DerivedPrecision) -> str:
    """How ``_convert`` derives ``precision``, with versions, for ``derived_from.method``."""
    if precision == "int8":
        return (
            f"onnxruntime {ort.__version__} quantization.quantize_dynamic: weights of "
            f"{'/'.join(INT8_OP_TYPES)} QInt8 per channel, activations QUInt8 per tensor at run "
            "time; Conv and everything else float32"
        )
    return (
        f"onnxruntime {ort.__version__} transformers.float16.convert_float_to_float16"
        "(keep_io_types=True): weights and activations fp16, inputs and outputs unchanged"
    )
