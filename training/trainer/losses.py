"""The training objectives: CxC's in-batch softmax (eq. 1), its text–text multitask term (eq. 2)
and Biten et al.'s semantic adaptive margin (their eq. 7), adapted to the softmax.

Notation, for one batch of ``b`` images ``x_i`` with one sampled caption ``y_i`` each (and, for
eq. 2, a second caption ``y'_i`` of the same image): embeddings are L2-normalised, so
``s(u, v) = u · v`` is a cosine; ``t > 0`` is a learned logit scale (an inverse temperature).

- Eq. 1 (Parekh et al., "Crisscrossed Captions", EACL 2021, the DE_I2T dual encoder)::

      L_i2t = -(1/b) Σ_i log [ exp(t s(x_i, y_i)) / Σ_j exp(t (s(x_i, y_j) + m_ij)) ]
      L_t2i = -(1/b) Σ_i log [ exp(t s(y_i, x_i)) / Σ_j exp(t (s(y_i, x_j) + m'_ij)) ]
      L_1   = L_i2t + L_t2i

  with ``m = m' = 0`` (plain eq. 1) unless the adaptive margin is on; ``m_ii = 0`` always.
- Eq. 2 (the multitask DE_T2T+I2T): the same in-batch softmax between two captions of each
  image, the co-caption the positive and the other images' second captions the negatives, in both
  directions, with its own learned scale ``t2``::

      L_t2t = -(1/b) Σ_i log softmax_j(t2 s(y_i, y'_j))[i]
              -(1/b) Σ_i log softmax_j(t2 s(y'_i, y_j))[i]
      L     = L_1 + w L_t2t

- Semantic adaptive margin (Biten et al., "Is an image worth five sentences?", WACV 2022,
  eq. 7): their triplet loss uses, for a negative, the margin
  ``min(1, (CIDEr(c_pos, G_i) - CIDEr(c_neg, G_i)) / δ)`` — the further the negative's caption is
  from the anchor image's references than the positive's, the larger the margin. Here it is
  added to the negative logits of eq. 1 (an additive-margin softmax) as
  ``m_ij = m (1 - sim_ij)`` with ``sim_ij = clip(phi_neg / phi_pos, 0, 1)``, ``phi`` the
  CIDEr-like relevance of ``training.trainer.cider``::

      i2t (anchor image i, negative caption y_j): sim_ij = phi(y_j, G_i) / phi(y_i, G_i)
      t2i (anchor caption y_i, negative image j): sim_ij = phi(y_i, G_j) / phi(y_i, G_i)

  ``G_k`` the reference captions of image k (all of them, the positive included). This is
  Biten's rule with δ = phi_pos per anchor instead of a constant: a negative whose captions are
  as relevant as the positive (a near duplicate) gets no margin, one sharing nothing gets the
  full ``m``. Where ``phi_pos`` is 0 (a caption without words) nothing is known and the margin is
  0 (plain eq. 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import torch
import torch.nn.functional as functional

LossPreset = Literal["i2t", "t2t_i2t", "margin"]
LOSS_PRESETS: Final[tuple[LossPreset, ...]] = ("i2t", "t2t_i2t", "margin")
DEFAULT_T2T_WEIGHT: Final = 0.5
DEFAULT_MARGIN: Final = 0.2
# phi_pos at or below this is treated as "no information" (margin 0).
_PHI_FLOOR: Final = 1e-6


@dataclass(frozen=True)
class LossConfig:
    """Which terms the objective has.

    ``t2t_weight``: ``w`` of eq. 2 (0 = no text–text term). ``margin``: ``m`` of the adaptive
    margin in cosine units (0 = none).
    """

    t2t_weight: float = 0.0
    margin: float = 0.0

    def __post_init__(self) -> None:
        """Refuse negative weights or margins."""
        if self.t2t_weight < 0 or self.margin < 0:
            raise ValueError(f"t2t_weight and margin must be >= 0, got {self}")

    @classmethod
    def preset(
        cls,
        name: LossPreset,
        *,
        t2t_weight: float | None = None,
        margin: float | None = None,
    ) -> LossConfig:
        """The paper configurations: ``i2t`` (eq. 1, DE_I2T), ``t2t_i2t`` (eq. 1 + eq. 2,
        DE_T2T+I2T), ``margin`` (eq. 1 + adaptive margin). ``t2t_weight`` / ``margin`` override
        the preset's value (so ``--loss i2t --margin 0.1`` composes both)."""
        defaults = {
            "i2t": cls(),
            "t2t_i2t": cls(t2t_weight=DEFAULT_T2T_WEIGHT),
            "margin": cls(margin=DEFAULT_MARGIN),
        }
        base = defaults[name]
        return cls(
            t2t_weight=base.t2t_weight if t2t_weight is None else t2t_weight,
            margin=base.margin if margin is None else margin,
        )

    def describe(self) -> str:
        """A short human-readable description, e.g. ``eq1 + 1.0*eq2``."""
        parts = ["eq1 (bidirectional in-batch softmax)"]
        if self.t2t_weight > 0:
            parts.append(f"{self.t2t_weight:g} * eq2 (text-text in-batch softmax)")
        if self.margin > 0:
            parts.append(f"adaptive margin m={self.margin:g} (Biten eq7, CIDEr-like tf-idf)")
        return " + ".join(parts)


