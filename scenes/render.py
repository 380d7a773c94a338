"""Pillow drawing of a scene: background pattern, shapes in drawing order, pixel noise.

Shapes are drawn at twice the target resolution and box-downsampled, which anti-aliases their
edges cheaply. The only randomness is the ``rng`` passed in (pattern phase and period, noise),
so a scene and a seed give byte-identical pixels.
"""

from __future__ import annotations

import math
import struct
import zlib

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw

from scenes.scene import Background, Scene, SceneObject

SUPERSAMPLE = 2
NOISE_AMPLITUDE_RANGE = (2, 8)  # per-image noise amplitude, in 0–255 levels (inclusive)
PNG_DEFLATE_LEVEL = 6  # irrelevant to speed with Huffman-only coding; zlib's default
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

Point = tuple[float, float]
UInt8Image = npt.NDArray[np.uint8]
STRIPE_ANGLES = (0.0, math.pi / 2, math.pi / 4, 3 * math.pi / 4)  # vertical, horizontal, diagonals


def _regular_polygon(sides: int, radius: float, start_degrees: float) -> list[Point]:
    step = 2 * math.pi / sides
    start = math.radians(start_degrees)
    return [
        (radius * math.cos(start + k * step), radius * math.sin(start + k * step))
        for k in range(sides)
    ]


def _star(radius: float) -> list[Point]:
    points = []
    for k in range(10):
        r = radius if k % 2 == 0 else 0.45 * radius
        angle = math.radians(-90 + 36 * k)
        points.append((r * math.cos(angle), r * math.sin(angle)))
    return points


def _cross(radius: float) -> list[Point]:
    arm, half = 0.95 * radius, 0.33 * radius
    return [
        (-half, -arm),
        (half, -arm),
        (half, -half),
        (arm, -half),
        (arm, half),
        (half, half),
        (half, arm),
        (-half, arm),
        (-half, half),
        (-arm, half),
        (-arm, -half),
        (-half, -half),
    ]


def _heart(radius: float) -> list[Point]:
    scale = radius / 17.0
    points = []
    for k in range(40):
        t = 2 * math.pi * k / 40
        x = 16 * math.sin(t) ** 3
        y = 13 * math.cos(t) - 5 * math.cos(2 * t) - 2 * math.cos(3 * t) - math.cos(4 * t)
        # Shift up by 2 units so the heart's visual centre sits on the object centre.
        points.append((x * scale, -(y + 2.0) * scale))
    return points


def shape_outline(shape: str, radius: float) -> list[Point]:
    """The outline of ``shape`` around the origin with circumradius about ``radius`` (pixels),
    unrotated; y grows downwards. Circles are returned as a 48-gon."""
    if shape == "circle":
        return _regular_polygon(48, 0.85 * radius, 0.0)
    if shape == "square":
        return _regular_polygon(4, 0.95 * radius, 45.0)
    if shape == "diamond":
        return _regular_polygon(4, radius, 90.0)
    if shape == "triangle":
        # The centroid of an equilateral triangle sits 1/3 of the way up; shift it down a
        # little so the drawn shape is centred on its box, not on its centroid.
        return [(x, y + 0.15 * radius) for x, y in _regular_polygon(3, radius, -90.0)]
    if shape == "hexagon":
        return _regular_polygon(6, 0.92 * radius, 0.0)
    if shape == "star":
        return _star(radius)
    if shape == "cross":
        return _cross(radius)
    if shape == "heart":
        return _heart(radius)
    raise ValueError(f"unknown shape {shape!r}")


def _object_polygon(item: SceneObject, canvas: int) -> list[Point]:
    radius = item.radius * canvas
    cx, cy = item.x * canvas, item.y * canvas
    angle = math.radians(item.rotation)
    cos, sin = math.cos(angle), math.sin(angle)
    return [
        (cx + x * cos - y * sin, cy + x * sin + y * cos)
        for x, y in shape_outline(item.shape, radius)
    ]


