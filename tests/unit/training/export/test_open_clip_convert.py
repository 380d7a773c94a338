"""open_clip → Hugging Face CLIP conversion, checked on a random CLIP reverse-mapped to open_clip.

The reverse mapping (``tests.fakes.tiny_clip.open_clip_state_dict``) is written independently
of the converter; converting its output back must give every original tensor bit for bit, and
the converted model must compute what the original computes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.fakes.tiny_clip import (
    TINY_LAYERS,
    open_clip_state_dict,
    tiny_clip_model,
    tiny_clip_tokenizer,
    tiny_open_clip_config,
    write_tiny_hf_clip,
    write_tiny_open_clip,
)

torch = pytest.importorskip("torch")

from transformers import CLIPModel  # noqa: E402

from encoders.variant import VariantError  # noqa: E402
from training.export.clip_checkpoint import load_clip_checkpoint, read_state_dict  # noqa: E402
from training.export.open_clip_convert import (  # noqa: E402
    OpenClipConversionError,
    clip_config_from_open_clip,
    hf_state_dict_from_open_clip,
    model_config_of,
)


@pytest.fixture(scope="module")
def model() -> CLIPModel:
    return tiny_clip_model(tiny_clip_tokenizer(), seed=3)


def test_converted_state_dict_equals_the_original_bit_for_bit(model: CLIPModel) -> None:
    original = model.state_dict()
    converted = hf_state_dict_from_open_clip(
        open_clip_state_dict(model),
        text_layers=TINY_LAYERS,
        vision_layers=TINY_LAYERS,
    )
    assert sorted(converted) == sorted(original)
    for key, tensor in original.items():
        assert torch.equal(converted[key], tensor), key


def test_config_maps_to_the_same_architecture(model: CLIPModel) -> None:
    config = clip_config_from_open_clip(model_config_of(tiny_open_clip_config()))
    reference = model.config
    for tower in ("text_config", "vision_config"):
        for field in (
            "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "hidden_act",
        ):  # fmt: skip
            assert getattr(getattr(config, tower), field) == getattr(
                getattr(reference, tower), field
            )
    assert config.projection_dim == reference.projection_dim
    assert config.text_config.max_position_embeddings == 16
    # open_clip pools at the largest token id; eos_token_id 2 selects that rule in transformers.
    assert config.text_config.eos_token_id == 2


def test_a_bare_model_config_and_plain_gelu_are_accepted() -> None:
    bare = dict(tiny_open_clip_config()["model_cfg"], quick_gelu=False)
    config = clip_config_from_open_clip(model_config_of(bare))
    assert config.text_config.hidden_act == "gelu"
    assert config.vision_config.hidden_act == "gelu"


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("vision_cfg", "timm_model_name", "vit_base_patch16_224"),
        ("vision_cfg", "layers", [3, 4, 6, 3]),
        ("vision_cfg", "ls_init_value", 1e-5),
        ("text_cfg", "pool_type", "last"),
        ("text_cfg", "hf_model_name", "roberta-base"),
        ("text_cfg", "some_future_option", True),
    ],
)
def test_options_clipmodel_cannot_express_are_refused(
    section: str, key: str, value: object
) -> None:
    config = tiny_open_clip_config()["model_cfg"]
    config[section] = dict(config[section], **{key: value})
    with pytest.raises(OpenClipConversionError, match=key):
        clip_config_from_open_clip(config)


def test_a_tensor_too_many_or_too_few_is_refused(model: CLIPModel) -> None:
    state = open_clip_state_dict(model)
    extra = dict(state, **{"transformer.resblocks.2.ln_1.weight": torch.ones(32)})
    with pytest.raises(OpenClipConversionError, match="no place"):
        hf_state_dict_from_open_clip(extra, text_layers=TINY_LAYERS, vision_layers=TINY_LAYERS)
    missing = {key: value for key, value in state.items() if key != "visual.proj"}
    with pytest.raises(OpenClipConversionError, match=r"visual\.proj"):
        hf_state_dict_from_open_clip(missing, text_layers=TINY_LAYERS, vision_layers=TINY_LAYERS)


def test_open_clip_folder_loads_to_a_model_that_computes_the_same(tmp_path: Path) -> None:
    hf_model = write_tiny_hf_clip(tmp_path / "hf", seed=5)
    write_tiny_open_clip(tmp_path / "open_clip", tmp_path / "hf", hf_model)
    from_hf = load_clip_checkpoint(tmp_path / "hf")
    from_open_clip = load_clip_checkpoint(tmp_path / "open_clip")
    assert from_open_clip.kind == "open_clip"
    assert from_open_clip.image_tower == from_hf.image_tower
    tokens = from_open_clip.tokenizer.encode(
        ["a dog", "a cat on a dog, a very long caption indeed"]
    )
    pixels = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        ids = torch.from_numpy(tokens.input_ids)
        text = [
            m.model.get_text_features(input_ids=ids).pooler_output
            for m in (from_hf, from_open_clip)
        ]
        image = [
            m.model.get_image_features(pixel_values=pixels).pooler_output
            for m in (from_hf, from_open_clip)
        ]
    np.testing.assert_allclose(text[0].numpy(), text[1].numpy(), atol=1e-6)
    np.testing.assert_allclose(image[0].numpy(), image[1].numpy(), atol=1e-6)


def test_a_training_checkpoint_with_module_prefixes_is_read(
    tmp_path: Path, model: CLIPModel
) -> None:
    state = open_clip_state_dict(model)
    path = tmp_path / "epoch_32.pt"
    torch.save({"epoch": 32, "state_dict": {f"module.{k}": v for k, v in state.items()}}, path)
    loaded = read_state_dict(path)
    converted = hf_state_dict_from_open_clip(
        loaded, text_layers=TINY_LAYERS, vision_layers=TINY_LAYERS
    )
    assert torch.equal(
        converted["visual_projection.weight"], model.state_dict()["visual_projection.weight"]
    )


def test_a_folder_of_neither_layout_is_refused(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(VariantError, match="neither"):
        load_clip_checkpoint(tmp_path)


def test_two_weight_files_without_a_known_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "open_clip_config.json").write_text(json.dumps(tiny_open_clip_config()))
    (tmp_path / "a.pt").write_bytes(b"")
    (tmp_path / "b.safetensors").write_bytes(b"")
    with pytest.raises(VariantError, match="exactly one"):
        load_clip_checkpoint(tmp_path)
