"""The build report of a corpus build: what was read, indexed and skipped, and how fast.

Stored as ``build_report.json`` inside the bundle version folder (hashed with the other files)
and printed as a short summary. Every record read is either indexed or listed as skipped, with
its source, line / row / path, id when known, and reason: ``read == indexed + skipped``.
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
REPORT_SCHEMA_VERSION: Final = 1
SHOWN_PROBLEMS: Final = 20


@dataclass(frozen=True)
class BuildReport:
    """One build's outcome. ``timings`` in seconds (``read``, ``check``, ``embed``, ``total``)."""

    collection: str
    kind: str
    inputs: Mapping[str, object]
    on_error: str
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
                f"{self.read} records read but {self.indexed} indexed and "
                f"{len(self.skipped)} skipped"
            )

    def skipped_by_problem(self) -> dict[str, int]:
        """Skipped items per problem, most frequent first."""
        counts = Counter(item.problem.value for item in self.skipped)
        return dict(sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])))

    def throughput(self) -> dict[str, float]:
        """Items per second: embedding alone, and the whole build up to writing."""
        embed = self.timings.get("embed", 0.0)
        total = self.timings.get("total", 0.0)
        return {
            "embed_items_per_s": round(self.indexed / embed, 1) if embed > 0 else 0.0,
            "build_items_per_s": round(self.indexed / total, 1) if total > 0 else 0.0,
        }

    def build_info(self) -> dict[str, object]:
        """What a bundle manifest's ``build_info`` says of this build: the kind and inputs read,
        the collection, the counts and the bad-item policy."""
        return {
            "kind": self.kind,
            "inputs": dict(self.inputs),
            "collection": self.collection,
            "counts": {"read": self.read, "indexed": self.indexed, "skipped": len(self.skipped)},
            "on_error": self.on_error,
        }

    def to_json(self) -> dict[str, object]:
        """The report as ``build_report.json`` holds it."""
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "collection": self.collection,
            "kind": self.kind,
            "inputs": dict(self.inputs),
            "on_error": self.on_error,
            "counts": {
                "read": self.read,
                "indexed": self.indexed,
                "skipped": len(self.skipped),
            },
            "skipped_by_problem": self.skipped_by_problem(),
            "skipped": [item.to_json() for item in self.skipped],
            "fields": {name: kind.value for name, kind in self.fields.items()},
            "timings_s": {name: round(value, 3) for name, value in self.timings.items()},
            "throughput": self.throughput(),
            "notes": dict(self.notes),
        }

    def to_bytes(self) -> bytes:
        """UTF-8 JSON, indented, ending in a newline."""
        return (json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")

    def summary(self) -> list[str]:
        """A few lines for the terminal."""
        rates = self.throughput()
        lines = [
            f"{self.collection}: read {self.read}, indexed {self.indexed}, "
            f"skipped {len(self.skipped)}; embedded at {rates['embed_items_per_s']:.0f} items/s "
            f"({rates['build_items_per_s']:.0f} items/s overall)"
        ]
        if self.skipped:
            counts = ", ".join(
                f"{name} {count}" for name, count in self.skipped_by_problem().items()
            )
            lines.append(f"skipped: {counts} (listed in {REPORT_FILE})")
            lines.extend(problem_lines(self.skipped, limit=SHOWN_PROBLEMS, indent="  "))
        return lines


def problem_lines(bad: Sequence[BadItem], *, limit: int, indent: str = "") -> list[str]:
    """One line per bad item (``file:line: reason``), at most ``limit``, then a count of the
    rest."""
    lines = [indent + item.describe() for item in bad[:limit]]
    if len(bad) > limit:
        lines.append(f"{indent}... and {len(bad) - limit} more")
    return lines
