"""Reading a CLIP checkpoint from a local folder: the model, its tokenizer, its preprocessing.

Two layouts are recognised:

- **Hugging Face** (``save_pretrained`` / a hub snapshot such as ``openai/clip-vit-base-patch32``):
  ``config.json`` (``model_type: clip``), ``model.safetensors`` or ``pytorch_model.bin``,
  ``tokenizer.json`` (+ ``tokenizer_config.json``), ``preprocessor_config.json``.
- **open_clip** (open_clip's hub export, e.g. ``laion/CLIP-ViT-B-32-laion2B-s34B-b79K``):
  ``open_clip_config.json`` (``model_cfg`` + ``preprocess_cfg``, or a bare model config),
  one weights file (``open_clip_model.safetensors``, ``open_clip_pytorch_model.bin``, or any single
  ``*.safetensors`` / ``*.bin`` / ``*.pt``; training checkpoints with a ``state_dict`` entry
  work too), and ``tokenizer.json``. The weights are converted to ``CLIPModel`` by
  ``training.export.open_clip_convert``; open_clip itself is never imported.

Nothing is downloaded: every file is read from the folder (``local_files_only``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer
from transformers import CLIPConfig, CLIPModel, CLIPTextConfig, CLIPVisionConfig

from encoders.text_encoder import TextTokenizer
from encoders.variant import ImageTower, VariantError
from training.export.open_clip_convert import (
    ARGMAX_POOLING_EOS_ID,
    clip_config_from_open_clip,
    hf_state_dict_from_open_clip,
    model_config_of,
)

HF_CONFIG: Final = "config.json"
HF_PREPROCESSOR: Final = "preprocessor_config.json"
HF_TOKENIZER_CONFIG: Final = "tokenizer_config.json"
OPEN_CLIP_CONFIG: Final = "open_clip_config.json"
TOKENIZER_JSON: Final = "tokenizer.json"
OPEN_CLIP_WEIGHTS: Final = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
WEIGHT_SUFFIXES: Final = (".safetensors", ".bin", ".pt", ".pth")
# OpenAI's normalisation, open_clip's default when preprocess_cfg names none.
OPENAI_MEAN: Final = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD: Final = (0.26862954, 0.26130258, 0.27577711)
DEFAULT_PAD_TOKEN: Final = "<|endoftext|>"
# PIL resampling codes used by Hugging Face image processors.
_PIL_RESAMPLE: Final[Mapping[int, Literal["nearest", "bilinear", "bicubic"]]] = {
    0: "nearest",
    2: "bilinear",
    3: "bicubic",
}
_RESCALE_TOLERANCE: Final = 1e-9

CheckpointKind = Literal["huggingface", "open_clip"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClipCheckpoint:
    """A CLIP model ready to export: fp32 ``CLIPModel`` in eval mode (eager attention), the
    tokenizer with CLIP's context length and dynamic padding, the image preprocessing, and the
    embedding dimension ``dim`` (the projection size)."""

    model: CLIPModel
    tokenizer: TextTokenizer
    image_tower: ImageTower
    kind: CheckpointKind
    weights_file: str
    dim: int


def load_clip_checkpoint(source_dir: Path) -> ClipCheckpoint:
    """Load the CLIP checkpoint in ``source_dir`` (either layout, see the module docstring).

    Raises ``VariantError`` when the folder is neither layout, a file is missing, the
    preprocessing cannot be expressed as an ``ImageTower``, or the tokenizer does not end a text
    where the model pools; ``OpenClipConversionError`` for an open_clip model ``CLIPModel`` cannot
    represent.
    """
    source_dir = Path(source_dir)
    if (source_dir / HF_CONFIG).is_file():
        model, weights_file = _load_huggingface(source_dir)
        image_tower = image_tower_from_hf(_read_json(source_dir / HF_PREPROCESSOR))
        kind: CheckpointKind = "huggingface"
    elif (source_dir / OPEN_CLIP_CONFIG).is_file():
        config = _read_json(source_dir / OPEN_CLIP_CONFIG)
        model, weights_file = _load_open_clip(source_dir, model_config_of(config))
        image_tower = image_tower_from_open_clip(config)
        kind = "open_clip"
    else:
        raise VariantError(
            f"{source_dir} holds neither a Hugging Face CLIP ({HF_CONFIG}) nor an open_clip "
            f"checkpoint ({OPEN_CLIP_CONFIG})"
        )
    text_config, vision_config = _tower_configs(model.config)
    vision_size = vision_config.image_size
    if image_tower.input_size != (vision_size, vision_size):
        raise VariantError(
            f"the preprocessing yields {image_tower.height}x{image_tower.width} pixels but the "
            f"vision tower takes {vision_size}x{vision_size}"
        )
    tokenizer = clip_tokenizer(source_dir, int(text_config.max_position_embeddings))
    # _tower_configs checked both are ints; mypy cannot carry that across the call.
    check_pooling_token(tokenizer, int(text_config.eos_token_id))  # type: ignore[arg-type]
    dim = int(model.config.projection_dim)  # type: ignore[arg-type]
    logger.info(
        "loaded %s CLIP from %s: text %d layers x %d, vision %d layers x %d, %d px, dim %d",
        kind,
        source_dir,
        text_config.num_hidden_layers,
        text_config.hidden_size,
        vision_config.num_hidden_layers,
        vision_config.hidden_size,
        vision_size,
        dim,
    )
    torch.nn.Module.eval(model)
    return ClipCheckpoint(model, tokenizer, image_tower, kind, weights_file, dim)


def _tower_configs(config: CLIPConfig) -> tuple[CLIPTextConfig, CLIPVisionConfig]:
    """The text and vision sub-configs, checked to be what a square-input ViT CLIP has (an int
    ``image_size``, ``eos_token_id`` and ``projection_dim``)."""
    text, vision = config.text_config, config.vision_config
    if not isinstance(text, CLIPTextConfig) or not isinstance(vision, CLIPVisionConfig):
        raise VariantError(f"CLIP config without text and vision sub-configs: {config}")
    if not isinstance(vision.image_size, int):
        raise VariantError(f"vision image_size {vision.image_size!r} is not one int (a square)")
    if not isinstance(text.eos_token_id, int) or not isinstance(config.projection_dim, int):
        raise VariantError(
            f"text eos_token_id {text.eos_token_id!r} and projection_dim "
            f"{config.projection_dim!r} must be ints"
        )
    return text, vision


def _load_huggingface(source_dir: Path) -> tuple[CLIPModel, str]:
    """``CLIPModel.from_pretrained`` from local files, fp32, eager attention (plain ONNX ops)."""
    config = _read_json(source_dir / HF_CONFIG)
    if config.get("model_type") != "clip":
        raise VariantError(
            f"{source_dir / HF_CONFIG} has model_type {config.get('model_type')!r}, not 'clip'"
        )
    model = CLIPModel.from_pretrained(
        str(source_dir), local_files_only=True, attn_implementation="eager", dtype=torch.float32
    )
    weights = sorted(path.name for path in source_dir.iterdir() if path.suffix in WEIGHT_SUFFIXES)
    return model, ", ".join(weights)


def _load_open_clip(source_dir: Path, model_cfg: Mapping[str, Any]) -> tuple[CLIPModel, str]:
    """Build ``CLIPModel`` from the open_clip config and load the converted weights strictly."""
    config = clip_config_from_open_clip(model_cfg)
    weights_path = open_clip_weights_file(source_dir)
    state = read_state_dict(weights_path)
    model = CLIPModel._from_config(  # type: ignore[no-untyped-call]
        config, attn_implementation="eager", dtype=torch.float32
    )
    text_config, vision_config = _tower_configs(config)
    converted = hf_state_dict_from_open_clip(
        state,
        text_layers=text_config.num_hidden_layers,
        vision_layers=vision_config.num_hidden_layers,
    )
    missing, unexpected = model.load_state_dict(converted, strict=False)
    # position_ids are buffers CLIPModel makes itself; anything else must match exactly.
    missing = [key for key in missing if not key.endswith("position_ids")]
    if missing or unexpected:
        raise VariantError(
            f"{weights_path} does not fit the config: missing {missing[:5]}, unexpected "
            f"{unexpected[:5]}"
        )
    return model, weights_path.name


def open_clip_weights_file(source_dir: Path) -> Path:
    """The open_clip weights in ``source_dir``: a known file name, else the only weights file."""
    for name in OPEN_CLIP_WEIGHTS:
        if (source_dir / name).is_file():
            return source_dir / name
    candidates = sorted(path for path in source_dir.iterdir() if path.suffix in WEIGHT_SUFFIXES)
    if len(candidates) != 1:
        raise VariantError(
            f"{source_dir} must hold one of {OPEN_CLIP_WEIGHTS} or exactly one "
            f"{'/'.join(WEIGHT_SUFFIXES)} file, found {[path.name for path in candidates]}"
        )
    return candidates[0]


def read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """Tensors of a ``.safetensors`` file or of a torch pickle loaded with ``weights_only``.

    A training checkpoint (``{"state_dict": ..., "epoch": ...}``) yields its ``state_dict``.
    """
    if path.suffix == ".safetensors":
        return dict(load_file(str(path), device="cpu"))
    loaded = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(loaded, Mapping) and isinstance(loaded.get("state_dict"), Mapping):
        loaded = loaded["state_dict"]
    if not isinstance(loaded, Mapping) or not all(
        isinstance(value, torch.Tensor) for value in loaded.values()
    ):
        raise VariantError(f"{path} is not a state dict of tensors")
    return dict(loaded)


def image_tower_from_hf(preprocessor: Mapping[str, Any]) -> ImageTower:
    """The ``ImageTower`` of a Hugging Face ``CLIPImageProcessor`` config.

    Supports resize to ``shortest_edge`` (+ centre crop) or to ``height`` x ``width``, PIL
    nearest/bilinear/bicubic resampling, rescale by 1/255 and mean/std normalisation; raises
    ``VariantError`` for anything else rather than exporting a variant that preprocesses
    differently from its model.
    """
    problems = []
    if not preprocessor.get("do_resize", True):
        problems.append("do_resize is false")
    rescale = float(preprocessor.get("rescale_factor", 1 / 255))
    if not preprocessor.get("do_rescale", True) or abs(rescale - 1 / 255) > _RESCALE_TOLERANCE:
        problems.append(f"rescaling is not by 1/255 (rescale_factor {rescale})")
    if not preprocessor.get("do_normalize", True):
        problems.append("do_normalize is false")
    resample = preprocessor.get("resample", 3)
    if resample not in _PIL_RESAMPLE:
        problems.append(f"resample {resample!r} is not nearest (0), bilinear (2) or bicubic (3)")
    size = preprocessor.get("size")
    if isinstance(size, int):
        size = {"shortest_edge": size}
    crop = preprocessor.get("crop_size")
    if isinstance(crop, int):
        crop = {"height": crop, "width": crop}
    center_crop = bool(preprocessor.get("do_center_crop", True))
    if not isinstance(size, Mapping) or not (
        "shortest_edge" in size or {"height", "width"} <= set(size)
    ):
        problems.append(f"size {size!r} is neither shortest_edge nor height/width")
    elif "shortest_edge" in size and not (
        center_crop and isinstance(crop, Mapping) and {"height", "width"} <= set(crop)
    ):
        problems.append("a shortest_edge resize needs do_center_crop with a crop_size")
    if problems:
        raise VariantError("unsupported CLIP preprocessing: " + "; ".join(problems))
    assert isinstance(size, Mapping)  # narrowed by the checks above
    mean, std = (
        preprocessor.get("image_mean", OPENAI_MEAN),
        preprocessor.get("image_std", OPENAI_STD),
    )
    if "shortest_edge" in size:
        assert isinstance(crop, Mapping)
        height, width = int(crop["height"]), int(crop["width"])
        resize: Literal["shorter_side", "exact"] = "shorter_side"
        resize_to = int(size["shortest_edge"])
    else:
        height, width = int(size["height"]), int(size["width"])
        resize, resize_to = "exact", max(height, width)
    return _image_tower(height, width, resize, resize_to, _PIL_RESAMPLE[resample], mean, std)


def image_tower_from_open_clip(config: Mapping[str, Any]) -> ImageTower:
    """The ``ImageTower`` of open_clip's eval transform for ``config`` (``open_clip_config.json``).

    open_clip resizes the shorter side to ``vision_cfg.image_size`` and centre-crops
    (``resize_mode`` "shortest", the default) or squashes to the square ("squash"); mean/std come
    from ``preprocess_cfg`` (OpenAI's by default). "longest" (letterboxing) is refused.
    """
    size = int(model_config_of(config)["vision_cfg"]["image_size"])
    preprocess = dict(config.get("preprocess_cfg") or {})
    interpolation = preprocess.get("interpolation", "bicubic")
    resize_mode = preprocess.get("resize_mode", "shortest")
    if interpolation not in ("bicubic", "bilinear") or resize_mode not in ("shortest", "squash"):
        raise VariantError(
            f"unsupported open_clip preprocessing: interpolation {interpolation!r}, resize_mode "
            f"{resize_mode!r} (supported: bicubic/bilinear, shortest/squash)"
        )
    resize: Literal["shorter_side", "exact"] = (
        "shorter_side" if resize_mode == "shortest" else "exact"
    )
    return _image_tower(
        size,
        size,
        resize,
        size,
        interpolation,
        preprocess.get("mean", OPENAI_MEAN),
        preprocess.get("std", OPENAI_STD),
    )


def _image_tower(
    height: int,
    width: int,
    resize: Literal["shorter_side", "exact"],
    resize_to: int,
    interpolation: Literal["nearest", "bilinear", "bicubic"],
    mean: Any,
    std: Any,
) -> ImageTower:
    """An ``ImageTower`` (``image.onnx``) with a crop exactly when resizing by the shorter side.

    ``mean`` / ``std``: three numbers each (R, G, B), as the checkpoint's JSON gives them.
    """
    return ImageTower(
        height=height,
        width=width,
        resize=resize,
        resize_to=resize_to,
        interpolation=interpolation,
        crop="center" if resize == "shorter_side" else "none",
        mean=_rgb("mean", mean),
        std=_rgb("std", std),
    )


def _rgb(name: str, values: Any) -> tuple[float, float, float]:
    """Three floats from a JSON list; ``VariantError`` for anything else."""
    try:
        red, green, blue = (float(value) for value in values)
    except (TypeError, ValueError) as error:
        raise VariantError(
            f"image {name} must be three numbers (R, G, B), got {values!r}"
        ) from error
    return red, green, blue


def clip_tokenizer(source_dir: Path, max_tokens: int) -> TextTokenizer:
    """``<source_dir>/tokenizer.json`` truncating at ``max_tokens`` and padding dynamically.

    The pad token is the file's own padding token, else ``tokenizer_config.json``'s
    ``pad_token``, else ``<|endoftext|>`` (CLIP pools at the first end-of-text or largest id, and
    the attention is causal, so padding never reaches the pooled position).
    """
    path = source_dir / TOKENIZER_JSON
    if not path.is_file():
        raise VariantError(
            f"{source_dir} has no {TOKENIZER_JSON}; write one with transformers: "
            f"CLIPTokenizer.from_pretrained(DIR).save_pretrained(DIR)"
        )
    tokenizer = Tokenizer.from_file(str(path))
    if tokenizer.padding is None:
        pad_token = _configured_pad_token(source_dir) or DEFAULT_PAD_TOKEN
        pad_id = tokenizer.token_to_id(pad_token)
        if pad_id is None:
            raise VariantError(f"pad token {pad_token!r} is not in {path}'s vocabulary")
        tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
    return TextTokenizer(tokenizer, max_tokens)


def _configured_pad_token(source_dir: Path) -> str | None:
    """``pad_token`` of ``tokenizer_config.json`` (a string or ``{"content": ...}``), if any."""
    path = source_dir / HF_TOKENIZER_CONFIG
    if not path.is_file():
        return None
    token = _read_json(path).get("pad_token")
    if isinstance(token, Mapping):
        token = token.get("content")
    return token if isinstance(token, str) else None


def check_pooling_token(tokenizer: TextTokenizer, eos_token_id: int) -> None:
    """Raise ``VariantError`` unless a tokenized text ends where ``CLIPModel`` pools.

    CLIP's text features are read at the end-of-text token: the first ``eos_token_id`` or, for
    configs with the legacy ``eos_token_id`` 2, the largest token id. A tokenizer that does not
    append that token would make the model pool at a word, silently.
    """
    ids = [int(value) for value in tokenizer.encode(["a photo of a cat"]).input_ids[0]]
    eos_id = eos_token_id
    pooled = (
        ids.index(max(ids))
        if eos_id == ARGMAX_POOLING_EOS_ID
        else (ids.index(eos_id) if eos_id in ids else -1)
    )
    if pooled != len(ids) - 1:
        raise VariantError(
            f"the tokenizer turns 'a photo of a cat' into {ids}; the model pools at "
            f"{'the largest id' if eos_id == ARGMAX_POOLING_EOS_ID else f'token {eos_id}'}, "
            "which must be the last token (the end-of-text token its post-processor appends)"
        )


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; ``VariantError`` when the file is missing or not an object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise VariantError(f"missing {path}") from error
    if not isinstance(value, dict):
        raise VariantError(f"{path} is not a JSON object")
    return value
