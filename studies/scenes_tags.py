"""Image items that carry text for a text→image hybrid search on the scenes corpus.

The demo's ``scenes:images`` items carry their captions' *ids*; their caption texts are the very
queries of the text→image task, so keywords on them would find every answer verbatim. A fair
test of keywords on an image collection needs text written apart from the queries, as alt text
or product tags are: this writes, for each image of a split, a ``tags`` text from its scene's
ground truth — each object's size, colour and shape, and the background — in the vocabulary's
canonical words (the captions also say "disc", "ball", "box" ...), as a ``--metadata`` sidecar
for ``python -m index_builder build --images``:

    .venv/bin/python studies/scenes_tags.py --split test --out /tmp/levers/scenes-tags.csv
    .venv/bin/python -m index_builder build --variant artifacts/variants/scenes-dual-encoder \\
        --name scenes-tagged --collection images_tagged \\
        --images artifacts/data/scenes/images/test --metadata /tmp/levers/scenes-tags.csv

Item ids are the image file names, as in ``scenes:images``, so the harness's ground truth holds.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def scene_tags(scene: dict[str, object]) -> str:
    """``large yellow diamond; small black star; olive gradient background``."""
    objects = scene["objects"]
    assert isinstance(objects, list)
    parts = [f"{item['size']} {item['colour']} {item['shape']}" for item in objects]
    background = scene["background"]
    assert isinstance(background, dict)
    parts.append(f"{background['colour']} {background['pattern']} background")
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "artifacts" / "data" / "scenes")
    parser.add_argument("--split", default="test")
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args()
    options.out.parent.mkdir(parents=True, exist_ok=True)
    truth = options.data / f"scenes_{options.split}.jsonl"
    with truth.open() as lines, options.out.open("w", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["path", "image_id", "tags"])
        count = 0
        for line in lines:
            record = json.loads(line)
            writer.writerow([record["filename"], record["image_id"], scene_tags(record["scene"])])
            count += 1
    print(f"wrote {count} images' tags to {options.out}")


if __name__ == "__main__":
    main()
