"""JSON written atomically."""

from __future__ import annotations

import json
from pathlib import Path

from studies.scale_simulation.json_files import write_json


def test_json_is_sorted_indented_and_replaces_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text("old")
    write_json(path, {"b": 1, "a": [1, 2]})
    assert path.read_text() == json.dumps({"a": [1, 2], "b": 1}, indent=2) + "\n"
    assert list(tmp_path.iterdir()) == [path]
