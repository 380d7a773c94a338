"""The build report of a corpus build: what was read, indexed and skipped, and how fast — for
the whole build and for each collection it wrote.

Stored as ``build_report.json`` inside the bundle version folder (hashed with the other files)
and printed as a short summary. Every record read is either indexed or listed as skipped, with
its source, line / row / path, id when known, and reason: ``read == indexed + skipped`` for
each collection, and so for the build.

Schema version 2 (version 1 described a single collection at the top level)::

    {"schema_version": 2, "kind", "inputs", "on_error",
     "counts": {"read", "indexed", "skipped"},          # over every collection
     "timings_s": {"read", "check", "embed", "total"},  # stages summed over the collections
     "throughput": {"embed_items_per_s", "build_items_per_s"},
     "notes": {...},                                    # of the build (e.g. "ray")
     "collections": {NAME: {"counts", "skipped_by_problem", "skipped", "fields",
                            "timings_s", "throughput", "notes"}}}
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from formats.field_types import FieldType
from index_builder.items import BadItem

REPORT_FILE: Final = "build_report.json"
REPORT_SCHEMA_VERSION: Final = 2
SHOWN_PROBLEMS: Final = 20
_STAGES: Final = ("read", "check", "embed")


def _rate(items: int, seconds: float) -> float:
    return round(items / seconds, 1) if seconds > 0 else 0.0


def _counts(read: int, indexed: int, skipped: int) -> dict[str, int]:
    return {"read": read, "indexed": indexed, "skipped": skipped}


@dataclass(frozen=True)
class CollectionReport:
    """One collection of a build. ``timings`` in seconds, per stage spent on this collection
    (``read``, ``check`` for images, ``embed``)."""

    name: str
    read: int
    indexed: int
    skipped: Sequence[BadItem]
    fields: Mapping[str, FieldType]
    timings: Mapping[str, float]
    notes: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """No record may vanish: every one read is indexed or skipped."""
        if self.read != self.indexed + len(self.skipped):
            raise ValueError(
                f"{self.name}: {self.read} records read but {self.indexed} indexed and "
                f"{len(self.skipped)} skipped"
            )

    def skipped_by_problem(self) -> dict[str, int]:
        """Skipped items per problem, most frequent first."""
        counts = Counter(item.problem.value for item in self.skipped)
        return dict(sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])))

    def throughput(self) -> dict[str, float]:
        """Items per second: embedding alone, and this collection's stages together."""
        return {
            "embed_items_per_s": _rate(self.indexed, self.timings.get("embed", 0.0)),
            "build_items_per_s": _rate(self.indexed, sum(self.timings.values())),
        }

    def to_json(self) -> dict[str, object]:
        """The collection's entry in ``build_report.json``."""
        return {
            "counts": _counts(self.read, self.indexed, len(self.skipped)),
            "skipped_by_problem": self.skipped_by_problem(),
            "skipped": [item.to_json() for item in self.skipped],
            "fields": {name: kind.value for name, kind in self.fields.items()},
            "timings_s": {name: round(value, 3) for name, value in self.timings.items()},
            "throughput": self.throughput(),
            "notes": dict(self.notes),
        }


