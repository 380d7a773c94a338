"""open_clip ViT checkpoints → the Hugging Face ``CLIPModel`` layout, without importing open_clip.

open_clip's ``CLIP`` class (a ViT image tower and its own text transformer, the layout of the
OpenAI weights and of LAION's ViT-B/32, ViT-L/14, ...) and transformers' ``CLIPModel`` compute the
same function with differently named tensors. This module maps

- the model config (``open_clip_config.json``'s ``model_cfg``, or a bare model config such as
  open_clip's ``model_configs/ViT-B-32.json``) to a ``transformers.CLIPConfig``, refusing every
  option that changes the computation in a way ``CLIPModel`` cannot express (timm or Hugging Face
  towers, layer scale, attentional pooling, non-"argmax" text pooling, ...);
- the state dict, key by key: attention ``in_proj_weight`` [3w, w] is split into ``q/k/v_proj``,
  the projections ``text_projection`` [w, e] and ``visual.proj`` [w, e] are transposed into
  ``nn.Linear`` weights [e, w]. Every source tensor must be used and every target filled.

Text pooling: open_clip's "argmax" pool takes the token at the largest token id (the
end-of-text token of its BPE vocabulary); ``CLIPTextConfig(eos_token_id=2)`` selects exactly that
rule in transformers (its legacy branch), so converted configs set it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import torch
from transformers import CLIPConfig

# open_clip's defaults for keys a config may leave out (open_clip/model.py CLIPVisionCfg,
# CLIPTextCfg), and the values this conversion accepts for options it cannot map.
_VISION_DEFAULTS: Final[Mapping[str, object]] = {
    "head_width": 64,
    "mlp_ratio": 4.0,
}
_TEXT_DEFAULTS: Final[Mapping[str, object]] = {
    "context_length": 77,
    "vocab_size": 49408,
    "heads": 8,
    "mlp_ratio": 4.0,
}
_VISION_MAPPED: Final = frozenset(
    {"image_size", "layers", "width", "patch_size", *_VISION_DEFAULTS}
)
_TEXT_MAPPED: Final = frozenset({"width", "layers", *_TEXT_DEFAULTS})
# Options that do not change inference (dropout, extra outputs).
_IGNORED: Final = frozenset({"patch_dropout", "output_tokens", "dropout"})
# Options accepted only at the value that means "as CLIPModel computes it".
_VISION_FIXED: Final[Mapping[str, object]] = {
    "ls_init_value": None,
    "timm_model_name": None,
    "attentional_pool": False,
    "no_ln_pre": False,
    "final_ln_after_pool": False,
    "pool_type": "tok",
    "pos_embed_type": "learnable",
    "input_patchnorm": False,
    "global_average_pool": False,
    "act_kwargs": None,
    "norm_kwargs": None,
}
_TEXT_FIXED: Final[Mapping[str, object]] = {
    "ls_init_value": None,
    "hf_model_name": None,
    "embed_cls": False,
    "pool_type": "argmax",
    "proj_bias": False,
    "no_causal_mask": False,
    "final_ln_after_pool": False,
    "act_kwargs": None,
    "norm_kwargs": None,
}
_MODEL_MAPPED: Final = frozenset({"embed_dim", "vision_cfg", "text_cfg", "quick_gelu"})
_MODEL_FIXED: Final[Mapping[str, object]] = {"custom_text": False, "cast_dtype": None}
# transformers' CLIPTextTransformer pools at argmax(input_ids) when eos_token_id == 2.
ARGMAX_POOLING_EOS_ID: Final = 2
# Buffers of an open_clip state dict that CLIPModel rebuilds itself (the causal mask).
_REBUILT_BUFFERS: Final = frozenset({"attn_mask"})


class OpenClipConversionError(ValueError):
    """The open_clip config or state dict is not one this conversion can map exactly."""


def model_config_of(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The model part of an open_clip config: ``config["model_cfg"]`` (``open_clip_config.json``
    as open_clip's hub export writes it) or ``config`` itself (a bare ``model_configs/*.json``).
    """
    model_cfg = config.get("model_cfg", config)
    if not isinstance(model_cfg, Mapping) or "vision_cfg" not in model_cfg:
        raise OpenClipConversionError(
            "not an open_clip config: expected 'model_cfg' or 'embed_dim', 'vision_cfg', "
            f"'text_cfg' at the top level, found {sorted(config)}"
        )
    return model_cfg


