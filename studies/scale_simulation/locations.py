"""Where the simulation finds its input and puts its output in this checkout by default."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # studies/scale_simulation/ -> the checkout
BUNDLE = REPO / "artifacts" / "bundles" / "coco-captions"
CACHE = REPO / "artifacts" / "scale"
REPORT = REPO / "reports" / "scale"