@dataclass(frozen=True)
class BuildReport:
    """One build's outcome: the corpus kind and inputs, the bad-item policy, each collection
    in bundle order, and ``total``: the seconds from the start to the moment of writing."""

    kind: str
    inputs: Mapping[str, object]
    on_error: str
    collections: Sequence[CollectionReport]
    total: float
    notes: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [collection.name for collection in self.collections]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"a build report needs distinct collections, got {names}")

    def collection(self, name: str) -> CollectionReport:
        """The report of collection ``name`` (``KeyError`` when the build wrote none)."""
        for collection in self.collections:
            if collection.name == name:
                return collection
        raise KeyError(name)

    @property
    def read(self) -> int:
        """Records read, over every collection."""
        return sum(collection.read for collection in self.collections)

    @property
    def indexed(self) -> int:
        """Items indexed, over every collection."""
        return sum(collection.indexed for collection in self.collections)

    @property
    def skipped(self) -> list[BadItem]:
        """Items skipped, collection after collection."""
        return [item for collection in self.collections for item in collection.skipped]

    def counts(self) -> dict[str, int]:
        """``read``, ``indexed`` and ``skipped`` over every collection."""
        return _counts(self.read, self.indexed, len(self.skipped))

    def timings(self) -> dict[str, float]:
        """Each stage's seconds summed over the collections, then ``total``."""
        summed: dict[str, float] = dict.fromkeys(_STAGES, 0.0)
        for collection in self.collections:
            for stage, seconds in collection.timings.items():
                summed[stage] = summed.get(stage, 0.0) + seconds
        ran = {stage for collection in self.collections for stage in collection.timings}
        return {**{stage: s for stage, s in summed.items() if stage in ran}, "total": self.total}

    def throughput(self) -> dict[str, float]:
        """Items per second over every collection: embedding alone, and the whole build up to
        writing."""
        return {
            "embed_items_per_s": _rate(self.indexed, self.timings().get("embed", 0.0)),
            "build_items_per_s": _rate(self.indexed, self.total),
        }

    def build_info(self) -> dict[str, object]:
        """What a bundle manifest's ``build_info`` says of this build: the kind and inputs read,
        the counts over every collection and per collection, and the bad-item policy."""
        return {
            "kind": self.kind,
            "inputs": dict(self.inputs),
            "counts": self.counts(),
            "collections": {
                collection.name: _counts(
                    collection.read, collection.indexed, len(collection.skipped)
                )
                for collection in self.collections
            },
            "on_error": self.on_error,
        }

    def to_json(self) -> dict[str, object]:
        """The report as ``build_report.json`` holds it (see the module)."""
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "kind": self.kind,
            "inputs": dict(self.inputs),
            "on_error": self.on_error,
            "counts": self.counts(),
            "timings_s": {name: round(value, 3) for name, value in self.timings().items()},
            "throughput": self.throughput(),
            "notes": dict(self.notes),
            "collections": {
                collection.name: collection.to_json() for collection in self.collections
            },
        }

    def to_bytes(self) -> bytes:
        """UTF-8 JSON, indented, ending in a newline."""
        return (json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")

    def summary(self) -> list[str]:
        """A few lines for the terminal: per collection its counts, speed and first skipped
        items; with more than one collection, the build's total last."""
        lines: list[str] = []
        for collection in self.collections:
            rates = collection.throughput()
            lines.append(
                f"{collection.name}: read {collection.read}, indexed {collection.indexed}, "
                f"skipped {len(collection.skipped)}; embedded at "
                f"{rates['embed_items_per_s']:.0f} items/s "
                f"({rates['build_items_per_s']:.0f} items/s overall)"
            )
            if collection.skipped:
                counts = ", ".join(
                    f"{name} {count}" for name, count in collection.skipped_by_problem().items()
                )
                lines.append(f"skipped: {counts} (listed in {REPORT_FILE})")
                lines.extend(problem_lines(collection.skipped, limit=SHOWN_PROBLEMS, indent="  "))
        if len(self.collections) > 1:
            lines.append(
                f"total: read {self.read}, indexed {self.indexed}, skipped {len(self.skipped)} "
                f"in {self.total:.1f} s ({self.throughput()['build_items_per_s']:.0f} items/s)"
            )
        return lines


def problem_lines(bad: Sequence[BadItem], *, limit: int, indent: str = "") -> list[str]:
    """One line per bad item (``file:line: reason``), at most ``limit``, then a count of the
    rest."""
    lines = [indent + item.describe() for item in bad[:limit]]
    if len(bad) > limit:
        lines.append(f"{indent}... and {len(bad) - limit} more")
    return lines
