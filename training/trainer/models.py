"""The two towers of the scenes dual encoder, small enough to train on two CPU cores.

Both end in an L2 normalisation, so the exported graphs give unit rows and a dot product is a
cosine. Every operation exports to plain ONNX (opset 17) with dynamic batch and sequence axes:
the attention is written out rather than taken from ``torch.nn.MultiheadAttention``, whose
inference fast path does not trace, and positions come from a cumulative sum of the mask shape
rather than a Python-int slice, which a trace would freeze.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from typing import Final

import torch
import torch.nn.functional as functional
from torch import nn

# Added to attention logits of padding keys: far below any real logit, yet finite, so a softmax
# over a row never sees only -inf (which would give NaN).
_MASKED_LOGIT: Final = -1e9
_NORM_EPS: Final = 1e-12
# CLIP's initial temperature 0.07, and its cap on the scale (temperature ≥ 0.01).
INITIAL_LOGIT_SCALE: Final = 1.0 / 0.07
MAX_LOGIT_SCALE: Final = 100.0


@dataclass(frozen=True)
class Architecture:
    """Sizes of the two towers; recorded in ``training.json``.

    ``image_size``: input height = width in pixels (a multiple of 16: a stride-2 stem and three
    2x max pools leave an ``image_size / 16`` square grid). ``image_channels``: channels of the
    stem and of the three later stages. ``text_*``: the transformer's width, depth, heads and
    feed-forward width. ``dim``: the shared embedding dimension. ``vocab_size`` and
    ``max_tokens`` come from the tokenizer.
    """

    vocab_size: int
    max_tokens: int
    dim: int = 128
    image_size: int = 64
    image_channels: tuple[int, int, int, int] = (32, 64, 128, 256)
    text_width: int = 128
    text_layers: int = 2
    text_heads: int = 4
    text_ffn: int = 256

    def __post_init__(self) -> None:
        """Refuse sizes the towers cannot be built with."""
        if self.image_size % 16 != 0 or self.image_size < 16:
            raise ValueError(f"image_size must be a positive multiple of 16, got {self.image_size}")
        if self.text_width % self.text_heads != 0:
            raise ValueError(
                f"text_width {self.text_width} is not divisible by {self.text_heads} heads"
            )
        if min(self.vocab_size, self.max_tokens, self.dim, self.text_layers) < 1:
            raise ValueError(f"sizes must be positive: {self}")

    def as_record(self) -> dict[str, object]:
        """The sizes as a JSON-ready dict."""
        record = asdict(self)
        record["image_channels"] = list(self.image_channels)
        return record


def _conv_block(inputs: int, outputs: int, stride: int) -> list[nn.Module]:
    """3x3 convolution (no bias: BatchNorm adds one) → BatchNorm → ReLU."""
    return [
        nn.Conv2d(inputs, outputs, kernel_size=3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(outputs),
        nn.ReLU(inplace=True),
    ]


class ImageTowerNet(nn.Module):
    """A small CNN: pixels float32 ``[n, 3, S, S]`` (preprocessed per the variant's
    ``ImageTower``) → float32 ``[n, dim]`` unit rows.

    Stem 3x3/2 conv, then three stages of 2x max pool + 3x3 conv, each conv with BatchNorm and
    ReLU. The last stage also sees two coordinate channels (x and y in [-1, 1], "CoordConv"), so
    its units can respond to *where* something is ("at the top", "on the left") although the
    grid is then pooled globally. Pooling concatenates the average (how much of a colour or
    texture there is) and the maximum (whether a small object is present anywhere) of each
    channel; a linear layer projects them to ``dim``.
    """

    coordinates: torch.Tensor

    def __init__(self, architecture: Architecture) -> None:
        """Build the layers for ``architecture`` (weights initialised from torch's global RNG)."""
        super().__init__()
        channels = architecture.image_channels
        layers = _conv_block(3, channels[0], stride=2)
        for inputs, outputs in itertools.pairwise(channels[:-1]):
            layers += [nn.MaxPool2d(2), *_conv_block(inputs, outputs, stride=1)]
        layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.last_stage = nn.Sequential(*_conv_block(channels[-2] + 2, channels[-1], stride=1))
        grid = architecture.image_size // 16
        axis = torch.linspace(-1.0, 1.0, grid)
        # [1, 2, grid, grid]: channel 0 is x (varies along width), channel 1 is y.
        coordinates = torch.stack(torch.meshgrid(axis, axis, indexing="xy")).unsqueeze(0)
        self.register_buffer("coordinates", coordinates, persistent=False)
        self.projection = nn.Linear(2 * channels[-1], architecture.dim)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """float32 ``[n, 3, S, S]`` → float32 ``[n, dim]``, L2-normalised."""
        features = self.features(pixel_values)
        coordinates = self.coordinates.expand(features.shape[0], -1, -1, -1)
        features = self.last_stage(torch.cat([features, coordinates], dim=1))
        pooled = torch.cat([features.mean(dim=(2, 3)), features.amax(dim=(2, 3))], dim=1)
        return functional.normalize(self.projection(pooled), p=2.0, dim=1, eps=_NORM_EPS)


class _SelfAttention(nn.Module):
    """Multi-head scaled dot-product self-attention with a key padding mask."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_width = width // heads
        self.qkv = nn.Linear(width, 3 * width)
        self.output = nn.Linear(width, width)

    def forward(self, hidden: torch.Tensor, key_bias: torch.Tensor) -> torch.Tensor:
        """``hidden`` float ``[n, L, w]``; ``key_bias`` float ``[n, 1, 1, L]`` (0 for tokens,
        a large negative for padding) → float ``[n, L, w]``."""
        # [n, L, 3, heads, head_width] → three [n, heads, L, head_width]; unflatten keeps n and L
        # symbolic in the exported graph.
        qkv = self.qkv(hidden).unflatten(-1, (3, self.heads, self.head_width))
        query, key, value = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        logits = (query @ key.transpose(-1, -2)) / math.sqrt(self.head_width) + key_bias
        attended = logits.softmax(dim=-1) @ value
        output: torch.Tensor = self.output(attended.transpose(1, 2).flatten(2))
        return output


class _TransformerBlock(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, width: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(width)
        self.attention = _SelfAttention(width, heads)
        self.ffn_norm = nn.LayerNorm(width)
        self.ffn = nn.Sequential(nn.Linear(width, ffn), nn.GELU(), nn.Linear(ffn, width))

    def forward(self, hidden: torch.Tensor, key_bias: torch.Tensor) -> torch.Tensor:
        """float ``[n, L, w]`` → float ``[n, L, w]``."""
        hidden = hidden + self.attention(self.attention_norm(hidden), key_bias)
        output: torch.Tensor = hidden + self.ffn(self.ffn_norm(hidden))
        return output


class TextTowerNet(nn.Module):
    """Word embeddings + learned positions → a small transformer → masked mean → projection.

    Inputs int64 ``[n, L]`` ``input_ids`` and ``attention_mask`` (1 = token, 0 = padding, on the
    right), ``1 ≤ L ≤ max_tokens``; output float32 ``[n, dim]`` unit rows. Padding changes
    nothing: padded keys are masked in attention and padded positions left out of the mean.
    """

    def __init__(self, architecture: Architecture) -> None:
        """Build the layers for ``architecture`` (weights initialised from torch's global RNG)."""
        super().__init__()
        width = architecture.text_width
        self.token_embedding = nn.Embedding(architecture.vocab_size, width)
        self.position_embedding = nn.Embedding(architecture.max_tokens, width)
        self.blocks = nn.ModuleList(
            _TransformerBlock(width, architecture.text_heads, architecture.text_ffn)
            for _ in range(architecture.text_layers)
        )
        self.final_norm = nn.LayerNorm(width)
        self.projection = nn.Linear(width, architecture.dim)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """int64 ``[n, L]`` ×2 → float32 ``[n, dim]``, L2-normalised."""
        # 0, 1, ..., L-1 on every row, derived from the tensor so L stays dynamic when traced.
        positions = torch.cumsum(torch.ones_like(input_ids), dim=1) - 1
        hidden = self.token_embedding(input_ids) + self.position_embedding(positions)
        mask = attention_mask.to(hidden.dtype)
        key_bias = ((1.0 - mask) * _MASKED_LOGIT)[:, None, None, :]
        for block in self.blocks:
            hidden = block(hidden, key_bias)
        hidden = self.final_norm(hidden)
        weights = mask.unsqueeze(-1)
        # clamp: a row of only padding (never produced by the tokenizer, which always emits
        # [CLS]) would otherwise divide by zero.
        pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp_min(1.0)
        return functional.normalize(self.projection(pooled), p=2.0, dim=1, eps=_NORM_EPS)


class DualEncoder(nn.Module):
    """Both towers plus the learned logit scales of eq. 1 (``logit_scale``) and eq. 2
    (``t2t_logit_scale``), each stored as a log and capped at ``MAX_LOGIT_SCALE``."""

    def __init__(self, architecture: Architecture) -> None:
        """Build both towers; the text tower is built first, then the image tower."""
        super().__init__()
        self.architecture = architecture
        self.text = TextTowerNet(architecture)
        self.image = ImageTowerNet(architecture)
        initial = math.log(INITIAL_LOGIT_SCALE)
        self.log_logit_scale = nn.Parameter(torch.tensor(initial))
        self.log_t2t_logit_scale = nn.Parameter(torch.tensor(initial))

    def logit_scale(self) -> torch.Tensor:
        """The image–text scale ``t`` (a scalar tensor), ``exp`` of its log, capped."""
        return self.log_logit_scale.exp().clamp(max=MAX_LOGIT_SCALE)

    def t2t_logit_scale(self) -> torch.Tensor:
        """The text–text scale ``t2`` of eq. 2 (a scalar tensor), capped."""
        return self.log_t2t_logit_scale.exp().clamp(max=MAX_LOGIT_SCALE)
