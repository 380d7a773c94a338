"""A tiny, fully known text variant for fast encoder tests.

The tokenizer is a word-level vocabulary; the ONNX graph is (token embedding + token-type
embedding) → attention-masked mean → optional L2 normalisation, so expected outputs can be
computed in numpy exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from encoders.text_encoder import TextTokenizer, TokenBatch
from encoders.variant import SourceModel, TextTower, VariantManifest, write_variant_manifest
from formats.hashing import sha256_files

WORDS = (
    "a", "an", "the", "dog", "cat", "on", "in", "couch", "sofa", "sky", "plane", "red", "blue",
    "big", "small", "runs", "sits", "park", "beach", "with", "ball", "and", "two", "three",
)  # fmt: skip
SPECIAL_TOKENS = (("[PAD]", 0), ("[UNK]", 1), ("[CLS]", 2), ("[SEP]", 3))
TINY_DIM = 8
TINY_MAX_TOKENS = 8


def word_level_tokenizer() -> Tokenizer:
    """A lower-casing, whitespace word-level tokenizer adding [CLS] ... [SEP]; no padding set."""
    vocab = dict(SPECIAL_TOKENS) | {word: index + 4 for index, word in enumerate(WORDS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    return tokenizer


@dataclass(frozen=True)
class TinyWeights:
    """The tiny graph's weights: token table [vocab, d], token-type table [2, d]."""

    tokens: npt.NDArray[np.float32]
    types: npt.NDArray[np.float32]
    normalises: bool

    def embed(self, batch: TokenBatch) -> npt.NDArray[np.float32]:
        """What the graph computes for ``batch``, in float64 then cast: [n, d]."""
        hidden = self.tokens[batch.input_ids].astype(np.float64)
        hidden += self.types[batch.token_type_ids]
        mask = batch.attention_mask[..., None].astype(np.float64)
        mean = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        if self.normalises:
            mean /= np.linalg.norm(mean, axis=1, keepdims=True)
        embeddings: npt.NDArray[np.float32] = mean.astype(np.float32)
        return embeddings


def write_tiny_onnx(path: Path, *, normalises: bool, seed: int = 0) -> TinyWeights:
    """Write the tiny text graph to ``path``; inputs as a BERT export, output ``embeddings``."""
    onnx = pytest.importorskip("onnx", reason="building the tiny test graph needs onnx")
    helper, tensor_proto = onnx.helper, onnx.TensorProto
    rng = np.random.default_rng(seed)
    vocab_size = len(SPECIAL_TOKENS) + len(WORDS)
    weights = TinyWeights(
        tokens=rng.standard_normal((vocab_size, TINY_DIM)).astype(np.float32),
        types=rng.standard_normal((2, TINY_DIM)).astype(np.float32),
        normalises=normalises,
    )
    nodes = [
        helper.make_node("Gather", ["token_table", "input_ids"], ["token_vectors"]),
        helper.make_node("Gather", ["type_table", "token_type_ids"], ["type_vectors"]),
        helper.make_node("Add", ["token_vectors", "type_vectors"], ["hidden"]),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=tensor_proto.FLOAT),
        helper.make_node("Unsqueeze", ["mask", "axis_2"], ["mask3"]),
        helper.make_node("Mul", ["hidden", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis_1"], ["summed"], keepdims=0),
        helper.make_node("ReduceSum", ["mask3", "axis_1"], ["counts"], keepdims=0),
        helper.make_node("Max", ["counts", "count_floor"], ["safe_counts"]),
    ]
    if normalises:
        nodes.append(helper.make_node("Div", ["summed", "safe_counts"], ["mean"]))
        nodes.append(helper.make_node("LpNormalization", ["mean"], ["embeddings"], axis=1, p=2))
    else:
        nodes.append(helper.make_node("Div", ["summed", "safe_counts"], ["embeddings"]))
    token_axes = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "tiny_text",
        inputs=[
            helper.make_tensor_value_info(name, tensor_proto.INT64, token_axes)
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ],
        outputs=[
            helper.make_tensor_value_info("embeddings", tensor_proto.FLOAT, ["batch", TINY_DIM])
        ],
        initializer=[
            onnx.numpy_helper.from_array(weights.tokens, "token_table"),
            onnx.numpy_helper.from_array(weights.types, "type_table"),
            onnx.numpy_helper.from_array(np.array([1], dtype=np.int64), "axis_1"),
            onnx.numpy_helper.from_array(np.array([2], dtype=np.int64), "axis_2"),
            onnx.numpy_helper.from_array(np.array([1e-9], dtype=np.float32), "count_floor"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return weights


def make_tiny_variant(
    variant_dir: Path,
    *,
    normalised_graph: bool = True,
    manifest_dim: int = TINY_DIM,
    name: str = "tiny",
) -> TinyWeights:
    """Create a complete tiny variant folder (text.onnx, tokenizer.json, variant.json)."""
    variant_dir.mkdir(parents=True, exist_ok=True)
    weights = write_tiny_onnx(variant_dir / "text.onnx", normalises=normalised_graph)
    TextTokenizer(word_level_tokenizer(), TINY_MAX_TOKENS).save(variant_dir / "tokenizer.json")
    manifest = VariantManifest(
        name=name,
        towers=["text"],
        dim=manifest_dim,
        normalised=normalised_graph,
        precision="fp32",
        text=TextTower(max_tokens=TINY_MAX_TOKENS),
        files=sha256_files(variant_dir, ["text.onnx", "tokenizer.json"]),
        source_model=SourceModel(base_model="tests/tiny"),
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    write_variant_manifest(variant_dir, manifest)
    return weights
