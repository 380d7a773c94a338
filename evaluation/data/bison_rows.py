"""Which BISON rows a run can score, and with which image sides.

A BISON row (:class:`formats.bison.BisonRow`) names its images by number; the service knows
images by file name, so :class:`ImageNamer` maps an id to a file name — through the captions
file where the image is in the split, else through the file-name pattern the captions file uses
(``COCO_val2014_`` + 12-digit id + ``.jpg`` for COCO, ``scenes_<split>_`` + 12 digits + ``.png``
for the scenes corpus). :func:`plan_bison` then resolves each row's two images to sides by the
caller's rule (:class:`benchmarks.drivers.query_sides.ImageSides`: item reference when served,
upload when the file is there) and skips, counting by reason, the rows it cannot score. The
accuracy itself is :func:`evaluation.metrics.bison.bison_accuracy`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from formats.bison import BisonRow
from formats.ids import COCO_VAL2014_PATTERN, image_filename, infer_filename_pattern
from formats.karpathy import ImageEntry

SideT = TypeVar("SideT")


@dataclass(frozen=True)
class ImageNamer:
    """Maps a numeric image id to the file name the service and the images folder use.

    Attributes:
        by_id: the split's images (from the captions file), id → file name.
        pattern: ``(prefix, suffix)`` for ids outside the split (``prefix + f"{id:012d}" +
            suffix``), or ``None`` to leave them unnamed.
    """

    by_id: dict[int, str]
    pattern: tuple[str, str] | None

    @classmethod
    def from_images(cls, images: Sequence[ImageEntry], dataset: str) -> ImageNamer:
        """The namer of a split: its own images, and the pattern its file names follow; for the
        ``coco-karpathy`` dataset, COCO val2014's pattern when none can be inferred."""
        pattern = infer_filename_pattern((image.filename, image.image_id) for image in images)
        if pattern is None and dataset == "coco-karpathy":
            pattern = COCO_VAL2014_PATTERN
        return cls(by_id={image.image_id: image.filename for image in images}, pattern=pattern)

    def __call__(self, image_id: int) -> str | None:
        """The file name of ``image_id``, or ``None`` when it cannot be named."""
        name = self.by_id.get(image_id)
        if name is None and self.pattern is not None:
            name = image_filename(self.pattern, image_id)
        return name


@dataclass
class BisonPlan(Generic[SideT]):
    """The scorable rows of a BISON file and the sides to score.

    Attributes:
        rows: indices (into the file's rows) of the rows to score.
        captions: per scored row, its caption text.
        true_sides: per scored row, the side of its true image.
        other_sides: per scored row, the side of its other image.
        skipped: rows left out, by reason (``unnamed_image``: an id with no file name;
            ``image_unavailable``: an image neither served nor uploadable).
        total: rows in the file.
    """

    rows: list[int] = field(default_factory=list)
    captions: list[str] = field(default_factory=list)
    true_sides: list[SideT] = field(default_factory=list)
    other_sides: list[SideT] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    total: int = 0


def plan_bison(
    rows: Sequence[BisonRow],
    namer: Callable[[int], str | None],
    side_of: Callable[[str], SideT | None],
) -> BisonPlan[SideT]:
    """Resolve each row's two images to sides; rows with an unresolvable image are skipped.

    Args:
        rows: the BISON rows.
        namer: image id → file name (``None`` when unknown).
        side_of: file name → the side to score it by, or ``None`` when unavailable.
    """
    plan: BisonPlan[SideT] = BisonPlan(total=len(rows))
    for index, row in enumerate(rows):
        names = (namer(row.true_image_id), namer(row.other_image_id))
        if names[0] is None or names[1] is None:
            plan.skipped["unnamed_image"] = plan.skipped.get("unnamed_image", 0) + 1
            continue
        true_side, other_side = side_of(names[0]), side_of(names[1])
        if true_side is None or other_side is None:
            plan.skipped["image_unavailable"] = plan.skipped.get("image_unavailable", 0) + 1
            continue
        plan.rows.append(index)
        plan.captions.append(row.caption)
        plan.true_sides.append(true_side)
        plan.other_sides.append(other_side)
    return plan
