"""The replica settings: the URL others reach a server at, and the combinations refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from service.settings import Settings


def test_the_own_url_is_the_advertised_one_else_host_and_port() -> None:
    assert Settings(port=8123).own_url == "http://127.0.0.1:8123"
    assert Settings(advertise_url="http://a:1").own_url == "http://a:1"


def test_a_follower_needs_a_collections_dir(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="collections_dir"):
        Settings(follow="http://127.0.0.1:9")
    assert Settings(follow="http://127.0.0.1:9", collections_dir=tmp_path).follow


def test_following_its_own_url_is_allowed_one_setting_for_every_member(tmp_path: Path) -> None:
    settings = Settings(follow="http://127.0.0.1:8000/", collections_dir=tmp_path)
    assert settings.follow == "http://127.0.0.1:8000/"  # the engine then leads


@pytest.mark.parametrize("size", [0, 10])
def test_the_replica_set_size_is_bounded(size: int) -> None:
    with pytest.raises(ValidationError):
        Settings(replica_set_size=size)