def in_batch_softmax(
    anchors: torch.Tensor,
    candidates: torch.Tensor,
    scale: torch.Tensor,
    margins: torch.Tensor | None = None,
) -> torch.Tensor:
    """One direction of eq. 1: ``-(1/b) Σ_i log softmax_j(t (s_ij + m_ij))[i]``.

    ``anchors``, ``candidates``: float ``[b, d]`` L2-normalised rows, ``candidates[i]`` the
    positive of ``anchors[i]``. ``scale``: the logit scale ``t``, a scalar tensor. ``margins``:
    float ``[b, b]`` added to the similarities before scaling (its diagonal must be 0), or None.
    Returns a scalar tensor (natural-log units, mean over the batch).
    """
    similarities = anchors @ candidates.T
    if margins is not None:
        similarities = similarities + margins
    targets = torch.arange(len(anchors), device=anchors.device)
    return functional.cross_entropy(scale * similarities, targets)


def image_text_loss(
    images: torch.Tensor,
    texts: torch.Tensor,
    scale: torch.Tensor,
    margins: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Eq. 1, both directions: ``L_i2t + L_t2i``.

    ``images``, ``texts``: float ``[b, d]`` L2-normalised, row ``i`` a matching pair. ``margins``:
    ``(m_i2t, m_t2i)`` from ``adaptive_margins``, or None. Returns a scalar tensor.
    """
    i2t_margins, t2i_margins = (None, None) if margins is None else margins
    return in_batch_softmax(images, texts, scale, i2t_margins) + in_batch_softmax(
        texts, images, scale, t2i_margins
    )


def text_text_loss(
    texts: torch.Tensor, co_texts: torch.Tensor, scale: torch.Tensor
) -> torch.Tensor:
    """Eq. 2's term, both directions: ``texts[i]`` and ``co_texts[i]`` are two captions of image
    ``i``, every other row of the other side a negative. Inputs float ``[b, d]`` L2-normalised;
    returns a scalar tensor."""
    return in_batch_softmax(texts, co_texts, scale) + in_batch_softmax(co_texts, texts, scale)


def adaptive_margins(relevance: torch.Tensor, margin: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The semantic adaptive margins ``(m_i2t, m_t2i)``, each float ``[b, b]`` with a 0 diagonal.

    ``relevance[a, c] = phi(y_a, G_c)``: the CIDEr-like relevance of batch caption ``a`` to the
    reference captions of batch image ``c`` (``CiderRelevance.phi``), values in [0, 1].
    ``margin``: ``m`` in cosine units. Formulas in the module docstring:
    ``m_i2t[i, j] = m (1 - clip(relevance[j, i] / relevance[i, i], 0, 1))`` and
    ``m_t2i[i, j] = m (1 - clip(relevance[i, j] / relevance[i, i], 0, 1))``; rows whose
    ``relevance[i, i]`` ≤ 1e-6 get 0.
    """
    if relevance.ndim != 2 or relevance.shape[0] != relevance.shape[1]:
        raise ValueError(f"relevance must be square [b, b], got {tuple(relevance.shape)}")
    positive = relevance.diagonal().unsqueeze(1)
    informative = positive > _PHI_FLOOR
    denominator = positive.clamp_min(_PHI_FLOOR)
    off_diagonal = ~torch.eye(len(relevance), dtype=torch.bool, device=relevance.device)
    keep = informative & off_diagonal
    margins = []
    for negatives in (relevance.T, relevance):
        similarity = (negatives / denominator).clamp(0.0, 1.0)
        margins.append(torch.where(keep, margin * (1.0 - similarity), 0.0))
    return margins[0], margins[1]
