"""Training the scenes dual encoder: data, the optimisation loop, per-epoch monitoring (the
embedding and evaluation it monitors with are :mod:`training.trainer.evaluation`).

One epoch visits every train image once, in an order drawn from the seed, each with one of its
captions drawn uniformly (and, for eq. 2, a second, different caption). Images are decoded and
preprocessed once, up front, with the serving code (``encoders.image_preprocess``), and captions
are tokenized once with the tokenizer the variant ships; a batch only gathers rows.

Defaults train in about four minutes on two CPU cores for the 20,000-image scenes train split.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import torch
from tqdm import tqdm

from encoders.image_preprocess import PixelBatch
from encoders.text_encoder import TextTokenizer, TokenBatch
from encoders.variant import ImageTower
from training.trainer.cider import CiderRelevance
from training.trainer.corpus import (
    CaptionedImages,
    channel_statistics,
    data_fingerprint,
    load_pixels,
    read_split,
)
from training.trainer.evaluation import embed_tokens, evaluate
from training.trainer.losses import (
    LossConfig,
    adaptive_margins,
    image_text_loss,
    text_text_loss,
)
from training.trainer.models import Architecture, DualEncoder
from training.trainer.reproducibility import deterministic_torch
from training.trainer.retrieval import Metrics
from training.trainer.word_tokenizer import build_word_tokenizer

DEFAULT_EPOCHS: Final = 8
DEFAULT_BATCH_SIZE: Final = 128
DEFAULT_LEARNING_RATE: Final = 1e-3
DEFAULT_WEIGHT_DECAY: Final = 0.05
DEFAULT_WARMUP_FRACTION: Final = 0.05
DEFAULT_IMAGE_SIZE: Final = 64
DEFAULT_DIM: Final = 128
# With [CLS], 48 tokens truncate 1 of the 100,000 default scenes train captions (49 words and
# punctuation marks; the next longest has 47).
DEFAULT_MAX_TOKENS: Final = 48
DEFAULT_THREADS: Final = 2
# Val images (with all their captions) behind the per-epoch R@1; the full split is evaluated once
# at the end.
DEFAULT_MONITOR_IMAGES: Final = 1000
# Train images whose pixels give the per-channel mean and std (a fixed prefix: deterministic).
STATISTICS_IMAGES: Final = 2000
# Length groups a training batch's captions are split into for the text tower (see
# _embed_caption_rows).
_LENGTH_GROUPS: Final = 4
# Separates the data-order stream from torch's weight initialisation, both drawn from one seed.
_DATA_ORDER_STREAM: Final = 1

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines the trained weights (with the data and the machine).

    ``train_images``: use only the first N train images (quick runs and tests; None = all).
    ``monitor_images``: val images behind the per-epoch R@1. ``threads``: torch intra-op threads,
    fixed for reproducibility.
    """

    data_dir: Path
    seed: int = 0
    epochs: int = DEFAULT_EPOCHS
    batch_size: int = DEFAULT_BATCH_SIZE
    learning_rate: float = DEFAULT_LEARNING_RATE
    weight_decay: float = DEFAULT_WEIGHT_DECAY
    warmup_fraction: float = DEFAULT_WARMUP_FRACTION
    loss: LossConfig = field(default_factory=LossConfig)
    image_size: int = DEFAULT_IMAGE_SIZE
    dim: int = DEFAULT_DIM
    max_tokens: int = DEFAULT_MAX_TOKENS
    threads: int = DEFAULT_THREADS
    train_images: int | None = None
    monitor_images: int = DEFAULT_MONITOR_IMAGES
    progress: bool = True

    def __post_init__(self) -> None:
        """Refuse values no run can use."""
        if self.epochs < 1 or self.batch_size < 2:
            raise ValueError(f"need epochs >= 1 and batch_size >= 2, got {self}")
        if self.learning_rate <= 0 or self.weight_decay < 0:
            raise ValueError("learning_rate must be > 0 and weight_decay >= 0")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction must be in [0, 1), got {self.warmup_fraction}")
        if self.train_images is not None and self.train_images < 2:
            raise ValueError(f"train_images must be >= 2, got {self.train_images}")
        if self.monitor_images < 1:
            raise ValueError(f"monitor_images must be >= 1, got {self.monitor_images}")

    def as_record(self) -> dict[str, object]:
        """The settings as a JSON-ready dict, without the data path (which says nothing about
        the data's content; ``data_fingerprint`` does) or the progress flag."""
        return {
            "seed": self.seed,
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "optimiser": "AdamW",
            "learning_rate": self.learning_rate,
            "weight_decay": self.weight_decay,
            "schedule": f"linear warm-up over {self.warmup_fraction:g} of the steps, then cosine "
            "decay to 0",
            "loss": {
                "t2t_weight": self.loss.t2t_weight,
                "margin": self.loss.margin,
                "description": self.loss.describe(),
            },
            "image_size": self.image_size,
            "dim": self.dim,
            "max_tokens": self.max_tokens,
            "threads": self.threads,
            "train_images": self.train_images,
            "monitor_images": self.monitor_images,
        }


