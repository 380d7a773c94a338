"""Short forms of counts and byte sizes."""

from __future__ import annotations

import pytest

from studies.scale_simulation.units import GIB, fmt_gib, human


@pytest.mark.parametrize(
    ("n", "text"),
    [(999, "999"), (1500, "1500"), (20_000, "20k"), (1_000_000, "1M"), (1_500_000, "1500k")],
)
def test_human(n: int, text: str) -> None:
    assert human(n) == text


def test_fmt_gib() -> None:
    assert fmt_gib(None) == "–"
    assert fmt_gib(1.5 * GIB) == "1.50"
    assert fmt_gib(0) == "0.00"
