"""In-memory retrieval metrics for monitoring training: i2t, t2i and t2t on original pairs.

These are quick checks on embeddings held in memory, not the project's evaluation (which runs
over HTTP against the live service, DESIGN §7). Positives are MS-COCO's original pairs:

- ``i2t``: query an image, rank all captions; positives = its own captions;
- ``t2i``: query a caption, rank all images; positive = its image;
- ``t2t``: query a caption, rank all other captions (itself excluded); positives = the other
  captions of its image (what DESIGN §7 calls ``t2t_cocaptions``, not CxC's strict ``t2t``).

Ties follow the project's rule: score descending, then row ascending. A query's rank is the
1-based position of its best-placed positive under that rule — computed by the live evaluation's
own :func:`evaluation.metrics.retrieval.first_positive_ranks`, and summarised by its
:func:`evaluation.metrics.retrieval.retrieval_metrics`.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from evaluation.metrics.retrieval import first_positive_ranks
from evaluation.metrics.retrieval import retrieval_metrics as summarise_ranks

RECALL_AT: Final = (1, 5, 10)
# Query rows per block: a block of scores is [block, candidates] float32 (25,000 captions →
# 50 MB at 512 queries).
_QUERY_BLOCK: Final = 512

Embeddings = npt.NDArray[np.float32]
Metrics = dict[str, float]


def summarise(ranks: npt.NDArray[np.int64]) -> Metrics:
    """``R@1``, ``R@5``, ``R@10`` (fractions 0-1), ``median_rank`` and ``queries``.

    Every rank is known here (all candidates are ranked), so nothing is censored.
    """
    if len(ranks) == 0:
        return {"queries": 0.0}
    depth = max(int(ranks.max()), *RECALL_AT)
    metrics = summarise_ranks(ranks.tolist(), k=depth, ks=RECALL_AT)
    summary: Metrics = {f"R@{k}": metrics.recall_at[k] for k in RECALL_AT}
    if metrics.median_rank is not None:
        summary["median_rank"] = metrics.median_rank
    summary["queries"] = float(metrics.queries)
    return summary


def retrieval_metrics(
    images: Embeddings,
    captions: Embeddings,
    caption_image: npt.NDArray[np.int64],
    *,
    include_t2t: bool = True,
) -> dict[str, Metrics]:
    """``{"i2t": ..., "t2i": ..., "t2t": ...}`` (see ``summarise``) for one split.

    ``images``: float32 ``[n_images, d]``; ``captions``: float32 ``[n_captions, d]``;
    ``caption_image[k]``: the image row of caption ``k``. Scores are dot products (cosines for
    unit rows). ``t2t`` queries only captions whose image has another caption.
    """
    if len(caption_image) != len(captions):
        raise ValueError(f"{len(caption_image)} caption owners for {len(captions)} captions")
    caption_rows = np.arange(len(captions))

    i2t: list[npt.NDArray[np.int64]] = []
    for start in range(0, len(images), _QUERY_BLOCK):
        query_rows = np.arange(start, min(start + _QUERY_BLOCK, len(images)))
        scores = images[query_rows] @ captions.T
        i2t.append(first_positive_ranks(scores, caption_image[None, :] == query_rows[:, None]))

    t2i: list[npt.NDArray[np.int64]] = []
    t2t: list[npt.NDArray[np.int64]] = []
    image_rows = np.arange(len(images))
    captions_per_image = np.bincount(caption_image, minlength=len(images))
    for start in range(0, len(captions), _QUERY_BLOCK):
        query_rows = caption_rows[start : start + _QUERY_BLOCK]
        owners = caption_image[query_rows]
        scores = captions[query_rows] @ images.T
        t2i.append(first_positive_ranks(scores, image_rows[None, :] == owners[:, None]))
        if not include_t2t:
            continue
        queried = query_rows[captions_per_image[owners] > 1]
        if len(queried) == 0:
            continue
        scores = captions[queried] @ captions.T
        itself = caption_rows[None, :] == queried[:, None]
        # The query itself is no candidate: scored below everything, it can never be ranked
        # ahead of a positive, and it is no positive.
        scores[itself] = -np.inf
        positives = (caption_image[None, :] == caption_image[queried][:, None]) & ~itself
        t2t.append(first_positive_ranks(scores, positives))

    metrics = {
        "i2t": summarise(_concatenate(i2t)),
        "t2i": summarise(_concatenate(t2i)),
    }
    if include_t2t:
        metrics["t2t"] = summarise(_concatenate(t2t))
    return metrics


def _concatenate(parts: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(parts)