def _background(background: Background, size: int, rng: np.random.Generator) -> UInt8Image:
    """The background as uint8 RGB ``[size, size, 3]``: ``rgb`` plus the pattern in
    ``shade_rgb`` (two-tone patterns pick a colour per pixel, smooth ones blend)."""
    base = np.asarray(background.rgb, dtype=np.uint8)
    shade = np.asarray(background.shade_rgb, dtype=np.uint8)
    # Pixel-centre coordinates as a row and a column; broadcasting makes the full grids.
    coords = (np.arange(size, dtype=np.float32) + np.float32(0.5)) / np.float32(size)
    xs, ys = coords[None, :], coords[:, None]
    pattern = background.pattern
    two_tone: npt.NDArray[np.bool_] | None = None
    if pattern == "plain":
        return np.broadcast_to(base, (size, size, 3)).copy()
    if pattern == "striped":
        period = float(rng.uniform(0.08, 0.16))
        angle = STRIPE_ANGLES[int(rng.integers(len(STRIPE_ANGLES)))]
        phase = float(rng.uniform(0, period))
        along = xs * math.cos(angle) + ys * math.sin(angle) + phase
        two_tone = np.floor(along / (period / 2)) % 2 == 1
    elif pattern == "checkered":
        cell = float(rng.uniform(0.07, 0.14))
        two_tone = (np.floor(xs / cell) + np.floor(ys / cell)) % 2 == 1
    elif pattern == "dotted":
        spacing = float(rng.uniform(0.09, 0.14))
        fx = (xs / spacing) % 1.0 - 0.5
        fy = (ys / spacing) % 1.0 - 0.5
        two_tone = (fx * fx + fy * fy) < 0.07
    if two_tone is not None:
        mask = np.broadcast_to(two_tone, (size, size))[..., None]
        tones: UInt8Image = np.where(mask, shade, base)
        return tones
    if pattern == "gradient":
        angle = float(rng.uniform(0, 2 * math.pi))
        ramp = np.broadcast_to(xs * math.cos(angle) + ys * math.sin(angle), (size, size))
        weight = (ramp - ramp.min()) / max(float(ramp.max() - ramp.min()), 1e-6)
    elif pattern == "mottled":
        cells = int(rng.integers(4, 8))
        coarse = rng.random((cells, cells)).astype(np.float32)
        blobs = Image.fromarray(np.uint8(coarse * 255)).resize(
            (size, size), Image.Resampling.BILINEAR
        )
        weight = np.asarray(blobs, dtype=np.float32) / np.float32(255.0)
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    low = base.astype(np.float32)
    blend = low + weight[..., None] * (shade.astype(np.float32) - low) + np.float32(0.5)
    blended: UInt8Image = blend.astype(np.uint8)  # a convex mix: already inside 0–255
    return blended


def render_scene(scene: Scene, image_size: int, rng: np.random.Generator) -> npt.NDArray[np.uint8]:
    """Draw ``scene``: ``[image_size, image_size, 3]`` uint8 RGB pixels."""
    canvas = image_size * SUPERSAMPLE
    # The background has no edges worth anti-aliasing: draw it at the target size and only
    # enlarge it (nearest neighbour) under the supersampled shapes.
    backdrop = Image.fromarray(_background(scene.background, image_size, rng), "RGB")
    image = backdrop.resize((canvas, canvas), Image.Resampling.NEAREST)
    draw = ImageDraw.Draw(image)
    for item in scene.objects:
        draw.polygon(_object_polygon(item, canvas), fill=item.rgb)
    small = image.reduce(SUPERSAMPLE)
    # Triangular pixel noise (the sum of two uniform integers in ±amplitude, σ ≈ 2–7 levels):
    # it looks like sensor noise and costs a third of Gaussian noise, once per image.
    amplitude = int(rng.integers(NOISE_AMPLITUDE_RANGE[0], NOISE_AMPLITUDE_RANGE[1] + 1))
    pair = rng.integers(
        -amplitude, amplitude + 1, size=(2, image_size, image_size, 3), dtype=np.int16
    )
    noisy = pair[0] + pair[1]
    noisy += np.asarray(small, dtype=np.int16)
    np.clip(noisy, 0, 255, out=noisy)
    pixels: npt.NDArray[np.uint8] = noisy.astype(np.uint8)
    return pixels


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(
        PNG_DEFLATE_LEVEL, zlib.DEFLATED, zlib.MAX_WBITS, 9, zlib.Z_HUFFMAN_ONLY
    )
    return compressor.compress(data) + compressor.flush()


def encode_png(pixels: npt.NDArray[np.uint8]) -> bytes:
    """PNG bytes of an ``[height, width, 3]`` uint8 RGB array.

    A minimal writer (IHDR, one IDAT, IEND; every row with PNG's "Sub" filter, deflated with
    Huffman coding only): on these noisy images string matching finds almost nothing, so this
    is 4–5 times faster than Pillow's encoder and gives smaller files. Deterministic (no
    timestamps or other metadata).
    """
    height, width, channels = pixels.shape
    if channels != 3 or pixels.dtype != np.uint8:
        raise ValueError("expected [height, width, 3] uint8 pixels")
    rows = pixels.reshape(height, width * 3)
    filtered = rows.copy()
    # "Sub": each byte minus the same channel of the pixel to its left, modulo 256.
    np.subtract(rows[:, 3:], rows[:, :-3], out=filtered[:, 3:])
    scanlines = np.empty((height, width * 3 + 1), dtype=np.uint8)
    scanlines[:, 0] = 1  # filter type 1 = Sub
    scanlines[:, 1:] = filtered
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return (
        PNG_SIGNATURE
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", _deflate(scanlines.tobytes()))
        + _png_chunk(b"IEND", b"")
    )
