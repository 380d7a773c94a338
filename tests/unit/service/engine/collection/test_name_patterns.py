"""The name patterns the engine gives the HTTP layer are the storage's own: a name a request
passes is one the files can take, and one they cannot take is refused at the request."""

from __future__ import annotations

import pytest

from service.engine.collection.name_patterns import BUNDLE_VERSION, LIVE_COLLECTION_NAME
from storage.layout import VERSION_PATTERN
from storage.live.spec import NAME_PATTERN, CollectionSpec, CollectionSpecError


def test_they_are_the_storage_patterns() -> None:
    assert LIVE_COLLECTION_NAME is NAME_PATTERN
    assert BUNDLE_VERSION is VERSION_PATTERN


@pytest.mark.parametrize("name", ["a", "notes", "Coco-2.live_1", "9" * 64])
def test_a_live_collection_name_it_takes_makes_a_spec(name: str) -> None:
    assert LIVE_COLLECTION_NAME.match(name)
    assert CollectionSpec(name, 4, {}).name == name


@pytest.mark.parametrize("name", ["", "-a", ".a", "a b", "a/b", "a:b", "x" * 65])
def test_a_live_collection_name_it_refuses_makes_no_spec(name: str) -> None:
    assert not LIVE_COLLECTION_NAME.match(name)
    with pytest.raises(CollectionSpecError):
        CollectionSpec(name, 4, {})


@pytest.mark.parametrize(
    ("version", "taken"),
    [
        ("20260101T000000Z", True),
        ("v1.2_rc-3", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("../up", False),
        (".hidden", False),
        ("a/b", False),
    ],
)
def test_a_bundle_version_is_a_plain_folder_name(version: str, taken: bool) -> None:
    assert bool(BUNDLE_VERSION.match(version)) is taken
