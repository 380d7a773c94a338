"""A fixed, varied set of texts for checking an exported text tower against its source model.

Generated in code from a seed, so every export is checked on the same inputs without shipping a
data file. The set covers what breaks exports: padding (mixed lengths in one batch), truncation
(texts far beyond 256 tokens), normalisation (unicode, accents, case), and tokenizer corners
(empty strings, whitespace runs, punctuation, numbers, emoji).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Final

from formats.karpathy import read_captions

_SUBJECTS: Final = (
    "man", "woman", "child", "dog", "cat", "horse", "giraffe", "zebra", "elephant", "bird",
    "skateboarder", "surfer", "group of people", "pizza", "train", "bus", "plate of food",
    "teddy bear", "motorcycle", "laptop",
)  # fmt: skip
_ADJECTIVES: Final = (
    "small", "large", "young", "old", "brown", "white", "black", "red", "wet", "sleepy",
    "colorful", "tall",
)  # fmt: skip
_ACTIONS: Final = (
    "sitting on", "standing next to", "riding", "walking across", "lying on", "looking at",
    "parked near", "jumping over", "eating next to", "holding",
)  # fmt: skip
_PLACES: Final = (
    "a wooden bench", "the beach", "a busy city street", "a grassy field", "a kitchen counter",
    "a snowy hill", "the train tracks", "a table with a laptop", "a red fire hydrant",
    "the edge of a lake", "a cluttered desk", "a tennis court",
)  # fmt: skip

# Hand-picked corners of tokenization and normalisation.
_EDGE_CASES: Final = (
    "",
    " ",
    "dog",
    "Kitchen",
    "a",
    "!",
    "...",
    "A man riding a wave on top of a surfboard.",
    "Two dogs play with a frisbee in the park",
    "A plate of food with broccoli, rice and chicken.",
    "a bathroom with a toilet, sink and a mirror",
    "An old red double decker bus driving down the street.",
    "A DOG ON A SKATEBOARD",
    "a DoG oN a SkAtEbOaRd",
    "A Cat Sleeping On A Laptop Keyboard",
    "Wait... what?! Really??",
    "(a) [b] {c} <d> 'e' \"f\"",
    "#hashtag @someone & friends; 100% sure: yes/no",
    "e-mail: someone@example.com, url: http://example.com/path?q=1&x=2",
    "semi;colons,commas.periods-hyphens_underscores",
    "3 dogs and 2 cats",
    "The year 1999 had 365 days and 52 weeks.",
    "π ≈ 3.14159, e ≈ 2.71828",
    "1,000,000 people at 12:30 pm on 2024-05-17",
    "-42.5°C is very cold; 451°F is very hot",
    "Room 101, floor 7, building B-12",
    "Café au lait près de la fenêtre",
    "Ein Hund läuft über die Straße",
    "Собака бежит по пляжу",
    "一只狗在沙滩上奔跑",
    "犬がビーチを走っている",
    "강아지가 해변에서 뛰고 있다",
    "كلب يجري على الشاطئ",
    "Ελληνικά γράμματα και αριθμοί 123",
    "naïve façade résumé coöperate",
    "e\u0301le\u0301phant with combining accents",
    "zero\u200bwidth\u200bspaces and non\u00a0breaking\u00a0spaces",
    "🐶 running on the 🏖️ with a ⚽",
    "smiley :) and frowny :( faces",
    "  leading and trailing spaces  ",
    "tabs\tand\nnew\nlines\r\nand carriage returns",
    "multiple     spaces      between     words",
    "\n\n\t",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "The quick brown fox jumps over the lazy dog.",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG!!!",
    "a man\u2019s hat \u2014 \u201cquoted\u201d \u2026 ellipsis",
    "<html><body>markup &amp; entities</body></html>",
    "x" * 3,
)


def _caption(rng: random.Random) -> str:
    """One COCO-style caption with random case and end punctuation."""
    article = rng.choice(("A", "a", "The", "the", "One"))
    text = (
        f"{article} {rng.choice(_ADJECTIVES)} {rng.choice(_SUBJECTS)} "
        f"{rng.choice(_ACTIONS)} {rng.choice(_PLACES)}"
    )
    return text + rng.choice(("", ".", " .", "!", "\n"))


def parity_texts(seed: int = 0) -> list[str]:
    """Return the parity texts: the same list for the same ``seed``, at least 100 strings.

    Contains 60 short COCO-style captions, the hand-picked edge cases, and 8 long texts of roughly
    100-900 word pieces, most beyond a 256-token truncation limit.
    """
    rng = random.Random(seed)
    captions = [_caption(rng) for _ in range(60)]
    long_texts = [" ".join(_caption(rng) for _ in range(count)) for count in (8, 20, 25, 40, 60)]
    long_texts += [
        "dog " * 600,
        "Ein Hund läuft über die Straße, während 一只狗 🐶 wartet. " * 40,
        " ".join(str(number) for number in range(400)),
    ]
    return captions + list(_EDGE_CASES) + long_texts


def caption_texts(captions_csv: Path, limit: int) -> list[str]:
    """The ``text`` column of the first ``limit`` rows of a Karpathy captions CSV, in file order.

    Real captions complement the generated set when a reduced-precision variant is compared with
    its fp32 source. Raises ``formats.errors.FormatError`` (a ``ValueError``) for a malformed
    file.
    """
    return [record.text for record in read_captions(captions_csv)[:limit]]