def clip_config_from_open_clip(model_cfg: Mapping[str, Any]) -> CLIPConfig:
    """The ``CLIPConfig`` computing what open_clip's ``CLIP(**model_cfg)`` computes.

    Raises ``OpenClipConversionError`` naming every option that cannot be mapped exactly.
    """
    vision = dict(model_cfg.get("vision_cfg") or {})
    text = dict(model_cfg.get("text_cfg") or {})
    problems = (
        _unsupported("model", model_cfg, _MODEL_MAPPED, _MODEL_FIXED)
        + _unsupported("vision_cfg", vision, _VISION_MAPPED, _VISION_FIXED)
        + _unsupported("text_cfg", text, _TEXT_MAPPED, _TEXT_FIXED)
    )
    if not isinstance(vision.get("layers"), int):
        problems.append(
            f"vision_cfg.layers={vision.get('layers')!r}: only ViT image towers (an int layer "
            "count) are supported, not ModifiedResNet"
        )
    if not isinstance(vision.get("image_size"), int) or not isinstance(
        vision.get("patch_size"), int
    ):
        problems.append(
            f"vision_cfg image_size={vision.get('image_size')!r}, patch_size="
            f"{vision.get('patch_size')!r}: only square sizes given as one int are supported"
        )
    if problems:
        raise OpenClipConversionError("cannot convert this open_clip model: " + "; ".join(problems))
    vision = {**_VISION_DEFAULTS, **vision}
    text = {**_TEXT_DEFAULTS, **text}
    act = "quick_gelu" if model_cfg.get("quick_gelu", False) else "gelu"
    width = int(vision["width"])
    if width % int(vision["head_width"]):
        raise OpenClipConversionError(f"vision width {width} is no multiple of head_width")
    return CLIPConfig(
        projection_dim=int(model_cfg["embed_dim"]),
        text_config={
            "vocab_size": int(text["vocab_size"]),
            "hidden_size": int(text["width"]),
            "intermediate_size": int(int(text["width"]) * float(text["mlp_ratio"])),
            "num_hidden_layers": int(text["layers"]),
            "num_attention_heads": int(text["heads"]),
            "max_position_embeddings": int(text["context_length"]),
            "hidden_act": act,
            "layer_norm_eps": 1e-5,
            "eos_token_id": ARGMAX_POOLING_EOS_ID,
        },
        vision_config={
            "hidden_size": width,
            "intermediate_size": int(width * float(vision["mlp_ratio"])),
            "num_hidden_layers": int(vision["layers"]),
            "num_attention_heads": width // int(vision["head_width"]),
            "image_size": int(vision["image_size"]),
            "patch_size": int(vision["patch_size"]),
            "hidden_act": act,
            "layer_norm_eps": 1e-5,
        },
    )


def _unsupported(
    section: str,
    values: Mapping[str, Any],
    mapped: frozenset[str],
    fixed: Mapping[str, object],
) -> list[str]:
    """Messages for keys of ``values`` that are neither mapped, ignorable, nor at their fixed
    accepted value."""
    problems = []
    for key, value in sorted(values.items()):
        if key in mapped or key in _IGNORED:
            continue
        if key in fixed:
            accepted = fixed[key]
            # An empty {} or None stands for "off" as well as False does.
            if value != accepted and not (accepted in (None, False) and not value):
                problems.append(f"{section}.{key}={value!r} (only {accepted!r} is supported)")
            continue
        problems.append(f"{section}.{key}={value!r} is not a known open_clip CLIP option")
    return problems


