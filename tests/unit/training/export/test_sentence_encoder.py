"""Exporting a sentence-transformers mean-pooling model: the pooled graph, which token tensors it
takes, the refusals, and the whole export with its parity check on tiny random BERT and MPNet
folders made here (the real models: tests/models/training/export/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

for _module in ("torch", "transformers", "sentence_transformers", "onnx"):
    pytest.importorskip(_module, reason="export needs the 'export' extra")

import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors  # noqa: E402
from transformers import BertConfig, BertModel, MPNetConfig, MPNetModel  # noqa: E402

from encoders.text_encoder import OnnxTextEncoder  # noqa: E402
from encoders.variant import load_variant_manifest, verify_variant_files  # noqa: E402
from training.export.sentence_encoder import (  # noqa: E402
    MeanPooledSentenceEncoder,
    SentenceModel,
    export_sentence_encoder,
    graph_input_names,
    read_max_seq_length,
    require_mean_pooling,
)
from training.parity.compare import ParityError  # noqa: E402

WORDS = ("a", "the", "dog", "cat", "on", "couch", "sky", "red", "runs", "park", "two", "ball")
HIDDEN = 16
MAX_SEQ_LENGTH = 12


class _LastHidden(torch.nn.Module):
    """Stands in for a transformer: hidden state = input id (+ 100 x token type) on every unit."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[set[str]] = []

    def forward(self, **inputs: torch.Tensor) -> Any:
        self.calls.append(set(inputs))
        values = inputs["input_ids"].to(torch.float32)
        if "token_type_ids" in inputs:
            values = values + 100 * inputs["token_type_ids"]
        hidden = values.unsqueeze(-1).expand(-1, -1, 3)

        class Output:
            last_hidden_state = hidden

        return Output()


