"""Embedding whole splits with a dual encoder in eval mode, and its in-memory metrics."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="training needs the 'export' extra")

from encoders.text_encoder import TokenBatch  # noqa: E402
from training.trainer.corpus import CaptionedImages  # noqa: E402
from training.trainer.evaluation import embed_captions, embed_pixels, evaluate  # noqa: E402
from training.trainer.models import Architecture, DualEncoder  # noqa: E402
from training.trainer.word_tokenizer import build_word_tokenizer  # noqa: E402

TEXTS = ["a red circle", "a blue square", "a small red circle", "two green triangles", "a"]


@pytest.fixture(scope="module")
def model_and_tokens() -> tuple[DualEncoder, TokenBatch]:
    built = build_word_tokenizer(TEXTS, max_tokens=8)
    torch.manual_seed(0)
    architecture = Architecture(
        vocab_size=built.vocab_size, max_tokens=8, dim=16, image_size=16,
        image_channels=(4, 4, 4, 4), text_width=16, text_layers=1, text_heads=2, text_ffn=16,
    )  # fmt: skip
    return DualEncoder(architecture), built.tokenizer.encode(TEXTS)


def test_embeddings_are_unit_rows_whatever_the_batch_size(
    model_and_tokens: tuple[DualEncoder, TokenBatch],
) -> None:
    model, tokens = model_and_tokens
    texts = embed_captions(model, tokens)
    assert texts.shape == (5, 16)
    assert texts.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(texts, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(embed_captions(model, tokens, batch_size=2), texts, atol=1e-6)
    pixels = np.random.default_rng(0).standard_normal((3, 3, 16, 16)).astype(np.float32)
    images = embed_pixels(model, pixels)
    assert images.shape == (3, 16)
    np.testing.assert_allclose(embed_pixels(model, pixels, batch_size=1), images, atol=1e-5)
    assert embed_pixels(model, pixels[:0]).shape == (0, 16)


def test_evaluate_reports_every_task(model_and_tokens: tuple[DualEncoder, TokenBatch]) -> None:
    model, tokens = model_and_tokens
    split = CaptionedImages(
        split="val",
        filenames=("a.png", "b.png"),
        captions=(("a red circle", "a blue square", "a small red circle"), ("x", "y")),
        caption_texts=tuple(TEXTS),
        caption_keys=tuple(f"k:{i}" for i in range(5)),
        caption_image=np.array([0, 0, 0, 1, 1], dtype=np.int64),
    )
    pixels = np.zeros((2, 3, 16, 16), dtype=np.float32)
    metrics = evaluate(model, split, pixels, tokens)
    assert set(metrics) == {"i2t", "t2i", "t2t"}
    assert metrics["t2i"]["queries"] == 5
    assert set(evaluate(model, split, pixels, tokens, include_t2t=False)) == {"i2t", "t2i"}
