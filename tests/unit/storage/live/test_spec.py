"""A collection's spec: its file round-trips, old files without the newer keys still read."""

from __future__ import annotations

import json

from formats.field_types import FieldType
from storage.live.spec import CollectionSpec


def test_the_spec_round_trips_with_its_uid_and_acks() -> None:
    spec = CollectionSpec(
        name="notes", dim=4, fields={"cat": FieldType.STRING}, uid="abc", acks="all"
    )
    assert CollectionSpec.from_json(spec.to_json()) == spec


def test_a_spec_written_before_uid_and_acks_reads_with_their_defaults() -> None:
    document = json.loads(CollectionSpec(name="old", dim=2, fields={}).to_json())
    del document["uid"], document["acks"]
    spec = CollectionSpec.from_json(json.dumps(document))
    assert spec.uid == ""
    assert spec.acks is None
