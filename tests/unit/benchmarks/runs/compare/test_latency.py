"""How the rows (variants or lever settings) took turns, as ``compare.json`` records it."""

from __future__ import annotations

from pathlib import Path

from benchmarks.runs.compare.config import CompareConfig
from benchmarks.runs.compare.latency import latency_schedule
from benchmarks.runs.compare.levers import parse_setting


def test_schedule_modes() -> None:
    config = CompareConfig(
        url="http://x", data_dir=Path("d"), variants=("a", "b"), rounds=2, latency_requests=5
    )
    schedule = latency_schedule(config, [["a", "b"], ["b", "a"]])
    assert schedule["mode"] == "interleaved"
    assert schedule["chunk_requests"] == [3, 2]
    assert schedule["orders"] == [["a", "b"], ["b", "a"]]
    alone = CompareConfig(url="http://x", data_dir=Path("d"), variants=("a",))
    assert latency_schedule(alone, [])["mode"] == "back_to_back"
    assert "variants take turns" in schedule["note"]


def test_settings_take_turns_like_variants() -> None:
    rows = (parse_setting("a=mode:dense"), parse_setting("b=mode:lexical"))
    config = CompareConfig(url="http://x", data_dir=Path("d"), lever_settings=rows, rounds=2)
    schedule = latency_schedule(config, [["a", "b"], ["b", "a"]])
    assert schedule["mode"] == "interleaved"
    assert "the settings take turns" in schedule["note"]
    alone = CompareConfig(url="http://x", data_dir=Path("d"), lever_settings=rows[:1])
    assert latency_schedule(alone, [])["note"].startswith("per level, each setting's requests")
