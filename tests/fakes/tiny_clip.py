"""A tiny, randomly initialised CLIP checkpoint built offline, in both on-disk layouts.

``write_tiny_hf_clip`` writes what ``CLIPModel.save_pretrained`` + a CLIP tokenizer + a CLIP image
processor write for a real checkpoint (config.json, model.safetensors, tokenizer.json,
tokenizer_config.json, preprocessor_config.json), with a byte-level BPE vocabulary of the 512
base symbols, a few merges and CLIP's two special tokens. ``write_tiny_open_clip`` writes the same
weights as open_clip names them (open_clip_config.json, open_clip_model.safetensors,
tokenizer.json), by a reverse key mapping written here independently of the converter under test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="building a CLIP checkpoint needs the export extra")
transformers = pytest.importorskip("transformers", reason="needs the export extra")

from safetensors.torch import save_file  # noqa: E402
from transformers import CLIPConfig, CLIPModel, CLIPTokenizer  # noqa: E402
from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil  # noqa: E402

TINY_CONTEXT = 16
TINY_IMAGE = 32
TINY_PATCH = 8
TINY_WIDTH = 32
TINY_LAYERS = 2
TINY_HEADS = 4
TINY_DIM = 24
MERGES = (("d", "o"), ("do", "g</w>"), ("c", "a"), ("ca", "t</w>"))


def _byte_symbols() -> list[str]:
    """GPT-2 / CLIP's printable stand-ins for the 256 byte values."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    symbols, extra = list(printable), 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            symbols.append(256 + extra)
            extra += 1
    return [chr(code) for code in symbols]


def tiny_clip_tokenizer() -> CLIPTokenizer:
    """CLIP's tokenizer pipeline over a tiny vocabulary (no unknown bytes, end-of-text last)."""
    base = _byte_symbols()
    vocab = base + [symbol + "</w>" for symbol in base] + ["".join(pair) for pair in MERGES]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    return CLIPTokenizer(vocab={token: index for index, token in enumerate(vocab)}, merges=MERGES)


def tiny_clip_model(tokenizer: CLIPTokenizer, seed: int = 0) -> CLIPModel:
    """A random CLIPModel: 2 layers of width 32 per tower, 32 px images in 8 px patches."""
    config = CLIPConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": TINY_WIDTH,
            "intermediate_size": 4 * TINY_WIDTH,
            "num_hidden_layers": TINY_LAYERS,
            "num_attention_heads": TINY_HEADS,
            "max_position_embeddings": TINY_CONTEXT,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config={
            "hidden_size": TINY_WIDTH,
            "intermediate_size": 4 * TINY_WIDTH,
            "num_hidden_layers": TINY_LAYERS,
            "num_attention_heads": TINY_HEADS,
            "image_size": TINY_IMAGE,
            "patch_size": TINY_PATCH,
        },
        projection_dim=TINY_DIM,
    )
    torch.manual_seed(seed)
    model = CLIPModel(config)
    # Random init leaves LayerNorms at 1/0 and biases at 0; perturb them so that a swapped
    # weight/bias or a missed tensor changes the output.
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name or name.endswith("bias"):
                parameter.add_(0.1 * torch.randn_like(parameter))
    return model.eval()


def write_tiny_hf_clip(folder: Path, seed: int = 0) -> CLIPModel:
    """Write a Hugging Face CLIP checkpoint folder; returns the model it holds."""
    tokenizer = tiny_clip_tokenizer()
    model = tiny_clip_model(tokenizer, seed)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    CLIPImageProcessorPil(
        size={"shortest_edge": TINY_IMAGE}, crop_size={"height": TINY_IMAGE, "width": TINY_IMAGE}
    ).save_pretrained(folder)
    return model


