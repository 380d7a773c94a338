"""A report's JSON file: indented, strict (no NaN or Infinity), one trailing newline."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_json(report: Mapping[str, Any], path: Path) -> Path:
    """Write ``report`` as indented JSON (strict: no NaN/Infinity) and return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path
