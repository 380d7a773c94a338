"""The task catalogue, and which tasks a given service and data folder can answer.

A run asks the service which collections exist (``GET /v1/collections``) and which towers the
variant has (``GET /v1/variants`` → ``towers``), looks at which data files exist, and runs only
the tasks all of whose needs are met; every other requested task is reported under
``skipped: {task: reason}``.

| task | data file | service needs |
|---|---|---|
| ``t2t``, ``t2t_cocaptions`` | STS | ``captions``; text tower (text queries) |
| ``i2t`` / ``i2t_original`` | SITS / – | ``captions``; image queries (a) |
| ``t2i`` / ``t2i_original`` | SITS / – | ``images``; text tower |
| ``i2i`` | SIS | ``images``; image queries (a) |
| ``sts`` | STS | ``captions`` (item references) |
| ``sis`` | SIS | image sides (b) |
| ``sits`` | SITS | ``captions`` or a text tower; image sides (b) |
| ``bison`` | BISON | text tower (caption text); image sides (b) |
| ``latency`` | – | ``captions``; text tower |

(a) item queries (default) need the ``images`` collection; uploads need an image tower and every
image file in the images folder. (b) the ``images`` collection, or an image tower and an images
folder (uploads). A variant whose towers cannot be learned is assumed to have both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from evaluation.data.corpus import CxcData
from formats.cxc import RatingKind

ImageQueryMode = Literal["item", "upload"]
"""How image queries are sent: ``item`` (a stored item's reference) or ``upload`` (the file)."""
IMAGE_QUERY_MODES: tuple[ImageQueryMode, ...] = ("item", "upload")
CaptionQueryMode = Literal["text", "item"]
"""How caption queries are sent: ``text`` (encoded by the service) or ``item`` (the caption's
stored vector, by reference: the same model's embedding, without encoding it again)."""
CAPTION_QUERY_MODES: tuple[CaptionQueryMode, ...] = ("text", "item")

RETRIEVAL_TASKS = ("t2t", "t2t_cocaptions", "i2t", "i2t_original", "t2i", "t2i_original", "i2i")
CORRELATION_TASKS = ("sts", "sis", "sits")
QUALITY_TASKS = (*RETRIEVAL_TASKS, *CORRELATION_TASKS, "bison")
ALL_TASKS = (*QUALITY_TASKS, "latency")

RATING_FILE_OF: Mapping[str, RatingKind] = MappingProxyType(
    {
        "t2t": RatingKind.STS,
        "t2t_cocaptions": RatingKind.STS,
        "sts": RatingKind.STS,
        "i2t": RatingKind.SITS,
        "t2i": RatingKind.SITS,
        "sits": RatingKind.SITS,
        "i2i": RatingKind.SIS,
        "sis": RatingKind.SIS,
    }
)
"""Task → the CxC rating file it needs (read-only; tasks absent here need none)."""


@dataclass(frozen=True)
class ServiceView:
    """What the service offers, as far as the planner is concerned.

    Attributes:
        collections: served collection name → item count.
        towers: the variant's towers (``{"text", "image"}``), or ``None`` when unknown.
        captions_collection: the captions collection's name.
        images_collection: the images collection's name.
        image_queries: ``item`` (query images by reference) or ``upload`` (send the bytes).
        images_dir: folder with the image files by file name, or ``None``.
        caption_queries: ``text`` (the service encodes them) or ``item`` (by reference).
    """

    collections: Mapping[str, int]
    towers: frozenset[str] | None
    captions_collection: str = "captions"
    images_collection: str = "images"
    image_queries: ImageQueryMode = "item"
    images_dir: Path | None = None
    caption_queries: CaptionQueryMode = "text"

    def has_tower(self, tower: str) -> bool:
        """Whether the variant has ``tower`` (``True`` when the towers are unknown)."""
        return self.towers is None or tower in self.towers

    @property
    def has_captions(self) -> bool:
        """Whether the captions collection is served."""
        return self.captions_collection in self.collections

    @property
    def has_images(self) -> bool:
        """Whether the images collection is served."""
        return self.images_collection in self.collections

    @property
    def can_upload(self) -> bool:
        """Whether images can be sent as uploads (image tower and an images folder)."""
        return self.has_tower("image") and self.images_dir is not None


@dataclass(frozen=True)
class TaskPlan:
    """The tasks to run (in catalogue order) and the skipped ones with their reasons."""

    run: tuple[str, ...]
    skipped: dict[str, str] = field(default_factory=dict)


def _missing_images(data: CxcData, images_dir: Path) -> int:
    return sum(1 for image in data.images if not (images_dir / image.filename).is_file())


class _Checker:
    """Evaluates needs against one service view and one data set, caching file checks."""

    def __init__(self, data: CxcData, view: ServiceView) -> None:
        self.data = data
        self.view = view
        self._missing_files: int | None = None

    def file(self, task: str) -> str | None:
        kind = RATING_FILE_OF.get(task)
        if kind is not None and kind not in self.data.ratings:
            where = self.data.missing.get(kind.value)
            return f"no {kind.value.upper()} file" + (f" ({where})" if where else "")
        if task == "bison" and self.data.bison is None:
            where = self.data.missing.get("bison")
            return "no BISON file" + (f" ({where})" if where else "")
        return None

    def collection(self, name: str) -> str | None:
        if name in self.view.collections:
            return None
        return f"the service has no {name!r} collection"

    def tower(self, tower: str) -> str | None:
        return None if self.view.has_tower(tower) else f"the variant has no {tower} tower"

    def image_queries(self) -> str | None:
        view = self.view
        if view.image_queries == "item":
            return self.collection(view.images_collection)
        if view.images_dir is None:
            return "image uploads need --images-dir"
        reason = self.tower("image")
        if reason is not None:
            return reason
        if self._missing_files is None:
            self._missing_files = _missing_images(self.data, view.images_dir)
        if self._missing_files:
            return (
                f"{self._missing_files} of {len(self.data.images)} image files are missing "
                f"under {view.images_dir}"
            )
        return None

    def caption_queries(self) -> str | None:
        view = self.view
        if view.caption_queries == "item":
            return self.collection(view.captions_collection)
        return self.tower("text")

    def image_sides(self) -> str | None:
        view = self.view
        if view.has_images or view.can_upload:
            return None
        return (
            f"the service has no {view.images_collection!r} collection and images cannot be "
            "uploaded (needs an image tower and --images-dir)"
        )

    def reason(self, task: str) -> str | None:
        view = self.view
        needs: list[str | None] = [self.file(task)]
        if task in ("t2t", "t2t_cocaptions"):
            needs += [self.collection(view.captions_collection), self.caption_queries()]
        elif task == "latency":
            needs += [self.collection(view.captions_collection), self.tower("text")]
        elif task in ("t2i", "t2i_original"):
            needs += [self.collection(view.images_collection), self.caption_queries()]
        elif task in ("i2t", "i2t_original"):
            needs += [self.collection(view.captions_collection), self.image_queries()]
        elif task == "i2i":
            needs += [self.collection(view.images_collection), self.image_queries()]
        elif task == "sts":
            needs.append(self.collection(view.captions_collection))
        elif task == "sis":
            needs.append(self.image_sides())
        elif task == "sits":
            if not view.has_captions:
                needs.append(self.tower("text"))
            needs.append(self.image_sides())
        elif task == "bison":
            needs += [self.tower("text"), self.image_sides()]
        else:
            return f"unknown task {task!r}"
        return next((need for need in needs if need is not None), None)


def plan_tasks(requested: Sequence[str], data: CxcData, view: ServiceView) -> TaskPlan:
    """Split the requested tasks into those to run and those to skip (with the reason).

    Args:
        requested: task names from :data:`ALL_TASKS`.
        data: the split's loaded data.
        view: what the service serves.

    Returns:
        The plan; ``run`` keeps :data:`ALL_TASKS` order.
    """
    checker = _Checker(data, view)
    run: list[str] = []
    skipped: dict[str, str] = {}
    for task in ALL_TASKS:
        if task not in requested:
            continue
        reason = checker.reason(task)
        if reason is None:
            run.append(task)
        else:
            skipped[task] = reason
    return TaskPlan(run=tuple(run), skipped=skipped)