def hf_state_dict_from_open_clip(
    state: Mapping[str, torch.Tensor], *, text_layers: int, vision_layers: int
) -> dict[str, torch.Tensor]:
    """Rename (and split or transpose) an open_clip ``CLIP`` state dict into ``CLIPModel``'s.

    ``state``: the model's ``state_dict()`` (a ``module.`` prefix from DataParallel training is
    removed first); ``text_layers`` / ``vision_layers``: the towers' block counts. Raises
    ``OpenClipConversionError`` naming a missing tensor or listing unused ones.
    """
    state = {_strip_prefix(key): tensor for key, tensor in state.items()}
    converted: dict[str, torch.Tensor] = {}
    used: set[str] = set(_REBUILT_BUFFERS & set(state))

    def take(key: str) -> torch.Tensor:
        if key not in state:
            raise OpenClipConversionError(f"the state dict has no {key!r}")
        used.add(key)
        return state[key]

    converted["logit_scale"] = take("logit_scale")
    converted["text_projection.weight"] = take("text_projection").t().contiguous()
    converted["visual_projection.weight"] = take("visual.proj").t().contiguous()
    text, vision = "text_model.", "vision_model."
    converted[text + "embeddings.token_embedding.weight"] = take("token_embedding.weight")
    converted[text + "embeddings.position_embedding.weight"] = take("positional_embedding")
    converted[vision + "embeddings.class_embedding"] = take("visual.class_embedding")
    converted[vision + "embeddings.patch_embedding.weight"] = take("visual.conv1.weight")
    converted[vision + "embeddings.position_embedding.weight"] = take("visual.positional_embedding")
    for source, target in (
        ("ln_final", text + "final_layer_norm"),
        ("visual.ln_pre", vision + "pre_layrnorm"),
        ("visual.ln_post", vision + "post_layernorm"),
    ):
        for parameter in ("weight", "bias"):
            converted[f"{target}.{parameter}"] = take(f"{source}.{parameter}")
    for prefix, target, layers in (
        ("transformer.resblocks.", text + "encoder.layers.", text_layers),
        ("visual.transformer.resblocks.", vision + "encoder.layers.", vision_layers),
    ):
        for layer in range(layers):
            converted.update(_residual_block(f"{prefix}{layer}.", f"{target}{layer}.", take))
    unused = sorted(set(state) - used)
    if unused:
        raise OpenClipConversionError(
            f"{len(unused)} open_clip tensors have no place in CLIPModel (e.g. {unused[:5]}): "
            "the checkpoint has more layers or modules than its config describes"
        )
    return converted


_BLOCK_RENAMES: Final = (
    ("ln_1", "layer_norm1"),
    ("ln_2", "layer_norm2"),
    ("attn.out_proj", "self_attn.out_proj"),
    ("mlp.c_fc", "mlp.fc1"),
    ("mlp.c_proj", "mlp.fc2"),
)


def _residual_block(
    source: str, target: str, take: Callable[[str], torch.Tensor]
) -> dict[str, torch.Tensor]:
    """One transformer block: renamed norms and MLP, the stacked q/k/v projection split in 3."""
    block: dict[str, torch.Tensor] = {}
    for old, new in _BLOCK_RENAMES:
        for parameter in ("weight", "bias"):
            block[f"{target}{new}.{parameter}"] = take(f"{source}{old}.{parameter}")
    for parameter in ("weight", "bias"):
        stacked = take(f"{source}attn.in_proj_{parameter}")
        for name, part in zip(("q_proj", "k_proj", "v_proj"), stacked.chunk(3), strict=True):
            block[f"{target}self_attn.{name}.{parameter}"] = part.contiguous()
    return block


def _strip_prefix(key: str) -> str:
    """``module.x`` (DataParallel / DDP checkpoints) → ``x``."""
    return key.removeprefix("module.")
