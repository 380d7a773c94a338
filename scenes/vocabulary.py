"""The closed vocabulary of the scenes world: attribute values, their colours and their words.

Ground truth uses the canonical names (the first column of every table); captions may use any
of the listed surface words. Every synonym names exactly one canonical value, so a caption's
facts never depend on which word was drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

RGB = tuple[int, int, int]

SHAPES = ("circle", "square", "triangle", "star", "cross", "diamond", "hexagon", "heart")

# Object colours are saturated so they read against the muted background palette.
OBJECT_COLOURS: tuple[tuple[str, RGB], ...] = (
    ("red", (214, 39, 40)),
    ("orange", (247, 140, 22)),
    ("yellow", (240, 222, 40)),
    ("green", (44, 170, 60)),
    ("cyan", (40, 212, 222)),
    ("blue", (38, 82, 232)),
    ("purple", (142, 52, 204)),
    ("pink", (247, 134, 192)),
    ("white", (246, 246, 246)),
    ("black", (22, 22, 22)),
)
COLOURS = tuple(name for name, _ in OBJECT_COLOURS)

SIZES = ("small", "medium", "large")
REGIONS = ("left", "right", "top", "bottom", "centre")

# Canonical relations: "right of" and "below" are stored as "left_of" / "above" with the
# arguments swapped; "next_to" is symmetric and stored with its arguments in sorted order.
RELATIONS = ("left_of", "above", "next_to")

PATTERNS = ("plain", "gradient", "striped", "checkered", "dotted", "mottled")
BACKGROUND_COLOURS: tuple[tuple[str, RGB], ...] = (
    ("grey", (128, 128, 128)),
    ("beige", (214, 198, 160)),
    ("teal", (38, 108, 112)),
    ("olive", (112, 112, 48)),
    ("navy", (30, 40, 92)),
    ("lavender", (184, 170, 216)),
)
BACKGROUND_COLOUR_NAMES = tuple(name for name, _ in BACKGROUND_COLOURS)

# Surface words. Tuples of (singular, plural) for nouns.
SHAPE_NOUNS: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType(
    {
        "circle": (("circle", "circles"), ("disc", "discs"), ("round shape", "round shapes")),
        "square": (("square", "squares"), ("square shape", "square shapes")),
        "triangle": (("triangle", "triangles"), ("triangular shape", "triangular shapes")),
        "star": (("star", "stars"), ("star shape", "star shapes")),
        "cross": (("cross", "crosses"), ("plus sign", "plus signs")),
        "diamond": (("diamond", "diamonds"), ("rhombus", "rhombuses")),
        "hexagon": (("hexagon", "hexagons"), ("six-sided shape", "six-sided shapes")),
        "heart": (("heart", "hearts"), ("heart shape", "heart shapes")),
    }
)
GENERIC_NOUNS = (("shape", "shapes"), ("object", "objects"), ("figure", "figures"))
COLOUR_WORDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "red": ("red", "crimson"),
        "orange": ("orange",),
        "yellow": ("yellow",),
        "green": ("green",),
        "cyan": ("cyan", "turquoise"),
        "blue": ("blue",),
        "purple": ("purple", "violet"),
        "pink": ("pink",),
        "white": ("white",),
        "black": ("black",),
    }
)
SIZE_WORDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "small": ("small", "little"),
        "medium": ("medium-sized", "mid-sized"),
        "large": ("large", "big"),
    }
)
REGION_PHRASES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "left": ("on the left", "on the left side", "at the left"),
        "right": ("on the right", "on the right side", "at the right"),
        "top": ("at the top", "near the top", "in the upper part"),
        "bottom": ("at the bottom", "near the bottom", "in the lower part"),
        "centre": ("in the centre", "in the center", "in the middle"),
    }
)
PATTERN_WORDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "plain": ("plain", "solid", "uniform"),
        "gradient": ("gradient", "shaded"),
        "striped": ("striped",),
        "checkered": ("checkered", "chequered"),
        "dotted": ("dotted", "polka-dot"),
        "mottled": ("mottled", "textured"),
    }
)
BACKGROUND_COLOUR_WORDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "grey": ("grey", "gray"),
        "beige": ("beige",),
        "teal": ("teal",),
        "olive": ("olive",),
        "navy": ("navy", "dark blue"),
        "lavender": ("lavender",),
    }
)
NUMBER_WORDS = ("zero", "one", "two", "three", "four")
