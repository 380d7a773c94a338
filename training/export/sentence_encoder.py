"""Export a sentence-transformers model folder whose pipeline is Transformer → mean Pooling →
Normalize to a text-only fp32 variant, and check it against sentence-transformers before
publishing it. Shared by :mod:`~training.export.minilm` and :mod:`~training.export.mpnet`.

``text.onnx`` holds the whole sentence-transformers pipeline: the transformer, attention-masked
mean pooling and L2 normalisation. Inputs: ``input_ids`` and ``attention_mask``, plus
``token_type_ids`` where the transformer takes them (BERT does, MPNet does not), each int64
``[batch, seq]`` with both axes dynamic; output ``embeddings``: float32 ``[batch, dim]``.

Needs the ``export`` extra (torch, transformers, sentence-transformers). The model folder is read
from local disk only; nothing is fetched from a hub.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Final

import numpy as np
import torch
import transformers
from sentence_transformers import SentenceTransformer
from transformers import AutoModel

from encoders.text_encoder import OnnxTextEncoder, TextTokenizer
from encoders.variant import (
    ParityReport,
    SourceModel,
    TextTower,
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
from training.parity.texts import parity_texts
from training.staging import staged_directory

DEFAULT_OPSET: Final = 17
TEXT_ONNX: Final = "text.onnx"
TOKENIZER_JSON: Final = "tokenizer.json"
OUTPUT_NAME: Final = "embeddings"
# Example inputs for tracing: two rows of different length, so the traced graph takes the
# attention-mask path that padded batches need.
_TRACE_TEXTS: Final = ("a dog sitting on a wooden bench in the park", "a cat")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SentenceModel:
    """What is exported: the model's id, the pip package(s) that carried it, its output size."""

    base_model: str
    package: str
    package_version: str
    dim: int


class MeanPooledSentenceEncoder(torch.nn.Module):
    """Transformer → attention-masked mean of the last hidden states → L2 normalisation.

    The same computation as sentence-transformers' Transformer → Pooling(mean) → Normalize.
    """

    def __init__(self, transformer: torch.nn.Module) -> None:
        """Wrap a Hugging Face encoder (``BertModel``, ``MPNetModel``, ...) that returns
        ``last_hidden_state``."""
        super().__init__()
        self.transformer = transformer

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """int64 ``[b, L]`` ×2 (×3 with ``token_type_ids``) → float32 ``[b, hidden]``
        unit-length embeddings."""
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        hidden = self.transformer(**inputs).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        summed = (hidden * mask).sum(dim=1)
        # sentence-transformers clamps the count at 1e-9; keep it identical for parity.
        counts = mask.sum(dim=1).clamp(min=1e-9)
        return torch.nn.functional.normalize(summed / counts, p=2.0, dim=1)


def export_sentence_encoder(
    model_dir: Path,
    out_dir: Path,
    model: SentenceModel,
    *,
    name: str,
    overwrite: bool = False,
    parity_threshold: float = DEFAULT_PARITY_THRESHOLD,
    opset: int = DEFAULT_OPSET,
) -> VariantManifest:
    """Export the sentence-transformers folder ``model_dir`` into the variant folder ``out_dir``.

    The folder is built in a staging folder beside ``out_dir`` and renamed into place only after
    the parity check passes: the ONNX variant (run through ``OnnxTextEncoder`` exactly as served)
    must reach cosine ≥ ``parity_threshold`` against ``SentenceTransformer.encode(...,
    normalize_embeddings=True)`` on every text of ``parity_texts()``. Raises ``ParityError`` (and
    writes nothing) when it does not, ``FileExistsError`` when ``out_dir`` exists and not
    ``overwrite``, ``ValueError`` when the folder's pooling is not plain mean pooling.
    """
    started = time.perf_counter()
    max_tokens = read_max_seq_length(model_dir)
    require_mean_pooling(model_dir)
    logger.info("exporting %s from %s (max_tokens %d)", model.base_model, model_dir, max_tokens)

    with staged_directory(out_dir, overwrite=overwrite) as staging:
        tokenizer = TextTokenizer.from_file(model_dir / TOKENIZER_JSON, max_tokens)
        tokenizer.save(staging / TOKENIZER_JSON)
        _export_onnx(model_dir, tokenizer, staging / TEXT_ONNX, opset)
        logger.info("wrote %s (%.1f MB)", TEXT_ONNX, (staging / TEXT_ONNX).stat().st_size / 1e6)

        manifest = VariantManifest(
            name=name,
            towers=["text"],
            dim=model.dim,
            normalised=True,
            precision="fp32",
            text=TextTower(
                onnx_file=TEXT_ONNX, tokenizer_file=TOKENIZER_JSON, max_tokens=max_tokens
            ),
            files=sha256_files(staging, [TEXT_ONNX, TOKENIZER_JSON]),
            source_model=SourceModel(
                base_model=model.base_model,
                package=model.package,
                package_version=model.package_version,
                exporter=(
                    f"torch {torch.__version__} torch.onnx.export (TorchScript, dynamo=False), "
                    f"opset {opset}, transformers {transformers.__version__}"
                ),
            ),
            created_at=datetime.now(UTC),
        )
        # Parity runs on the staged folder through the serving code path, so the check also
        # covers the saved tokenizer.json, the manifest and the encoder's batching.
        write_variant_manifest(staging, manifest)
        report = _measure_parity(staging, model_dir, model.package, parity_threshold)
        log_parity(report, "text")
        check_parity(report)
        manifest = manifest.model_copy(update={"parity": report})
        write_variant_manifest(staging, manifest)

    log_exported(manifest, out_dir, started)
    return manifest