@dataclass(frozen=True)
class EpochRecord:
    """One epoch: mean training loss (nats) per term, the scales, and the monitor R@1."""

    epoch: int
    loss: float
    image_text_loss: float
    text_text_loss: float
    logit_scale: float
    monitor_i2t_r1: float
    monitor_t2i_r1: float
    seconds: float

    def as_record(self) -> dict[str, float | int]:
        """JSON-ready, without the wall time (which differs between identical runs)."""
        return {
            "epoch": self.epoch,
            "loss": self.loss,
            "image_text_loss": self.image_text_loss,
            "text_text_loss": self.text_text_loss,
            "logit_scale": self.logit_scale,
            "monitor_i2t_R@1": self.monitor_i2t_r1,
            "monitor_t2i_R@1": self.monitor_t2i_r1,
        }


@dataclass(frozen=True)
class TrainedModel:
    """A trained model (in eval mode) with everything export and evaluation need."""

    model: DualEncoder
    tokenizer: TextTokenizer
    image_tower: ImageTower
    config: TrainConfig
    history: list[EpochRecord]
    data_fingerprint: str
    train_image_count: int
    train_caption_count: int
    seconds: float


def image_tower_for(
    image_size: int, mean: tuple[float, float, float], std: tuple[float, float, float]
) -> ImageTower:
    """The preprocessing the towers are trained with: scale the shorter side to ``image_size``
    (bilinear, antialiased), centre-crop a square, normalise per channel. For the square scenes
    images this is a plain resize; a non-square upload keeps its aspect ratio."""
    return ImageTower(
        onnx_file="image.onnx",
        height=image_size,
        width=image_size,
        resize="shorter_side",
        resize_to=image_size,
        interpolation="bilinear",
        crop="center",
        mean=mean,
        std=std,
    )


