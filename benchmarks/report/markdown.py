"""Markdown building blocks shared by the reports (quality, load, comparison): tables and cells."""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines of a Markdown table: ``header`` cells, then one line per row of cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def cell(
    value: object,
    digits: int = 1,
    *,
    scale: float = 1.0,
    true: str = "True",
    false: str = "False",
) -> str:
    """A table cell: ``–`` for ``None``, a boolean as ``true`` / ``false``, an int as it is, a
    float times ``scale`` with ``digits`` decimals, anything else as its string."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return true if value else false
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value * scale:.{digits}f}"
    return str(value)
