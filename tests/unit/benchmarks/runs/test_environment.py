"""The client machine's facts every report records."""

from __future__ import annotations

from benchmarks.runs.environment import environment_info, load_average


def test_environment_and_load_average() -> None:
    assert set(environment_info()) == {"cpu_count", "platform", "python", "machine"}
    average = load_average()
    assert average is None or len(average) == 3
