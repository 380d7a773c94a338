"""The false-negative view: top-K results MS-COCO counts as wrong that CxC or CIDEr-D rates as
relevant (the CxC paper's Figures 7 and 8, for any model).

For one direction (i2t or t2i) every query's top-K results are labelled:

- **COCO wrong**: the result is not in the query's MS-COCO ground truth (an image's own
  captions / a caption's own image) — what binary Recall@K punishes;
- **CxC relevant**: CxC's SITS rating of the (caption, image) pair is ≥ the threshold (3, the
  CxC positive threshold). CxC rates only a sample of pairs, so an unrated pair is unknown, not
  irrelevant: the CxC share is a lower bound;
- **CIDEr-D relevant**: the result is among the query's ``m`` non-GT targets with the largest
  CIDEr-D (``rel_m`` of the non-GT semantic recall, :mod:`evaluation.metrics.semantic`).

Shares are over all top-K results of the direction's queries (``results@K`` = queries × K,
fewer when a list is shorter): ``wrong@K`` (COCO wrong), ``wrong_cxc@K`` (COCO wrong and CxC
relevant), ``wrong_cider@K`` (COCO wrong and CIDEr-D relevant), ``wrong_either@K`` (either),
``wrong_cxc_rated@K`` (COCO wrong and rated by CxC at all). The examples are the strongest
COCO-wrong results rated relevant: CxC score descending (unrated last), then CIDEr-D
descending, then query order and rank; one per query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FALSE_NEGATIVE_KS: tuple[int, ...] = (1, 5, 10)
DEFAULT_EXAMPLES = 8


@dataclass(frozen=True)
class LabelledResult:
    """One top-K result of a query with its labels.

    Attributes:
        query: the query id (image file name or caption key).
        target: the retrieved id.
        rank: its 1-based rank in the service's list.
        coco_positive: whether MS-COCO pairs it with the query.
        cxc_score: CxC's aggregated SITS score of the pair (0–5), ``None`` when unrated.
        cider_d: CIDEr-D of the pair.
        cider_relevant: whether it is among the query's top-m non-GT targets by CIDEr-D.
    """

    query: str
    target: str
    rank: int
    coco_positive: bool
    cxc_score: float | None
    cider_d: float
    cider_relevant: bool

    def cxc_relevant(self, threshold: float) -> bool:
        """Whether CxC rates the pair at least ``threshold``."""
        return self.cxc_score is not None and self.cxc_score >= threshold


def false_negative_view(
    results: Sequence[LabelledResult],
    queries: int,
    *,
    cxc_threshold: float,
    cider_m: int,
    ks: Sequence[int] = FALSE_NEGATIVE_KS,
    examples: int = DEFAULT_EXAMPLES,
    texts: dict[str, str] | None = None,
) -> dict[str, object]:
    """The ``false_negatives.<direction>`` report entry.

    Args:
        results: every query's labelled results down to rank ``max(ks)`` (any order).
        queries: how many queries the results come from.
        cxc_threshold: CxC's inclusive relevance threshold.
        cider_m: the ``m`` of the CIDEr-D relevance.
        ks: the cut-offs.
        examples: how many examples to list.
        texts: caption key → text, to show captions in the examples.

    Returns:
        ``queries``, ``cxc_threshold``, ``cider_m``, per K ``results@K`` and the shares
        (fractions 0–1, ``None`` without results) ``wrong@K``, ``wrong_cxc@K``,
        ``wrong_cider@K``, ``wrong_either@K``, ``wrong_cxc_rated@K``; ``examples``: dicts with
        ``query``, ``retrieved``, ``rank``, ``cxc_score``, ``cider_d``, ``coco_label``
        (``"wrong"``) and the caption text of whichever side is a caption.
    """
    entry: dict[str, object] = {
        "queries": queries,
        "cxc_threshold": cxc_threshold,
        "cider_m": cider_m,
    }
    for cut in ks:
        top = [result for result in results if result.rank <= cut]
        wrong = [result for result in top if not result.coco_positive]
        cxc = [result for result in wrong if result.cxc_relevant(cxc_threshold)]
        cider = [result for result in wrong if result.cider_relevant]
        either = [r for r in wrong if r.cider_relevant or r.cxc_relevant(cxc_threshold)]
        rated = [result for result in wrong if result.cxc_score is not None]
        total = len(top)
        entry[f"results@{cut}"] = total
        for name, chosen in (
            ("wrong", wrong),
            ("wrong_cxc", cxc),
            ("wrong_cider", cider),
            ("wrong_either", either),
            ("wrong_cxc_rated", rated),
        ):
            entry[f"{name}@{cut}"] = len(chosen) / total if total else None
    entry["examples"] = strongest_examples(results, cxc_threshold, examples, texts or {})
    return entry


def strongest_examples(
    results: Sequence[LabelledResult],
    cxc_threshold: float,
    count: int,
    texts: dict[str, str],
) -> list[dict[str, object]]:
    """The ``count`` strongest COCO-wrong results that CxC or CIDEr-D rates relevant, one per
    query: CxC score descending (unrated last), then CIDEr-D descending; the first query (in
    ``results`` order) and the best rank win remaining ties."""
    order_of: dict[str, int] = {}
    for result in results:
        order_of.setdefault(result.query, len(order_of))
    flagged = [
        result
        for result in results
        if not result.coco_positive
        and (result.cider_relevant or result.cxc_relevant(cxc_threshold))
    ]
    flagged.sort(
        key=lambda r: (
            r.cxc_score is None,
            -(r.cxc_score or 0.0),
            -r.cider_d,
            order_of[r.query],
            r.rank,
        )
    )
    chosen: list[dict[str, object]] = []
    seen: set[str] = set()
    for result in flagged:
        if result.query in seen:
            continue
        seen.add(result.query)
        example: dict[str, object] = {
            "query": result.query,
            "retrieved": result.target,
            "rank": result.rank,
            "cxc_score": result.cxc_score,
            "cider_d": round(result.cider_d, 4),
            "coco_label": "wrong",
        }
        caption = texts.get(result.query, texts.get(result.target))
        if caption is not None:
            example["caption"] = caption
        chosen.append(example)
        if len(chosen) == count:
            break
    return chosen
