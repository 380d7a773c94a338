"""The losses against straightforward loop implementations of the papers' formulas."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch", reason="training needs the 'export' extra")

import torch

from training.trainer.losses import (
    LOSS_PRESETS,
    LossConfig,
    adaptive_margins,
    image_text_loss,
    in_batch_softmax,
    text_text_loss,
)


def _unit_rows(rows: int, dim: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(rows, dim, generator=generator, dtype=torch.float64)
    unit: torch.Tensor = values / values.norm(dim=1, keepdim=True)
    return unit


def _loop_direction(
    anchors: torch.Tensor,
    candidates: torch.Tensor,
    scale: float,
    margins: list[list[float]] | None = None,
) -> float:
    """-(1/b) Σ_i log [exp(t s_ii) / Σ_j exp(t (s_ij + m_ij))], one term at a time."""
    total = 0.0
    size = len(anchors)
    for i in range(size):
        logits = []
        for j in range(size):
            similarity = sum(
                float(a) * float(c) for a, c in zip(anchors[i], candidates[j], strict=True)
            )
            margin = margins[i][j] if margins is not None else 0.0
            logits.append(scale * (similarity + margin))
        denominator = sum(math.exp(value) for value in logits)
        total += -math.log(math.exp(logits[i]) / denominator)
    return total / size


def test_eq1_is_both_directions_of_the_in_batch_softmax() -> None:
    images, texts = _unit_rows(5, 4, seed=1), _unit_rows(5, 4, seed=2)
    scale = 7.5
    expected = _loop_direction(images, texts, scale) + _loop_direction(texts, images, scale)
    actual = image_text_loss(images, texts, torch.tensor(scale, dtype=torch.float64))
    assert float(actual) == pytest.approx(expected, rel=1e-10)


def test_one_direction_is_asymmetric() -> None:
    images, texts = _unit_rows(4, 3, seed=3), _unit_rows(4, 3, seed=4)
    scale = torch.tensor(3.0, dtype=torch.float64)
    image_to_text = float(in_batch_softmax(images, texts, scale))
    text_to_image = float(in_batch_softmax(texts, images, scale))
    assert image_to_text == pytest.approx(_loop_direction(images, texts, 3.0), rel=1e-10)
    assert text_to_image == pytest.approx(_loop_direction(texts, images, 3.0), rel=1e-10)
    assert image_to_text != pytest.approx(text_to_image)


def test_eq1_at_chance_is_twice_log_batch() -> None:
    same = _unit_rows(1, 4, seed=5).repeat(6, 1)
    loss = image_text_loss(same, same, torch.tensor(10.0, dtype=torch.float64))
    assert float(loss) == pytest.approx(2 * math.log(6))


def test_eq2_takes_co_captions_as_positives() -> None:
    captions, co_captions = _unit_rows(6, 4, seed=6), _unit_rows(6, 4, seed=7)
    scale = 4.0
    expected = _loop_direction(captions, co_captions, scale) + _loop_direction(
        co_captions, captions, scale
    )
    actual = text_text_loss(captions, co_captions, torch.tensor(scale, dtype=torch.float64))
    assert float(actual) == pytest.approx(expected, rel=1e-10)
    # Aligned co-captions are easy positives: far lower loss than a shuffled pairing.
    aligned = text_text_loss(captions, captions, torch.tensor(scale, dtype=torch.float64))
    assert float(aligned) < float(actual)


def test_margins_enter_the_negative_logits_only() -> None:
    images, texts = _unit_rows(4, 3, seed=8), _unit_rows(4, 3, seed=9)
    relevance = torch.tensor(
        [[0.5, 0.1, 0.0, 0.5], [0.2, 0.4, 0.4, 0.0], [0.0, 0.0, 0.3, 0.3], [0.1, 0.1, 0.1, 0.2]],
        dtype=torch.float64,
    )
    i2t, t2i = adaptive_margins(relevance, 0.2)
    scale = 5.0
    expected = _loop_direction(images, texts, scale, i2t.tolist()) + _loop_direction(
        texts, images, scale, t2i.tolist()
    )
    actual = image_text_loss(images, texts, torch.tensor(scale, dtype=torch.float64), (i2t, t2i))
    assert float(actual) == pytest.approx(expected, rel=1e-10)
    # Margins make negatives harder, so the loss can only grow.
    assert float(actual) > float(
        image_text_loss(images, texts, torch.tensor(scale, dtype=torch.float64))
    )


def test_margin_formula_element_by_element() -> None:
    relevance = torch.tensor(
        [[0.5, 0.1, 0.0], [0.2, 0.4, 0.8], [0.25, 0.0, 0.3]], dtype=torch.float64
    )
    m = 0.3
    i2t, t2i = adaptive_margins(relevance, m)
    for i in range(3):
        for j in range(3):
            if i == j:
                assert float(i2t[i, j]) == 0.0
                assert float(t2i[i, j]) == 0.0
                continue
            positive = float(relevance[i, i])
            # i2t: anchor image i, negative caption j, relevance of caption j to image i.
            expected_i2t = m * (1 - min(1.0, max(0.0, float(relevance[j, i]) / positive)))
            # t2i: anchor caption i, negative image j, relevance of caption i to image j.
            expected_t2i = m * (1 - min(1.0, max(0.0, float(relevance[i, j]) / positive)))
            assert float(i2t[i, j]) == pytest.approx(expected_i2t)
            assert float(t2i[i, j]) == pytest.approx(expected_t2i)


def test_identical_captions_get_no_margin_and_disjoint_ones_the_full_margin() -> None:
    # Negative 1 is as relevant to anchor 0's references as the positive (a duplicate caption);
    # negative 2 shares nothing with them.
    relevance = torch.tensor(
        [[0.6, 0.6, 0.0], [0.6, 0.6, 0.0], [0.0, 0.0, 0.6]], dtype=torch.float64
    )
    i2t, t2i = adaptive_margins(relevance, 0.2)
    for margins in (i2t, t2i):
        assert float(margins[0, 1]) == pytest.approx(0.0, abs=1e-12)
        assert float(margins[0, 2]) == pytest.approx(0.2)


def test_a_positive_without_relevance_gets_no_margin() -> None:
    relevance = torch.tensor([[0.0, 0.3], [0.2, 0.5]], dtype=torch.float64)
    i2t, t2i = adaptive_margins(relevance, 0.2)
    assert float(i2t[0, 1]) == 0.0
    assert float(t2i[0, 1]) == 0.0
    assert float(t2i[1, 0]) == pytest.approx(0.2 * (1 - 0.2 / 0.5))


def test_margins_need_a_square_matrix() -> None:
    with pytest.raises(ValueError, match="square"):
        adaptive_margins(torch.zeros(2, 3), 0.1)


def test_presets_and_overrides() -> None:
    assert LossConfig.preset("i2t") == LossConfig(0.0, 0.0)
    assert LossConfig.preset("t2t_i2t").t2t_weight > 0
    assert LossConfig.preset("margin").margin > 0
    composed = LossConfig.preset("i2t", t2t_weight=0.5, margin=0.05)
    assert composed == LossConfig(t2t_weight=0.5, margin=0.05)
    assert "eq2" in composed.describe()
    assert "margin" in composed.describe()
    assert set(LOSS_PRESETS) == {"i2t", "t2t_i2t", "margin"}
    with pytest.raises(ValueError, match=">= 0"):
        LossConfig(margin=-0.1)