def test_the_pooled_graph_is_a_masked_mean_made_unit_length() -> None:
    transformer = _LastHidden()
    module = MeanPooledSentenceEncoder(transformer)
    ids = torch.tensor([[2, 4, 0], [3, 0, 0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    pooled = module(ids, mask)
    expected = torch.full((2, 3), 1 / np.sqrt(3))  # every unit equal, then normalised
    torch.testing.assert_close(pooled, expected)
    assert transformer.calls == [{"input_ids", "attention_mask"}]

    module(ids, mask, torch.zeros_like(ids))
    assert transformer.calls[-1] == {"input_ids", "attention_mask", "token_type_ids"}


def test_token_type_ids_are_an_input_only_where_the_transformer_takes_them() -> None:
    bert = BertModel(_bert_config())
    mpnet = MPNetModel(_mpnet_config())
    assert graph_input_names(bert) == ("input_ids", "attention_mask", "token_type_ids")
    assert graph_input_names(mpnet) == ("input_ids", "attention_mask")


def test_pooling_other_than_plain_mean_is_refused(tmp_path: Path) -> None:
    _write_pooling(tmp_path, pooling_mode_mean_tokens=True)
    require_mean_pooling(tmp_path)
    _write_pooling(tmp_path, pooling_mode_cls_token=True)
    with pytest.raises(ValueError, match="only handles mean pooling"):
        require_mean_pooling(tmp_path)
    _write_pooling(tmp_path, pooling_mode_mean_tokens=True, pooling_mode_max_tokens=True)
    with pytest.raises(ValueError, match="only handles mean pooling"):
        require_mean_pooling(tmp_path)


def test_max_seq_length_is_read_from_the_sentence_bert_config(tmp_path: Path) -> None:
    (tmp_path / "sentence_bert_config.json").write_text('{"max_seq_length": 384}')
    assert read_max_seq_length(tmp_path) == 384


@pytest.mark.slow  # 2-3 s each: tracing, onnxruntime and sentence-transformers
@pytest.mark.parametrize("kind", ["bert", "mpnet"])
def test_a_tiny_model_exports_with_parity_through_the_serving_path(
    tmp_path: Path, kind: str
) -> None:
    model_dir = _write_tiny_sentence_model(tmp_path / "model", kind)
    out = tmp_path / "variant"
    manifest = export_sentence_encoder(
        model_dir,
        out,
        SentenceModel(base_model=f"tiny-{kind}", package="none", package_version="0", dim=HIDDEN),
        name=f"tiny-{kind}",
    )
    verify_variant_files(out, load_variant_manifest(out))
    assert (manifest.name, manifest.dim, manifest.towers) == (f"tiny-{kind}", HIDDEN, ["text"])
    assert manifest.text is not None
    assert manifest.text.max_tokens == MAX_SEQ_LENGTH
    assert manifest.source_model.base_model == f"tiny-{kind}"
    assert manifest.parity is not None
    assert manifest.parity.status == "passed"
    assert manifest.parity.min_cosine >= 0.999
    assert "SentenceTransformer(none)" in manifest.parity.reference

    session = ort.InferenceSession(str(out / "text.onnx"), providers=["CPUExecutionProvider"])
    names = [node.name for node in session.get_inputs()]
    expected = ["input_ids", "attention_mask"] + (["token_type_ids"] if kind == "bert" else [])
    assert names == expected
    embeddings = OnnxTextEncoder(out, providers="cpu").encode_texts(["a red dog", "the sky"])
    assert embeddings.shape == (2, HIDDEN)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-5)


@pytest.mark.slow
def test_failed_parity_publishes_nothing(tmp_path: Path) -> None:
    model_dir = _write_tiny_sentence_model(tmp_path / "model", "mpnet")
    with pytest.raises(ParityError, match="parity failed"):
        export_sentence_encoder(
            model_dir,
            tmp_path / "variants" / "never",
            SentenceModel(base_model="tiny", package="none", package_version="0", dim=HIDDEN),
            name="never",
            parity_threshold=1.5,  # unreachable: cosines are at most 1
        )
    assert list((tmp_path / "variants").iterdir()) == []


def _bert_config() -> BertConfig:
    return BertConfig(
        vocab_size=len(WORDS) + 5, hidden_size=HIDDEN, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=32, max_position_embeddings=MAX_SEQ_LENGTH + 4,
    )  # fmt: skip


def _mpnet_config() -> MPNetConfig:
    # MPNet numbers positions from pad_token_id + 1, so it needs two positions more than tokens.
    return MPNetConfig(
        vocab_size=len(WORDS) + 5, hidden_size=HIDDEN, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=32, max_position_embeddings=MAX_SEQ_LENGTH + 4,
        pad_token_id=1, bos_token_id=0, eos_token_id=2,
    )  # fmt: skip


def _write_pooling(folder: Path, **modes: bool) -> None:
    (folder / "1_Pooling").mkdir(exist_ok=True)
    config = {"word_embedding_dimension": HIDDEN} | modes
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(config))


def _tokenizer(kind: str) -> Tokenizer:
    """A word-level tokenizer with BERT's or MPNet's special tokens and padding settings."""
    if kind == "bert":
        special = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
        start, end, pad = "[CLS]", "[SEP]", "[PAD]"
    else:
        special = {"<s>": 0, "<pad>": 1, "</s>": 2, "[UNK]": 3, "<mask>": 4}
        start, end, pad = "<s>", "</s>", "<pad>"
    vocab = special | {word: index + len(special) for index, word in enumerate(WORDS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{start} $A {end}",
        pair=f"{start} $A {end} $B:1 {end}:1",
        special_tokens=[(start, vocab[start]), (end, vocab[end])],
    )
    tokenizer.enable_padding(pad_id=vocab[pad], pad_token=pad)
    return tokenizer


def _write_tiny_sentence_model(folder: Path, kind: str) -> Path:
    """A sentence-transformers folder (Transformer → mean Pooling → Normalize), random weights."""
    torch.manual_seed(0)
    model = BertModel(_bert_config()) if kind == "bert" else MPNetModel(_mpnet_config())
    model.save_pretrained(folder)
    tokenizer = _tokenizer(kind)
    tokenizer.save(str(folder / "tokenizer.json"))
    special = ("[CLS]", "[SEP]", "[PAD]") if kind == "bert" else ("<s>", "</s>", "<pad>")
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "cls_token": special[0], "sep_token": special[1], "pad_token": special[2],
                "unk_token": "[UNK]", "model_max_length": MAX_SEQ_LENGTH,
            }
        )
    )  # fmt: skip
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False})
    )
    _write_pooling(folder, pooling_mode_mean_tokens=True)
    steps = (("", "Transformer"), ("1_Pooling", "Pooling"), ("2_Normalize", "Normalize"))
    modules = [
        {"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
        for i, (path, kind) in enumerate(steps)
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    return folder
