"""The items of a corpus build: where each came from, what it holds, and what can be wrong.

Every record read from the inputs ends as exactly one :class:`TextItem` / :class:`ImageItem`
(to be embedded) or one :class:`BadItem` (refused or skipped, with its origin and reason), so
``read == indexed + skipped`` always holds. A reader returns them as :class:`CorpusItems`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Generic, TypeVar

from formats.field_types import FieldValue
from index_builder.field_schema import FieldSchema


class Problem(StrEnum):
    """Why an item cannot be indexed (the build report counts items per problem)."""

    MALFORMED_RECORD = "malformed_record"
    MISSING_ID = "missing_id"
    DUPLICATE_ID = "duplicate_id"
    MISSING_TEXT = "missing_text"
    EMPTY_TEXT = "empty_text"
    MISSING_PATH = "missing_path"
    MISSING_IMAGE = "missing_image"
    UNREADABLE_IMAGE = "unreadable_image"
    OVERSIZED_IMAGE = "oversized_image"
    WRONG_TYPE = "wrong_type"


@dataclass(frozen=True, slots=True)
class ItemOrigin:
    """Where an item was read: a table row (``line`` or ``row``) or a file in a folder (``path``).

    ``source`` is the table file or the image folder, as the user named it.
    """

    source: str
    line: int | None = None
    row: int | None = None
    path: str | None = None

    @property
    def location(self) -> str:
        """``file:line``, ``file:row N`` or ``folder/relative/path``."""
        if self.line is not None:
            return f"{self.source}:{self.line}"
        if self.row is not None:
            return f"{self.source}:row {self.row}"
        if self.path is not None:
            return f"{self.source.rstrip('/')}/{self.path}"
        return self.source

    def to_json(self) -> dict[str, object]:
        """The fields that are set, for the build report."""
        found: dict[str, object] = {"source": self.source}
        for name in ("line", "row", "path"):
            value = getattr(self, name)
            if value is not None:
                found[name] = value
        return found


@dataclass(frozen=True, slots=True)
class BadItem:
    """An item left out of the build (or the reason the build was refused)."""

    origin: ItemOrigin
    problem: Problem
    reason: str
    item_id: str | None = None

    def sort_key(self) -> tuple[str, int, str]:
        """Orders bad items by source, then line / row, then path."""
        origin = self.origin
        return origin.source, origin.line or origin.row or 0, origin.path or ""

    def describe(self) -> str:
        """``file:line: reason (id 'x')`` — one line for the terminal."""
        suffix = "" if self.item_id is None else f" (id {self.item_id!r})"
        return f"{self.origin.location}: {self.reason}{suffix}"

    def to_json(self) -> dict[str, object]:
        """The build report's entry for this item."""
        entry = self.origin.to_json()
        if self.item_id is not None:
            entry["id"] = self.item_id
        entry["problem"] = self.problem.value
        entry["reason"] = self.reason
        return entry


@dataclass(frozen=True, slots=True)
class TextItem:
    """A text to embed; ``metadata`` already typed (and holding ``text`` itself)."""

    item_id: str
    text: str
    origin: ItemOrigin
    metadata: dict[str, FieldValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ImageItem:
    """An image file to embed; ``metadata`` already typed (and holding ``path``)."""

    item_id: str
    file: Path
    origin: ItemOrigin
    metadata: dict[str, FieldValue] = field(default_factory=dict)


_Item = TypeVar("_Item", TextItem, ImageItem)


@dataclass
class CorpusItems(Generic[_Item]):
    """What a reader made of a corpus, for one collection.

    ``read`` counts the records read (an image file once; a sidecar row naming no image on its
    own), and ``read == len(items) + len(bad)``. ``schema`` types every metadata field; None
    for a kind that declares no types (Karpathy captions), whose stored values then type the
    fields as the bundle writer infers them (``storage.columns.infer_fields``).
    """

    items: list[_Item]
    bad: list[BadItem]
    schema: FieldSchema | None
    read: int
    notes: dict[str, object] = field(default_factory=dict)
