"""A tiny, fully known image variant for fast encoder tests.

The ONNX graph flattens the ``[n, 3, 8, 8]`` pixel tensor and multiplies it by a fixed random
matrix (then optionally L2-normalises), so every pixel position matters — a wrong crop, flip or
channel order changes the output — and expected outputs can be computed in numpy exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image

from encoders.image_preprocess import preprocess_images
from encoders.variant import ImageTower, SourceModel, VariantManifest, write_variant_manifest
from formats.hashing import sha256_files

# The tiny text variant's dimension, so the two graphs can form one dual-tower variant.
TINY_IMAGE_DIM = 8
TINY_SIZE = 8
TINY_TOWER = ImageTower(
    height=TINY_SIZE,
    width=TINY_SIZE,
    resize="shorter_side",
    resize_to=10,
    interpolation="bilinear",
    crop="center",
    mean=(0.5, 0.4, 0.3),
    std=(0.25, 0.2, 0.3),
)


@dataclass(frozen=True)
class TinyImageWeights:
    """The tiny graph's projection [3 * 8 * 8, d], whether it normalises, and its tower."""

    projection: npt.NDArray[np.float32]
    normalises: bool
    tower: ImageTower

    def embed(self, images: list[Image.Image]) -> npt.NDArray[np.float32]:
        """What the graph computes for ``images`` (preprocessed per ``tower``), in float64."""
        pixels = preprocess_images(images, self.tower).reshape(len(images), -1)
        raw = pixels.astype(np.float64) @ self.projection.astype(np.float64)
        if self.normalises:
            raw /= np.linalg.norm(raw, axis=1, keepdims=True)
        embedded: npt.NDArray[np.float32] = raw.astype(np.float32)
        return embedded


def write_tiny_image_onnx(
    path: Path,
    *,
    normalises: bool,
    input_size: int = TINY_SIZE,
    input_name: str = "pixel_values",
    seed: int = 0,
) -> npt.NDArray[np.float32]:
    """Write the tiny image graph to ``path``; returns its projection matrix."""
    onnx = pytest.importorskip("onnx", reason="building the tiny test graph needs onnx")
    helper, tensor_proto = onnx.helper, onnx.TensorProto
    projection = (
        np.random.default_rng(seed)
        .standard_normal((3 * input_size * input_size, TINY_IMAGE_DIM))
        .astype(np.float32)
    )
    nodes = [helper.make_node("Flatten", [input_name], ["flat"], axis=1)]
    if normalises:
        nodes.append(helper.make_node("MatMul", ["flat", "projection"], ["raw"]))
        nodes.append(helper.make_node("LpNormalization", ["raw"], ["embeddings"], axis=1, p=2))
    else:
        nodes.append(helper.make_node("MatMul", ["flat", "projection"], ["embeddings"]))
    graph = helper.make_graph(
        nodes,
        "tiny_image",
        inputs=[
            helper.make_tensor_value_info(
                input_name, tensor_proto.FLOAT, ["batch", 3, input_size, input_size]
            )
        ],
        outputs=[
            helper.make_tensor_value_info(
                "embeddings", tensor_proto.FLOAT, ["batch", TINY_IMAGE_DIM]
            )
        ],
        initializer=[onnx.numpy_helper.from_array(projection, "projection")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return projection


def make_tiny_image_variant(
    variant_dir: Path,
    *,
    normalised_graph: bool = True,
    manifest_dim: int = TINY_IMAGE_DIM,
    graph_input_size: int = TINY_SIZE,
    name: str = "tiny-image",
) -> TinyImageWeights:
    """Create a complete image-only tiny variant folder (image.onnx, variant.json)."""
    variant_dir.mkdir(parents=True, exist_ok=True)
    projection = write_tiny_image_onnx(
        variant_dir / "image.onnx", normalises=normalised_graph, input_size=graph_input_size
    )
    manifest = VariantManifest(
        name=name,
        towers=["image"],
        dim=manifest_dim,
        normalised=normalised_graph,
        precision="fp32",
        image=TINY_TOWER,
        files=sha256_files(variant_dir, ["image.onnx"]),
        source_model=SourceModel(base_model="tests/tiny-image"),
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    write_variant_manifest(variant_dir, manifest)
    return TinyImageWeights(projection=projection, normalises=normalised_graph, tower=TINY_TOWER)
