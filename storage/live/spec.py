"""What a live collection is: its spec (``collection.json``), with one reader and one writer."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from formats.field_types import FieldType, field_name_problem

NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""A collection's name: a letter or digit, then up to 63 letters, digits, ``_``, ``.``, ``-``."""


class CollectionSpecError(ValueError):
    """A spec that cannot describe a collection (bad name, dimension or field)."""


@dataclass(frozen=True)
class CollectionSpec:
    """What a live collection is: its name, dimension, typed fields and the variant that embeds
    its texts and images (None: the client sends vectors)."""

    name: str
    dim: int
    fields: Mapping[str, FieldType]
    variant: str | None = None
    variant_fingerprint: str | None = None
    created: str = ""
    index: str = "Flat"
    """The faiss factory of the base's index (compaction builds it; IVF ones are tuned)."""
    acks: str | None = None
    """How many replicas hold a write before it is answered (leader, majority, all; None: the
    server's default)."""
    uid: str = ""
    """Tells this collection from an earlier one of the same name (a replica that holds a
    dropped one replaces it); empty for collections created before it was recorded."""

    def __post_init__(self) -> None:
        if not NAME_PATTERN.match(self.name):
            raise CollectionSpecError(
                f"collection name {self.name!r} must be 1-64 letters, digits, '_', '.' or '-', "
                "starting with a letter or digit"
            )
        if self.dim < 1:
            raise CollectionSpecError(f"dim must be at least 1, got {self.dim}")
        for name in self.fields:
            if (problem := field_name_problem(name)) is not None:
                raise CollectionSpecError(problem)

    def to_json(self) -> str:
        """The spec file's text."""
        document = {
            "name": self.name,
            "dim": self.dim,
            "fields": {name: str(kind) for name, kind in sorted(self.fields.items())},
            "variant": self.variant,
            "variant_fingerprint": self.variant_fingerprint,
            "created": self.created,
            "index": self.index,
            "uid": self.uid,
            "acks": self.acks,
        }
        return json.dumps(document, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> CollectionSpec:
        """The spec a spec file holds; :class:`CollectionSpecError` when it holds none."""
        try:
            document = json.loads(text)
            return cls(
                name=str(document["name"]),
                dim=int(document["dim"]),
                fields={str(k): FieldType(v) for k, v in document["fields"].items()},
                variant=document.get("variant"),
                variant_fingerprint=document.get("variant_fingerprint"),
                created=str(document.get("created", "")),
                index=str(document.get("index", "Flat")),
                uid=str(document.get("uid") or ""),
                acks=None if document.get("acks") is None else str(document["acks"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, CollectionSpecError):
                raise
            raise CollectionSpecError(f"not a collection spec: {exc}") from None


def now_text() -> str:
    """The current UTC time as ISO 8601, for :attr:`CollectionSpec.created`."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
