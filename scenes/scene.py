"""The scene data model and its seeded sampler.

A scene is 2–4 coloured shapes on a patterned background. Geometry is kept in normalised
image coordinates (x to the right, y downwards, both in [0, 1]) so one scene renders at any
image size. Every attribute a caption can state is crisp by construction:

- an object's *region* is the zone its centre was drawn in, and the zones do not touch;
- a directional relation is stated only when one axis clearly dominates the offset between
  two centres (the ambiguous diagonal band states none);
- an earlier (lower) object stays mostly visible: occlusion is allowed but bounded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from scenes.vocabulary import (
    BACKGROUND_COLOURS,
    OBJECT_COLOURS,
    PATTERNS,
    REGIONS,
    RGB,
    SHAPES,
    SIZES,
)

# Zones that centres are drawn in, as (x_min, x_max, y_min, y_max); the gaps between them keep
# "left" and "top" (etc.) from ever being ambiguous.
REGION_ZONES: Mapping[str, tuple[float, float, float, float]] = MappingProxyType(
    {
        "left": (0.15, 0.29, 0.32, 0.68),
        "right": (0.71, 0.85, 0.32, 0.68),
        "top": (0.32, 0.68, 0.15, 0.29),
        "bottom": (0.32, 0.68, 0.71, 0.85),
        "centre": (0.43, 0.57, 0.43, 0.57),
    }
)
# Circumradius ranges per size, as a fraction of the image side.
SIZE_RADII: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "small": (0.075, 0.09),
        "medium": (0.115, 0.13),
        "large": (0.155, 0.175),
    }
)
OBJECT_COUNT_WEIGHTS = (0.3, 0.4, 0.3)  # for 2, 3, 4 objects
DIRECTION_MIN_OFFSET = 0.12  # a directional relation needs this much offset on its axis …
DIRECTION_MARGIN = 0.08  # … and must beat the other axis by this much
NEXT_TO_GAP = 0.08  # "next to": centres closer than the two radii plus this gap
MIN_VISIBLE_FRACTION = 0.6  # each object keeps at least this share of its disc uncovered
MIN_LUMA_CONTRAST = 45.0  # object vs background colour, in luma units (0–255)
MIN_HUE_CONTRAST = 140  # … or this much difference in one RGB channel
COLOUR_JITTER = 14  # per-channel jitter of rendered colours
MAX_PLACEMENT_TRIES = 40

OBJECT_RGB: Mapping[str, RGB] = MappingProxyType(dict(OBJECT_COLOURS))
BACKGROUND_RGB: Mapping[str, RGB] = MappingProxyType(dict(BACKGROUND_COLOURS))


@dataclass(frozen=True)
class SceneObject:
    """One shape. ``x``, ``y`` (centre) and ``radius`` (circumradius) are fractions of the
    image side; ``rotation`` is in degrees; ``rgb`` is the jittered fill colour."""

    shape: str
    colour: str
    size: str
    region: str
    x: float
    y: float
    radius: float
    rotation: float
    rgb: RGB


@dataclass(frozen=True)
class Background:
    """The backdrop: a pattern drawn in ``rgb`` and a lighter or darker shade ``shade_rgb``."""

    pattern: str
    colour: str
    rgb: RGB
    shade_rgb: RGB


@dataclass(frozen=True)
class Relation:
    """A canonical spatial relation between objects ``subject`` and ``object`` (indices into
    :attr:`Scene.objects`): ``left_of``, ``above`` or ``next_to`` (with subject < object)."""

    subject: int
    relation: str
    object: int


@dataclass(frozen=True)
class Scene:
    """Objects in drawing order (later ones are drawn on top), background and relations."""

    objects: tuple[SceneObject, ...]
    background: Background
    relations: tuple[Relation, ...]

    def to_json(self, image_size: int) -> dict[str, Any]:
        """A JSON-serialisable form; ``bbox`` is ``[x0, y0, x1, y1]`` in pixels of an
        ``image_size`` × ``image_size`` image (the circumscribed box, clipped)."""
        objects = []
        for depth, item in enumerate(self.objects):
            objects.append(
                {
                    "shape": item.shape,
                    "colour": item.colour,
                    "size": item.size,
                    "region": item.region,
                    "center": [round(item.x, 5), round(item.y, 5)],
                    "radius": round(item.radius, 5),
                    "rotation": round(item.rotation, 3),
                    "rgb": list(item.rgb),
                    "bbox": list(bounding_box(item, image_size)),
                    "depth": depth,
                }
            )
        return {
            "objects": objects,
            "background": {
                "pattern": self.background.pattern,
                "colour": self.background.colour,
                "rgb": list(self.background.rgb),
                "shade_rgb": list(self.background.shade_rgb),
            },
            "relations": [[r.subject, r.relation, r.object] for r in self.relations],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Scene:
        """Inverse of :meth:`to_json` (positions are the rounded stored values)."""
        objects = tuple(
            SceneObject(
                shape=item["shape"],
                colour=item["colour"],
                size=item["size"],
                region=item["region"],
                x=float(item["center"][0]),
                y=float(item["center"][1]),
                radius=float(item["radius"]),
                rotation=float(item["rotation"]),
                rgb=_rgb(item["rgb"]),
            )
            for item in data["objects"]
        )
        background = data["background"]
        return cls(
            objects=objects,
            background=Background(
                pattern=background["pattern"],
                colour=background["colour"],
                rgb=_rgb(background["rgb"]),
                shade_rgb=_rgb(background["shade_rgb"]),
            ),
            relations=tuple(
                Relation(int(subject), str(relation), int(obj))
                for subject, relation, obj in data["relations"]
            ),
        )


def _rgb(values: list[int]) -> RGB:
    return (int(values[0]), int(values[1]), int(values[2]))


def bounding_box(item: SceneObject, image_size: int) -> tuple[int, int, int, int]:
    """The object's circumscribed square in pixels, clipped to the image: ``(x0, y0, x1, y1)``
    with ``x1``/``y1`` exclusive."""
    half = item.radius * image_size
    cx, cy = item.x * image_size, item.y * image_size
    return (
        max(0, math.floor(cx - half)),
        max(0, math.floor(cy - half)),
        min(image_size, math.ceil(cx + half)),
        min(image_size, math.ceil(cy + half)),
    )


def _pick(rng: np.random.Generator, values: tuple[str, ...]) -> str:
    return values[int(rng.integers(len(values)))]


def _luma(rgb: RGB) -> float:
    return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]


def _jitter(rng: np.random.Generator, rgb: RGB) -> RGB:
    offsets = rng.integers(-COLOUR_JITTER, COLOUR_JITTER + 1, size=3).tolist()
    r, g, b = (min(255, max(0, c + o)) for c, o in zip(rgb, offsets, strict=True))
    return (r, g, b)


def _disc_overlap(r1: float, r2: float, distance: float) -> float:
    """Area of the intersection of two discs (radii ``r1``, ``r2``, centres ``distance`` apart)."""
    if distance >= r1 + r2:
        return 0.0
    if distance <= abs(r1 - r2):
        return math.pi * min(r1, r2) ** 2
    a1 = r1 * r1 * math.acos((distance**2 + r1**2 - r2**2) / (2 * distance * r1))
    a2 = r2 * r2 * math.acos((distance**2 + r2**2 - r1**2) / (2 * distance * r2))
    kite = 0.5 * math.sqrt(
        (-distance + r1 + r2) * (distance + r1 - r2) * (distance - r1 + r2) * (distance + r1 + r2)
    )
    return a1 + a2 - kite


def _visible_enough(objects: list[SceneObject]) -> bool:
    """Whether every object keeps ``MIN_VISIBLE_FRACTION`` of its (shrunken) disc uncovered by
    the objects drawn after it. Discs at 80 % of the circumradius stand in for the shapes."""
    for index, lower in enumerate(objects):
        r_lower = 0.8 * lower.radius
        covered = 0.0
        for upper in objects[index + 1 :]:
            distance = math.hypot(upper.x - lower.x, upper.y - lower.y)
            covered += _disc_overlap(r_lower, 0.8 * upper.radius, distance)
        if covered > (1.0 - MIN_VISIBLE_FRACTION) * math.pi * r_lower**2:
            return False
    return True


def relations_between(objects: tuple[SceneObject, ...]) -> tuple[Relation, ...]:
    """The canonical relations that hold between every pair of objects, sorted."""
    relations = []
    for i, a in enumerate(objects):
        for j, b in enumerate(objects):
            if i == j:
                continue
            dx, dy = b.x - a.x, b.y - a.y
            if dx > DIRECTION_MIN_OFFSET and abs(dx) > abs(dy) + DIRECTION_MARGIN:
                relations.append(Relation(i, "left_of", j))
            if dy > DIRECTION_MIN_OFFSET and abs(dy) > abs(dx) + DIRECTION_MARGIN:
                relations.append(Relation(i, "above", j))
            if i < j and math.hypot(dx, dy) < a.radius + b.radius + NEXT_TO_GAP:
                relations.append(Relation(i, "next_to", j))
    return tuple(sorted(relations, key=lambda r: (r.subject, r.object, r.relation)))


def sample_background(rng: np.random.Generator) -> Background:
    """A random pattern in one named background colour plus a shade of it."""
    pattern = _pick(rng, PATTERNS)
    colour = _pick(rng, tuple(BACKGROUND_RGB))
    rgb = _jitter(rng, BACKGROUND_RGB[colour])
    # The shade goes towards white for dark colours and towards black for light ones, so the
    # pattern stays visible but the colour name still describes the whole background.
    towards = 255 if _luma(rgb) < 128 else 0
    mix = 0.3
    r, g, b = (round(c + (towards - c) * mix) for c in rgb)
    return Background(pattern=pattern, colour=colour, rgb=rgb, shade_rgb=(r, g, b))


def _sample_object(rng: np.random.Generator, background: Background) -> SceneObject:
    shape = _pick(rng, SHAPES)
    # Colours that stand out from the background: by brightness, or by a strong difference
    # in one channel (blue on navy is darker but clearly a different hue).
    contrasting = tuple(
        name
        for name, rgb in OBJECT_RGB.items()
        if abs(_luma(rgb) - _luma(background.rgb)) >= MIN_LUMA_CONTRAST
        or max(abs(a - b) for a, b in zip(rgb, background.rgb, strict=True)) >= MIN_HUE_CONTRAST
    )
    colour = _pick(rng, contrasting)
    size = _pick(rng, SIZES)
    region = _pick(rng, REGIONS)
    x0, x1, y0, y1 = REGION_ZONES[region]
    r0, r1 = SIZE_RADII[size]
    # Squares and diamonds differ by 45°, so rotations stay well inside ±45°.
    return SceneObject(
        shape=shape,
        colour=colour,
        size=size,
        region=region,
        x=float(rng.uniform(x0, x1)),
        y=float(rng.uniform(y0, y1)),
        radius=float(rng.uniform(r0, r1)),
        rotation=float(rng.uniform(-14.0, 14.0)),
        rgb=_jitter(rng, OBJECT_RGB[colour]),
    )


def sample_scene(rng: np.random.Generator) -> Scene:
    """Draw one scene. The result depends only on the state of ``rng``."""
    background = sample_background(rng)
    count = int(rng.choice(np.arange(2, 5), p=OBJECT_COUNT_WEIGHTS))
    while True:
        objects: list[SceneObject] = []
        for _ in range(MAX_PLACEMENT_TRIES):
            candidate = _sample_object(rng, background)
            if _visible_enough([*objects, candidate]):
                objects.append(candidate)
                if len(objects) == count:
                    placed = tuple(objects)
                    return Scene(placed, background, relations_between(placed))
        # Rare dead end (a crowded layout): start the objects again.