def train_dual_encoder(config: TrainConfig) -> TrainedModel:
    """Train both towers on ``<data_dir>``'s train split; returns the model in eval mode.

    Logs the mean loss and the monitor R@1 (i2t and t2i over the first ``monitor_images`` val
    images, original pairs) after every epoch. Raises ``CorpusError`` for a malformed corpus.
    """
    started = time.perf_counter()
    train_split = read_split(config.data_dir, "train")
    if config.train_images is not None:
        train_split = train_split.head(config.train_images)
    monitor_split = read_split(config.data_dir, "val").head(config.monitor_images)
    fingerprint = data_fingerprint(config.data_dir, "train")
    logger.info(
        "training on %d images / %d captions (%s); loss %s",
        train_split.image_count,
        train_split.caption_count,
        fingerprint,
        config.loss.describe(),
    )

    with deterministic_torch(config.seed, config.threads):
        built = build_word_tokenizer(train_split.caption_texts, max_tokens=config.max_tokens)
        tokenizer = built.tokenizer
        statistics_files = train_split.filenames[:STATISTICS_IMAGES]
        provisional = image_tower_for(config.image_size, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
        mean, std = channel_statistics(config.data_dir, "train", statistics_files, provisional)
        tower = image_tower_for(config.image_size, mean, std)
        logger.info("vocabulary %d words; pixel mean %s std %s", built.vocab_size, mean, std)

        train_pixels = load_pixels(
            config.data_dir, "train", train_split.filenames, tower, progress=config.progress
        )
        monitor_pixels = load_pixels(
            config.data_dir, "val", monitor_split.filenames, tower, progress=config.progress
        )
        train_tokens = tokenizer.encode(train_split.caption_texts)
        monitor_tokens = tokenizer.encode(monitor_split.caption_texts)
        relevance = CiderRelevance(train_split.captions) if config.loss.margin > 0 else None

        architecture = Architecture(
            vocab_size=built.vocab_size,
            max_tokens=config.max_tokens,
            dim=config.dim,
            image_size=config.image_size,
        )
        model = DualEncoder(architecture)
        history = _optimise(
            model,
            config,
            train_split,
            train_pixels,
            train_tokens,
            relevance,
            monitor=(monitor_split, monitor_pixels, monitor_tokens),
        )
    model.eval()
    return TrainedModel(
        model=model,
        tokenizer=tokenizer,
        image_tower=tower,
        config=config,
        history=history,
        data_fingerprint=fingerprint,
        train_image_count=train_split.image_count,
        train_caption_count=train_split.caption_count,
        seconds=time.perf_counter() - started,
    )


def _optimise(
    model: DualEncoder,
    config: TrainConfig,
    split: CaptionedImages,
    pixels: PixelBatch,
    tokens: TokenBatch,
    relevance: CiderRelevance | None,
    *,
    monitor: tuple[CaptionedImages, PixelBatch, TokenBatch],
) -> list[EpochRecord]:
    """The training loop; returns one record per epoch."""
    batch_size = min(config.batch_size, split.image_count)
    # drop_last: every step sees a full batch, so every softmax has as many negatives.
    steps_per_epoch = split.image_count // batch_size
    total_steps = steps_per_epoch * config.epochs
    optimiser = torch.optim.AdamW(
        _parameter_groups(model, config.weight_decay), lr=config.learning_rate
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, _warmup_cosine(total_steps, config.warmup_fraction)
    )
    rng = np.random.default_rng([config.seed, _DATA_ORDER_STREAM])
    offsets = split.caption_offsets()
    counts = np.diff(offsets)
    history: list[EpochRecord] = []
    for epoch in range(1, config.epochs + 1):
        epoch_started = time.perf_counter()
        model.train()
        order = rng.permutation(split.image_count)
        first = offsets[:-1] + rng.integers(0, counts)
        # A different caption of the same image: shift by 1..count-1 (itself when it has one).
        shift = rng.integers(1, np.maximum(counts, 2))
        second = offsets[:-1] + (first - offsets[:-1] + shift) % counts
        totals = np.zeros(3, dtype=np.float64)
        with tqdm(
            total=steps_per_epoch,
            desc=f"epoch {epoch}/{config.epochs}",
            unit="step",
            disable=not config.progress,
        ) as bar:
            for step in range(steps_per_epoch):
                images = order[step * batch_size : (step + 1) * batch_size]
                terms = _train_step(
                    model, config.loss, pixels, tokens, relevance, images, first, second
                )
                optimiser.zero_grad(set_to_none=True)
                torch.autograd.backward(terms[0])
                optimiser.step()
                schedule.step()
                totals += [float(term.detach()) for term in terms]
                bar.update(1)
                bar.set_postfix(loss=f"{totals[0] / (step + 1):.3f}")
        means = totals / steps_per_epoch
        monitored = evaluate(model, *monitor, include_t2t=False)
        record = EpochRecord(
            epoch=epoch,
            loss=round(float(means[0]), 6),
            image_text_loss=round(float(means[1]), 6),
            text_text_loss=round(float(means[2]), 6),
            logit_scale=round(float(model.logit_scale().detach()), 4),
            monitor_i2t_r1=monitored["i2t"]["R@1"],
            monitor_t2i_r1=monitored["t2i"]["R@1"],
            seconds=round(time.perf_counter() - epoch_started, 1),
        )
        history.append(record)
        logger.info(
            "epoch %d/%d: loss %.4f (image-text %.4f, text-text %.4f), scale %.1f, "
            "val[%d images] R@1 i2t %.3f t2i %.3f, %.1f s",
            epoch,
            config.epochs,
            record.loss,
            record.image_text_loss,
            record.text_text_loss,
            record.logit_scale,
            monitor[0].image_count,
            record.monitor_i2t_r1,
            record.monitor_t2i_r1,
            record.seconds,
        )
    return history


def _train_step(
    model: DualEncoder,
    loss: LossConfig,
    pixels: PixelBatch,
    tokens: TokenBatch,
    relevance: CiderRelevance | None,
    images: npt.NDArray[np.int64],
    first: npt.NDArray[np.int64],
    second: npt.NDArray[np.int64],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One batch's loss: ``(total, eq. 1 part, eq. 2 part)``, scalar tensors, total with grad."""
    captions = first[images]
    image_embeddings = model.image(torch.from_numpy(pixels[images]))
    text_embeddings = _embed_caption_rows(model, tokens, captions)
    margins = None
    if relevance is not None:
        phi = CiderRelevance.phi(
            relevance.reference_vectors[captions], relevance.reference_centroids[images]
        )
        margins = adaptive_margins(torch.from_numpy(phi), loss.margin)
    image_text = image_text_loss(image_embeddings, text_embeddings, model.logit_scale(), margins)
    text_text = torch.zeros(())
    if loss.t2t_weight > 0:
        co_embeddings = _embed_caption_rows(model, tokens, second[images])
        text_text = text_text_loss(text_embeddings, co_embeddings, model.t2t_logit_scale())
    total = image_text + loss.t2t_weight * text_text
    return total, image_text.detach(), text_text.detach()


def _embed_caption_rows(
    model: DualEncoder, tokens: TokenBatch, rows: npt.NDArray[np.int64]
) -> torch.Tensor:
    """The text tower on ``tokens``' ``rows``, in that order: float32 ``[len(rows), dim]``.

    Rows are run in ``_LENGTH_GROUPS`` groups of similar token count, each padded only to its own
    longest row: a batch padded as a whole to its longest caption (about 40 tokens for a 16-token
    average) spends most of the tower's time on padding. The tower ignores padding, so the result
    is the same embedding whatever the grouping; autograd follows the gather and scatter.
    """
    by_length = np.argsort(tokens.lengths[rows], kind="stable")
    groups = np.array_split(by_length, min(_LENGTH_GROUPS, len(rows)))
    embedded = torch.cat([embed_tokens(model, tokens.take(rows[group])) for group in groups])
    # embedded[k] embeds rows[by_length[k]]; invert that permutation.
    inverse = np.empty_like(by_length)
    inverse[by_length] = np.arange(len(by_length))
    return embedded[torch.from_numpy(inverse)]


def _parameter_groups(model: DualEncoder, weight_decay: float) -> list[dict[str, object]]:
    """AdamW groups: weight decay on matrices and kernels only, none on biases, norms, scales."""
    decayed = [p for p in model.parameters() if p.ndim >= 2]
    others = [p for p in model.parameters() if p.ndim < 2]
    return [
        {"params": decayed, "weight_decay": weight_decay},
        {"params": others, "weight_decay": 0.0},
    ]


@dataclass(frozen=True)
class _Schedule:
    """A picklable learning-rate factor function (``LambdaLR`` calls it with the step)."""

    total_steps: int
    warmup_steps: int

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        progress = (step - self.warmup_steps) / max(1, self.total_steps - self.warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def _warmup_cosine(total_steps: int, warmup_fraction: float) -> _Schedule:
    """Learning-rate factor per step: linear from 1/w up to 1 over w steps, then cosine to 0."""
    return _Schedule(total_steps, max(1, round(total_steps * warmup_fraction)))


def evaluate_split(
    trained: TrainedModel, split_name: str, *, progress: bool = False
) -> dict[str, Metrics]:
    """Full in-memory metrics of a trained model on ``split_name`` of its data folder."""
    split = read_split(trained.config.data_dir, split_name)
    pixels = load_pixels(
        trained.config.data_dir, split_name, split.filenames, trained.image_tower, progress=progress
    )
    tokens = trained.tokenizer.encode(split.caption_texts)
    return evaluate(trained.model, split, pixels, tokens)
