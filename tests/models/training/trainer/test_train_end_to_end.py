"""A tiny training run end to end: it learns, exports a variant the serving classes load with
parity, and repeats bit for bit from the same seed."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="training needs the 'export' extra")

from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import load_variant_manifest, verify_variant_files
from training.parity.compare import ParityError
from training.trainer import cli
from training.trainer.corpus import load_images, read_split
from training.trainer.evaluation import embed_captions, embed_pixels
from training.trainer.export import MAX_VARIANT_BYTES, export_dual_encoder
from training.trainer.run import (
    TrainingOutcome,
    parity_images,
    parity_texts,
    train_variant,
)
from training.trainer.trainer import (
    TrainConfig,
)

# Small and quick: 32 x 32 inputs, 4 steps of 16 images per epoch.
TINY_FLAGS = (
    "--seed", "3", "--loss", "margin", "--t2t-weight", "0.5", "--epochs", "3",
    "--batch-size", "16", "--image-size", "32", "--monitor-images", "16", "--no-progress",
)  # fmt: skip


def _parse(data: Path, out: Path, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.add_train_command(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["train", "--data", str(data), "--out", str(out), *extra])


def _config(arguments: argparse.Namespace) -> TrainConfig:
    from training.trainer.losses import LossConfig

    return TrainConfig(
        data_dir=arguments.data,
        seed=arguments.seed,
        epochs=arguments.epochs,
        batch_size=arguments.batch_size,
        learning_rate=arguments.learning_rate,
        weight_decay=arguments.weight_decay,
        loss=LossConfig.preset(
            arguments.loss, t2t_weight=arguments.t2t_weight, margin=arguments.margin
        ),
        image_size=arguments.image_size,
        dim=arguments.dim,
        max_tokens=arguments.max_tokens,
        threads=arguments.threads,
        monitor_images=arguments.monitor_images,
        progress=False,
    )


@dataclass(frozen=True)
class TinyRun:
    outcome: TrainingOutcome
    variant_dir: Path
    data: Path


@pytest.fixture(scope="module")
def tiny_run(tiny_scenes: Path, tmp_path_factory: pytest.TempPathFactory) -> TinyRun:
    """One tiny run through the API, with every loss term on (eq. 1 + eq. 2 + margin)."""
    variant_dir = tmp_path_factory.mktemp("trained") / "tiny-dual"
    arguments = _parse(tiny_scenes, variant_dir, *TINY_FLAGS)
    outcome = train_variant(
        _config(arguments),
        variant_dir,
        name=arguments.name,
        command=cli.reproduce_command(arguments),
    )
    return TinyRun(outcome=outcome, variant_dir=variant_dir, data=tiny_scenes)


def test_loss_decreases(tiny_run: TinyRun) -> None:
    history = tiny_run.outcome.trained.history
    assert [record.epoch for record in history] == [1, 2, 3]
    assert history[-1].loss < history[0].loss
    assert history[-1].image_text_loss < history[0].image_text_loss
    # Both terms were on: the text-text term was computed and logged.
    assert all(record.text_text_loss > 0 for record in history)


def test_export_is_a_dual_tower_variant(tiny_run: TinyRun) -> None:
    manifest = load_variant_manifest(tiny_run.variant_dir)
    verify_variant_files(tiny_run.variant_dir, manifest)
    assert manifest.towers == ["text", "image"]
    assert manifest.normalised
    assert manifest.image is not None
    assert manifest.image.input_size == (32, 32)
    assert manifest.image == tiny_run.outcome.trained.image_tower
    assert manifest.text is not None
    assert manifest.text.max_tokens == 48
    assert set(manifest.files) == {"text.onnx", "image.onnx", "tokenizer.json", "training.json"}
    assert sum((tiny_run.variant_dir / f).stat().st_size for f in manifest.files) <= (
        MAX_VARIANT_BYTES
    )
    assert manifest.parity is not None
    assert manifest.parity.inputs >= 200
    assert manifest.parity.min_cosine >= 0.999
    assert "manifest.json sha256" in manifest.source_model.base_model
    record = json.loads((tiny_run.variant_dir / "training.json").read_text(encoding="utf-8"))
    assert record["config"]["seed"] == 3
    assert record["command"].startswith("python -m training train --data DATA --out OUT")
    assert "--loss margin" in record["command"]
    assert len(record["history"]) == 3
    assert set(record["evaluation"]) >= {"val", "test"}


def test_serving_classes_reproduce_the_torch_model(tiny_run: TinyRun) -> None:
    trained = tiny_run.outcome.trained
    text_encoder = OnnxTextEncoder(tiny_run.variant_dir, providers="cpu")
    image_encoder = OnnxImageEncoder(tiny_run.variant_dir, providers="cpu")
    assert text_encoder.fingerprint == image_encoder.fingerprint
    val = read_split(tiny_run.data, "val")
    texts = [*val.caption_texts[:40], "", "AN UNSEEN ZEBRA"]
    images = load_images(tiny_run.data, "val", val.filenames[:20])

    onnx_texts = text_encoder.encode_texts(texts)
    torch_texts = embed_captions(trained.model, trained.tokenizer.encode(texts))
    onnx_images = image_encoder.encode_images(images)
    from encoders.image_preprocess import preprocess_images

    torch_images = embed_pixels(trained.model, preprocess_images(images, trained.image_tower))
    for onnx_rows, torch_rows in ((onnx_texts, torch_texts), (onnx_images, torch_images)):
        assert onnx_rows.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(onnx_rows, axis=1), 1.0, atol=1e-5)
        assert np.einsum("ij,ij->i", onnx_rows, torch_rows).min() >= 0.999


def test_same_seed_same_variant_through_the_cli(tiny_run: TinyRun, tmp_path: Path) -> None:
    again = tmp_path / "again"
    arguments = _parse(tiny_run.data, again, *TINY_FLAGS)
    assert arguments.handler(arguments) == 0
    first = load_variant_manifest(tiny_run.variant_dir)
    second = load_variant_manifest(again)
    # Byte-identical ONNX graphs, tokenizer and training record: same weights, same history.
    assert second.files == first.files
    assert second.fingerprint == first.fingerprint


def test_another_seed_gives_other_weights(tiny_run: TinyRun, tmp_path: Path) -> None:
    flags = list(TINY_FLAGS)
    flags[flags.index("--seed") + 1] = "4"
    flags[flags.index("--epochs") + 1] = "1"
    other = tmp_path / "other"
    arguments = _parse(tiny_run.data, other, *flags)
    assert arguments.handler(arguments) == 0
    first = load_variant_manifest(tiny_run.variant_dir).files
    assert load_variant_manifest(other).files["image.onnx"] != first["image.onnx"]
    # The tokenizer depends on the captions only, not on the seed.
    assert load_variant_manifest(other).files["tokenizer.json"] == first["tokenizer.json"]


def test_failed_parity_publishes_nothing(tiny_run: TinyRun, tmp_path: Path) -> None:
    val = read_split(tiny_run.data, "val")
    out = tmp_path / "refused"
    with pytest.raises(ParityError):
        export_dual_encoder(
            tiny_run.outcome.trained,
            out,
            name="refused",
            training_record={},
            parity_texts=parity_texts(val),
            parity_images=parity_images(tiny_run.data, val),
            parity_threshold=1.5,
        )
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_is_kept_without_force(tiny_run: TinyRun) -> None:
    arguments = _parse(tiny_run.data, tiny_run.variant_dir, *TINY_FLAGS)
    with pytest.raises(FileExistsError):
        arguments.handler(arguments)
