"""The parity texts: a fixed, varied set; real captions read through the shared reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.errors import FormatError
from formats.karpathy import CaptionRecord, write_captions
from training.parity.texts import caption_texts, parity_texts


def test_the_set_is_fixed_per_seed_and_covers_the_corners() -> None:
    texts = parity_texts()
    assert texts == parity_texts()
    assert texts != parity_texts(seed=1)
    assert len(texts) >= 100
    assert "" in texts
    assert any(len(text.split()) > 300 for text in texts)
    assert any(not text.isascii() for text in texts)


def test_caption_texts_are_the_first_rows_text_column(tmp_path: Path) -> None:
    path = tmp_path / "captions.csv"
    records = [
        CaptionRecord(i, f"k:{i}", i, f"{i}.jpg", i, 0, f"text {i}", f"raw\n{i}", i)
        for i in range(5)
    ]
    write_captions(path, records)
    assert caption_texts(path, 3) == ["text 0", "text 1", "text 2"]
    assert caption_texts(path, 50) == [f"text {i}" for i in range(5)]


def test_a_file_without_the_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "captions.csv"
    path.write_text("sentid,caption\n1,a dog\n", encoding="utf-8")
    with pytest.raises(FormatError, match="missing column"):
        caption_texts(path, 1)