def open_clip_state_dict(model: CLIPModel) -> dict[str, Any]:
    """``model``'s weights under open_clip's names (q/k/v stacked, projections transposed)."""
    hf = model.state_dict()
    state: dict[str, Any] = {
        "logit_scale": hf["logit_scale"],
        "text_projection": hf["text_projection.weight"].t(),
        "visual.proj": hf["visual_projection.weight"].t(),
        "token_embedding.weight": hf["text_model.embeddings.token_embedding.weight"],
        "positional_embedding": hf["text_model.embeddings.position_embedding.weight"],
        "visual.class_embedding": hf["vision_model.embeddings.class_embedding"],
        "visual.conv1.weight": hf["vision_model.embeddings.patch_embedding.weight"],
        "visual.positional_embedding": hf["vision_model.embeddings.position_embedding.weight"],
        # open_clip's OpenAI-format checkpoints carry the causal mask as a buffer.
        "attn_mask": torch.full((TINY_CONTEXT, TINY_CONTEXT), float("-inf")).triu(1),
    }
    for open_clip_norm, hf_norm in (
        ("ln_final", "text_model.final_layer_norm"),
        ("visual.ln_pre", "vision_model.pre_layrnorm"),
        ("visual.ln_post", "vision_model.post_layernorm"),
    ):
        for kind in ("weight", "bias"):
            state[f"{open_clip_norm}.{kind}"] = hf[f"{hf_norm}.{kind}"]
    for open_clip_prefix, hf_prefix in (
        ("transformer.resblocks", "text_model.encoder.layers"),
        ("visual.transformer.resblocks", "vision_model.encoder.layers"),
    ):
        for layer in range(TINY_LAYERS):
            source, target = f"{hf_prefix}.{layer}.", f"{open_clip_prefix}.{layer}."
            for kind in ("weight", "bias"):
                state[f"{target}attn.in_proj_{kind}"] = torch.cat(
                    [hf[f"{source}self_attn.{p}_proj.{kind}"] for p in ("q", "k", "v")]
                )
                state[f"{target}attn.out_proj.{kind}"] = hf[f"{source}self_attn.out_proj.{kind}"]
                state[f"{target}ln_1.{kind}"] = hf[f"{source}layer_norm1.{kind}"]
                state[f"{target}ln_2.{kind}"] = hf[f"{source}layer_norm2.{kind}"]
                state[f"{target}mlp.c_fc.{kind}"] = hf[f"{source}mlp.fc1.{kind}"]
                state[f"{target}mlp.c_proj.{kind}"] = hf[f"{source}mlp.fc2.{kind}"]
    return {key: value.contiguous() for key, value in state.items()}


def tiny_open_clip_config() -> dict[str, Any]:
    """``open_clip_config.json`` as open_clip's hub export writes it, for the tiny model."""
    return {
        "model_cfg": {
            "embed_dim": TINY_DIM,
            "quick_gelu": True,
            "vision_cfg": {
                "image_size": TINY_IMAGE,
                "layers": TINY_LAYERS,
                "width": TINY_WIDTH,
                "patch_size": TINY_PATCH,
                "head_width": TINY_WIDTH // TINY_HEADS,
            },
            "text_cfg": {
                "context_length": TINY_CONTEXT,
                "vocab_size": len(tiny_clip_tokenizer()),
                "width": TINY_WIDTH,
                "heads": TINY_HEADS,
                "layers": TINY_LAYERS,
            },
        },
        "preprocess_cfg": {
            "mean": [0.48145466, 0.4578275, 0.40821073],
            "std": [0.26862954, 0.26130258, 0.27577711],
        },
    }


def write_tiny_open_clip(folder: Path, hf_folder: Path, model: CLIPModel) -> None:
    """Write ``model`` as an open_clip hub-export folder, with ``hf_folder``'s tokenizer.json."""
    folder.mkdir(parents=True, exist_ok=True)
    save_file(open_clip_state_dict(model), str(folder / "open_clip_model.safetensors"))
    (folder / "open_clip_config.json").write_text(json.dumps(tiny_open_clip_config()))
    shutil.copy(hf_folder / "tokenizer.json", folder / "tokenizer.json")
