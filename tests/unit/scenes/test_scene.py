"""Scenes round-trip through JSON."""

from __future__ import annotations

from scenes.captions import Caption
from scenes.scene import Scene


def test_scenes_round_trip_through_json(world: tuple[list[Scene], list[Caption]]) -> None:
    for scene in world[0][:10]:
        again = Scene.from_json(scene.to_json(96))
        assert again.relations == scene.relations
        assert [(o.shape, o.colour, o.size, o.region) for o in again.objects] == [
            (o.shape, o.colour, o.size, o.region) for o in scene.objects
        ]
