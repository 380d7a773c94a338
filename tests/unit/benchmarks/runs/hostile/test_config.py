"""HostileRunConfig: its refusals and the settings it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.runs.hostile.config import HostileRunConfig


def test_a_crowd_of_no_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one connection"):
        HostileRunConfig(url="http://x", data_dir=Path("d"), stalled_bodies=0, slowloris=0)


def test_a_stalled_body_must_send_less_than_it_declares() -> None:
    with pytest.raises(ValueError, match="less than it declares"):
        HostileRunConfig(url="http://x", data_dir=Path("d"), declared_bytes=10, sent_bytes=10)


def test_settings_name_everything_but_the_url_and_folders() -> None:
    settings = HostileRunConfig(url="http://x", data_dir=Path("d")).settings()
    assert settings["stalled_bodies"] == 200
    assert settings["slowloris"] == 1000
    assert "url" not in settings
    assert "data_dir" not in settings
