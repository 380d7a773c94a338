"""The one error a data-format reader raises: which file, which line, and why."""

from __future__ import annotations

from pathlib import Path


class FormatError(ValueError):
    """A data file (or rows read from one) does not follow its format.

    Attributes:
        reason: what is wrong, in words.
        path: the file, when the rows came from one.
        line: the 1-based physical line where the offending record starts (a quoted field may
            span several lines), when one record is at fault.
    """

    def __init__(self, reason: str, *, path: Path | None = None, line: int | None = None) -> None:
        self.reason = reason
        self.path = path
        self.line = line
        where = "" if path is None else (f"{path}:{line}: " if line is not None else f"{path}: ")
        super().__init__(f"{where}{reason}")
