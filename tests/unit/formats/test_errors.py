"""FormatError names the file, the line and the reason, in its message and its attributes."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.errors import FormatError


@pytest.mark.parametrize(
    ("path", "line", "message"),
    [
        (Path("d/captions.csv"), 7, "d/captions.csv:7: bad value"),
        (Path("d/captions.csv"), None, "d/captions.csv: bad value"),
        (None, None, "bad value"),
    ],
)
def test_message_says_where(path: Path | None, line: int | None, message: str) -> None:
    error = FormatError("bad value", path=path, line=line)
    assert str(error) == message
    assert (error.path, error.line, error.reason) == (path, line, "bad value")


def test_is_a_value_error() -> None:
    assert issubclass(FormatError, ValueError)