def read_max_seq_length(model_dir: Path) -> int:
    """sentence-transformers' ``max_seq_length``, the length the model was tuned at."""
    config = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
    return int(config["max_seq_length"])


def require_mean_pooling(model_dir: Path) -> None:
    """Refuse a folder whose pooling is not plain mean pooling, which the graph hard-codes."""
    config = json.loads((model_dir / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    modes = {key: value for key, value in config.items() if key.startswith("pooling_mode_")}
    if (
        modes.get("pooling_mode_mean_tokens") is not True
        or sum(bool(v) for v in modes.values()) != 1
    ):
        raise ValueError(f"{model_dir} pooling is {modes}; this exporter only handles mean pooling")


def graph_input_names(transformer: torch.nn.Module) -> tuple[str, ...]:
    """The token tensors the graph takes: ``token_type_ids`` only where ``forward`` names it."""
    parameters = inspect.signature(transformer.forward).parameters
    if "token_type_ids" in parameters:
        return ("input_ids", "attention_mask", "token_type_ids")
    return ("input_ids", "attention_mask")


def _export_onnx(model_dir: Path, tokenizer: TextTokenizer, onnx_path: Path, opset: int) -> None:
    """Trace transformer + mean pooling + normalisation to ``onnx_path`` (dynamic batch, length)."""
    started = time.perf_counter()
    # Eager attention traces to plain MatMul/Softmax ops that every onnxruntime provider runs.
    transformer = AutoModel.from_pretrained(
        str(model_dir), local_files_only=True, attn_implementation="eager"
    )
    module = MeanPooledSentenceEncoder(transformer).eval()
    input_names = graph_input_names(transformer)
    example = tokenizer.encode(list(_TRACE_TEXTS))
    example_inputs = tuple(
        torch.from_numpy(tensor) for tensor in example.as_feed(input_names).values()
    )
    dynamic_axes = {name: {0: "batch", 1: "sequence"} for name in input_names}
    dynamic_axes[OUTPUT_NAME] = {0: "batch"}
    with warnings.catch_warnings():
        _ignore_known_export_warnings()
        export_tower(
            module, example_inputs, onnx_path, input_names, OUTPUT_NAME, dynamic_axes, opset
        )
    logger.info("traced and exported the ONNX graph in %.1f s", time.perf_counter() - started)


def _ignore_known_export_warnings() -> None:
    """Silence the warnings this export is known to raise and that are harmless for it.

    Call inside ``warnings.catch_warnings()``; each filter matches one message.
    """
    # (export_tower silences the TorchScript exporter's deprecation; for MiniLM it exports in a
    # third of dynamo's time, about 3 s vs 10 s, to a graph onnxruntime runs as fast.)
    # transformers checks whether the mask needs padding to the key length; for an encoder both
    # are the sequence length, so the traced answer (no padding) holds for every input shape.
    # TracerWarning is not re-exported by torch.jit's stubs, hence the lookup by attribute.
    tracer_warning: type[Warning] = torch.jit.TracerWarning  # type: ignore[attr-defined]
    warnings.filterwarnings(
        "ignore", message="Converting a tensor to a Python boolean", category=tracer_warning
    )
    # Mask indexing uses arange-built, non-negative indices, the case this warning says is fine.
    warnings.filterwarnings(
        "ignore",
        message="Exporting aten::index operator of advanced indexing",
        category=UserWarning,
    )


def _measure_parity(
    variant_dir: Path, model_dir: Path, package: str, threshold: float
) -> ParityReport:
    """Embed ``parity_texts()`` with the staged variant and with sentence-transformers; compare."""
    texts = parity_texts()
    encoder = OnnxTextEncoder(variant_dir, providers="cpu")
    candidate = encoder.encode_texts(texts)
    reference_model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    expected = np.asarray(
        reference_model.encode(
            texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        ),
        dtype=np.float32,
    )  # fmt: skip
    return compare_embeddings(
        candidate,
        expected,
        texts,
        reference_name=f"sentence-transformers {metadata.version('sentence-transformers')} "
        f"SentenceTransformer({package}).encode(normalize_embeddings=True), torch CPU",
        threshold=threshold,
    )
