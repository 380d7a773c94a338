"""Report JSON files are strict: no NaN or Infinity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.report.json_file import write_json


def test_indented_and_strict(tmp_path: Path) -> None:
    path = write_json({"a": [1, 2.5], "b": None}, tmp_path / "deep" / "r.json")
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": [1, 2.5], "b": None}
    assert path.read_text(encoding="utf-8").endswith("}\n")
    with pytest.raises(ValueError, match="JSON compliant"):
        write_json({"a": float("nan")}, tmp_path / "nan.json")
