"""Retrieval tasks: which queries to send and which items count as positives (DESIGN §7).

A :class:`RetrievalTask` is pure ground truth — the queries in a fixed order, each query's
positive set, and whether the query itself must be excluded from its own ranking. It knows
nothing about HTTP; the replay turns it into requests and the metrics turn the answers into
numbers.

Ids: captions are CxC caption keys (``COCO_val2014:sentid:N``), images are file names
(``COCO_val2014_000000XXXXXX.jpg``) — the ids of the service's ``captions`` and ``images``
collections. Queries are always listed in their collection's row order (captions-file order;
for images, order of first appearance in the captions file).

| task | queries | positives | query excluded |
|---|---|---|---|
| ``t2t`` | captions with an STS partner ≥ 3 | those partners | yes |
| ``t2t_cocaptions`` | the ``t2t`` queries | partners + the other captions of the image | yes |
| ``i2t`` | images with a SITS caption ≥ 3 | those captions | no |
| ``t2i`` | captions with a SITS image ≥ 3 | those images | no |
| ``i2t_original`` | every image | its own captions (captions file) | no |
| ``t2i_original`` | every caption | its own image (captions file) | no |
| ``i2i`` | images with an SIS partner ≥ 2.5 | those partners | yes |

Thresholds are inclusive. Queries without a positive are skipped (eccv-caption's convention);
the ``*_original`` tasks (MS-COCO's protocol) keep every query.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from formats.cxc import Rating
from formats.karpathy import CaptionRecord, ImageEntry, images_of_captions


@dataclass(frozen=True)
class RetrievalTask:
    """One retrieval task over one target collection.

    Attributes:
        name: the report key, e.g. ``"t2t"``.
        query_collection: the collection the query ids belong to (``"captions"``).
        target_collection: the collection ranked for every query (``"captions"``).
        queries: the query ids, in a fixed order (the query collection's row order).
        positives: for every query id, its non-empty set of positive target ids.
        exclude_query: whether the query id is excluded from its own ranking (same-collection
            tasks such as t2t and i2i).
    """

    name: str
    query_collection: str
    target_collection: str
    queries: tuple[str, ...]
    positives: Mapping[str, frozenset[str]]
    exclude_query: bool

    def limited(self, limit: int | None) -> RetrievalTask:
        """The same task with only the first ``limit`` queries (all of them when ``None``)."""
        if limit is None or limit >= len(self.queries):
            return self
        queries = self.queries[:limit]
        return RetrievalTask(
            name=self.name,
            query_collection=self.query_collection,
            target_collection=self.target_collection,
            queries=queries,
            positives={query: self.positives[query] for query in queries},
            exclude_query=self.exclude_query,
        )


def rated_partners(ratings: Iterable[Rating], threshold: float) -> dict[str, set[str]]:
    """Symmetric partner sets from same-collection ratings (STS or SIS).

    A pair whose ``agg_score`` is at least ``threshold`` (inclusive) makes each side a partner
    of the other. Pairs of an item with itself are ignored.

    Returns:
        item id → set of partner ids, only for items with at least one partner.
    """
    partners: dict[str, set[str]] = defaultdict(set)
    for rating in ratings:
        if rating.agg_score >= threshold and rating.item1 != rating.item2:
            partners[rating.item1].add(rating.item2)
            partners[rating.item2].add(rating.item1)
    return dict(partners)


def _check_known(ids: Iterable[str], known: Mapping[str, object], what: str) -> None:
    unknown = sorted({item for item in ids if item not in known})
    if unknown:
        raise ValueError(
            f"{len(unknown)} {what} id(s) are not in the captions file, e.g. {unknown[:3]}"
        )


def t2t_task(
    sts: Iterable[Rating], captions: list[CaptionRecord], threshold: float = 3.0
) -> RetrievalTask:
    """The strict CxC text→text task.

    Queries are the captions with at least one STS partner scoring ``≥ threshold``, in the
    captions file's row order; positives are those partners; the query is excluded from its
    own ranking.

    Raises:
        ValueError: a rated caption id is not in ``captions``.
    """
    row_of = {caption.key: caption.row for caption in captions}
    partners = rated_partners(sts, threshold)
    _check_known(partners, row_of, "STS caption")
    queries = tuple(sorted(partners, key=row_of.__getitem__))
    return RetrievalTask(
        name="t2t",
        query_collection="captions",
        target_collection="captions",
        queries=queries,
        positives={query: frozenset(partners[query]) for query in queries},
        exclude_query=True,
    )


def t2t_cocaptions_task(
    sts: Iterable[Rating], captions: list[CaptionRecord], threshold: float = 3.0
) -> RetrievalTask:
    """Text→text with co-captions: the :func:`t2t_task` queries, whose positives are the STS
    partners plus the other captions of the query's image (rated or not).

    Raises:
        ValueError: a rated caption id is not in ``captions``.
    """
    strict = t2t_task(sts, captions, threshold)
    image_of = {caption.key: caption.image_id for caption in captions}
    captions_of_image: dict[int, set[str]] = defaultdict(set)
    for caption in captions:
        captions_of_image[caption.image_id].add(caption.key)
    positives = {
        query: frozenset(strict.positives[query] | (captions_of_image[image_of[query]] - {query}))
        for query in strict.queries
    }
    return RetrievalTask(
        name="t2t_cocaptions",
        query_collection="captions",
        target_collection="captions",
        queries=strict.queries,
        positives=positives,
        exclude_query=True,
    )


def cross_partners(ratings: Iterable[Rating], threshold: float) -> dict[str, set[str]]:
    """Directed partner sets from cross-collection ratings (SITS: caption → image).

    A pair whose ``agg_score`` is at least ``threshold`` (inclusive) makes ``item2`` a partner
    of ``item1``.

    Returns:
        ``item1`` id → set of ``item2`` ids, only for items with at least one partner.
    """
    partners: dict[str, set[str]] = defaultdict(set)
    for rating in ratings:
        if rating.agg_score >= threshold:
            partners[rating.item1].add(rating.item2)
    return dict(partners)


def _invert(partners: Mapping[str, set[str]]) -> dict[str, set[str]]:
    inverted: dict[str, set[str]] = defaultdict(set)
    for left, rights in partners.items():
        for right in rights:
            inverted[right].add(left)
    return dict(inverted)


def _images(captions: list[CaptionRecord], images: list[ImageEntry] | None) -> list[ImageEntry]:
    return images_of_captions(captions) if images is None else images


def i2t_task(
    sits: Iterable[Rating],
    captions: list[CaptionRecord],
    threshold: float = 3.0,
    images: list[ImageEntry] | None = None,
) -> RetrievalTask:
    """The CxC image→text task.

    Queries are the images with at least one SITS caption scoring ``≥ threshold``, in image row
    order; positives are those captions. Images without such a caption are skipped.

    Args:
        sits: SITS ratings (``item1`` = caption key, ``item2`` = image file name).
        captions: the split's captions (row order).
        threshold: inclusive positive threshold (CxC: 3).
        images: the split's images; derived from ``captions`` when ``None``.

    Raises:
        ValueError: a rated caption or image id is not in the captions file.
    """
    image_list = _images(captions, images)
    row_of_image = {image.filename: image.row for image in image_list}
    by_caption = cross_partners(sits, threshold)
    _check_known(by_caption, {caption.key: caption.row for caption in captions}, "SITS caption")
    by_image = _invert(by_caption)
    _check_known(by_image, row_of_image, "SITS image")
    queries = tuple(sorted(by_image, key=row_of_image.__getitem__))
    return RetrievalTask(
        name="i2t",
        query_collection="images",
        target_collection="captions",
        queries=queries,
        positives={query: frozenset(by_image[query]) for query in queries},
        exclude_query=False,
    )


def t2i_task(
    sits: Iterable[Rating],
    captions: list[CaptionRecord],
    threshold: float = 3.0,
    images: list[ImageEntry] | None = None,
) -> RetrievalTask:
    """The CxC text→image task.

    Queries are the captions with at least one SITS image scoring ``≥ threshold``, in caption
    row order; positives are those images. Captions without such an image are skipped.

    Raises:
        ValueError: a rated caption or image id is not in the captions file.
    """
    image_list = _images(captions, images)
    row_of_caption = {caption.key: caption.row for caption in captions}
    by_caption = cross_partners(sits, threshold)
    _check_known(by_caption, row_of_caption, "SITS caption")
    _check_known(
        {image for rights in by_caption.values() for image in rights},
        {image.filename: image.row for image in image_list},
        "SITS image",
    )
    queries = tuple(sorted(by_caption, key=row_of_caption.__getitem__))
    return RetrievalTask(
        name="t2i",
        query_collection="captions",
        target_collection="images",
        queries=queries,
        positives={query: frozenset(by_caption[query]) for query in queries},
        exclude_query=False,
    )


def i2t_original_task(
    captions: list[CaptionRecord], images: list[ImageEntry] | None = None
) -> RetrievalTask:
    """MS-COCO's image→text protocol: every image is a query; positives = its own captions."""
    image_list = _images(captions, images)
    return RetrievalTask(
        name="i2t_original",
        query_collection="images",
        target_collection="captions",
        queries=tuple(image.filename for image in image_list),
        positives={image.filename: frozenset(image.captions) for image in image_list},
        exclude_query=False,
    )


def t2i_original_task(captions: list[CaptionRecord]) -> RetrievalTask:
    """MS-COCO's text→image protocol: every caption is a query; its positive = its own image."""
    return RetrievalTask(
        name="t2i_original",
        query_collection="captions",
        target_collection="images",
        queries=tuple(caption.key for caption in captions),
        positives={caption.key: frozenset({caption.filename}) for caption in captions},
        exclude_query=False,
    )


def i2i_task(
    sis: Iterable[Rating],
    captions: list[CaptionRecord],
    threshold: float = 2.5,
    images: list[ImageEntry] | None = None,
) -> RetrievalTask:
    """The CxC image→image task.

    Queries are the images with at least one SIS partner scoring ``≥ threshold`` (a pair makes
    each side a partner of the other; self pairs are ignored), in image row order; positives
    are those partners; the query is excluded from its own ranking.

    Raises:
        ValueError: a rated image id is not in the captions file.
    """
    row_of_image = {image.filename: image.row for image in _images(captions, images)}
    partners = rated_partners(sis, threshold)
    _check_known(partners, row_of_image, "SIS image")
    queries = tuple(sorted(partners, key=row_of_image.__getitem__))
    return RetrievalTask(
        name="i2i",
        query_collection="images",
        target_collection="images",
        queries=queries,
        positives={query: frozenset(partners[query]) for query in queries},
        exclude_query=True,
    )
