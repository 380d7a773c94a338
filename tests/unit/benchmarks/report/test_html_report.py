"""report.html: self-contained (no external resource), valid embedded JSON with the per-query
records, hostile strings kept inside their elements, under the size bound."""

from __future__ import annotations

import json
import random
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from benchmarks.report.compare_html import compare_queries, moves, overlap, write_compare_html
from benchmarks.report.html_report import (
    DATA_ID,
    asset,
    render_quality_html,
    rewrite_quality_html,
    script_json,
    write_quality_html,
)
from benchmarks.report.quality_markdown import render_quality_markdown
from benchmarks.report.thumbnails import MAX_THUMBNAILS

HOSTILE = '</script><img src=x onerror="alert(1)"><script>alert(2)</script>&amp; \u2028'
SIZE_BOUND = 15 * 2**20


class Page(HTMLParser):
    """Every tag with its attributes, and each script element's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in_script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((self._in_script, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = None

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


def embedded(page: str) -> dict[str, Any]:
    found = [text for attrs, text in parse(page).scripts if attrs.get("id") == DATA_ID]
    assert len(found) == 1
    assert parse(page).scripts[0][0].get("type") == "application/json"
    data: dict[str, Any] = json.loads(found[0])
    return data


def result(rank: int, item: str, *, human: float | None, coco: bool | None) -> dict[str, Any]:
    return {
        "rank": rank,
        "id": item,
        "score": round(1 - rank / 100, 4),
        "human": human,
        "coco": coco,
        "cider": 0.5 if item.endswith(".png") else None,
    }


def sample(records: int = 3, caption_text: str = "a red square") -> dict[str, Any]:
    """A per-query sample: t2i records over images ``im<N>.png`` and one t2t record."""
    built = []
    for number in range(records):
        results = [
            result(
                rank,
                f"im{(number + rank) % 50}.png",
                human=4.0 if rank == 2 else None,
                coco=rank == 1,
            )
            for rank in range(1, 11)
        ]
        built.append(
            {
                "stream": "t2i",
                "query": f"c{number}",
                "query_kind": "caption",
                "cxc_rated": number % 2 == 0,
                "results": results,
            }
        )
    built.append(
        {
            "stream": "t2t",
            "query": "c0",
            "query_kind": "caption",
            "cxc_rated": True,
            "results": [result(1, "c1", human=3.5, coco=False)],
        }
    )
    streams = [
        {
            "name": name,
            "tasks": [name],
            "query_kind": "caption",
            "target_kind": "image" if name == "t2i" else "caption",
            "queries": records * 3,
            "shown": records if name == "t2i" else 1,
            "human_ratings": "sits" if name == "t2i" else "sts",
            "human_threshold": 3.0,
            "coco_labels": True,
            "cider": name == "t2i",
        }
        for name in ("t2t", "t2i")
    ]
    gallery = [{"stream": "t2t", "query": "c0", **result(1, "c1", human=3.5, coco=False)}]
    return {
        "bound": {
            "max_queries": 2000,
            "per_stream": 1000,
            "depth": 10,
            "seed": 0,
            "max_false_negatives": 60,
        },
        "streams": streams,
        "records": built,
        "false_negatives": gallery,
        "captions": {f"c{number}": f"{caption_text} {number}" for number in range(records + 1)},
    }


def images(folder: Path, count: int, *, noise: bool = False) -> Path:
    """``im<N>.png`` files (256 px; random noise: the worst case for a JPEG thumbnail)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    for number in range(count):
        if noise:
            image = Image.frombytes("RGB", (256, 256), rng.randbytes(256 * 256 * 3))
        else:
            image = Image.new("RGB", (256, 256), (number * 5 % 256, 80, 160))
        image.save(folder / f"im{number}.png")
    return folder


def external_references(page: str) -> list[str]:
    """Every URL a browser would fetch or follow: src/href/srcset/poster/action attributes,
    CSS url() and @import, in the markup, the style sheet and the script."""
    found = []
    for _, attrs in parse(page).tags:
        for name in ("src", "href", "srcset", "poster", "action", "data", "background"):
            value = attrs.get(name)
            if value and not value.startswith(("data:", "#")):
                found.append(value)
    found += re.findall(r"url\(\s*['\"]?(?!data:)[^)]*\)", page)
    found += re.findall(r"@import", page)
    for name in (
        "report.css",
        "explorer.js",
        "report.js",
        "compare.js",
        "page.html",
        "compare_page.html",
    ):
        found += re.findall(r"https?://", asset(name))
    return found


def test_page_is_self_contained_with_plots_and_thumbnails(
    quality_report: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    Image.new("RGB", (20, 10)).save(out / "recall_at_k.png")
    folder = images(tmp_path / "images", 12)
    path = write_quality_html(
        quality_report, render_quality_markdown(quality_report), sample(), out, folder
    )
    page = path.read_text(encoding="utf-8")
    assert path.name == "report.html"
    assert external_references(page) == []
    assert 'http-equiv="Content-Security-Policy"' in page
    assert '<img src="data:image/png;base64,' in page  # the recall plot, inlined
    assert "<table>" in page
    assert "<th>R@1</th>" in page
    data = embedded(page)
    assert data["report"] == quality_report
    assert set(data["thumbnails"]) == {f"im{number}.png" for number in range(1, 12)}
    assert all(uri.startswith("data:image/jpeg;base64,") for uri in data["thumbnails"].values())
    records = data["queries"]["records"]
    assert records[0]["results"][1] == result(2, "im2.png", human=4.0, coco=False)
    for record in records:
        for item in record["results"]:
            assert set(item) == {"rank", "id", "score", "human", "coco", "cider"}
    for selector in (
        'id="query-list"',
        'id="query-search"',
        'id="stream-select"',
        'id="query-detail"',
        'data-testid="false-negative-gallery"',
        'id="sample-bound"',
    ):
        assert selector in page
    script = asset("explorer.js") + asset("report.js")
    for marker in ("data-human-score", "data-coco-positive", "data-cider", "result-row"):
        assert marker in script
    assert "innerHTML" not in script
    assert "insertAdjacentHTML" not in script


def test_hostile_strings_stay_inside_their_elements(
    quality_report: dict[str, Any], tmp_path: Path
) -> None:
    report = json.loads(json.dumps(quality_report))
    report["variant"] = HOSTILE
    for view in report["false_negatives"].values():
        for example in view["examples"]:
            example["caption"] = HOSTILE
    queries = sample(caption_text=HOSTILE)
    queries["records"][0]["query"] = HOSTILE
    page = render_quality_html(report, render_quality_markdown(report), queries, tmp_path)
    parsed = parse(page)
    assert [attrs.get("src") for tag, attrs in parsed.tags if tag == "img"] == []
    assert len(parsed.scripts) == 2  # the data and the page's script, nothing injected
    assert page.count("</script>") == 2
    assert "onerror" not in "".join(str(attrs) for _, attrs in parsed.tags)
    data = embedded(page)
    assert data["report"]["variant"] == HOSTILE
    assert data["queries"]["records"][0]["query"] == HOSTILE
    assert data["queries"]["captions"]["c1"] == f"{HOSTILE} 1"


def test_script_json_is_json_and_closes_nothing() -> None:
    text = script_json({"a": "</script><!-- & \u2028"})
    assert "<" not in text
    assert ">" not in text
    assert "&" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028"}


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_a_full_bound_sample_stays_under_the_size_bound(
    quality_report: dict[str, Any], tmp_path: Path
) -> None:
    folder = images(tmp_path / "images", 50, noise=True)
    queries = sample(records=2000, caption_text="A medium-sized black heart shape above " * 3)
    page = render_quality_html(
        quality_report, render_quality_markdown(quality_report), queries, tmp_path, folder
    )
    data = embedded(page)
    assert len(data["queries"]["records"]) == 2001
    largest = max(len(uri) for uri in data["thumbnails"].values())
    without = len(page.encode("utf-8")) - sum(len(uri) for uri in data["thumbnails"].values())
    assert without + MAX_THUMBNAILS * largest < SIZE_BOUND


def test_rewrite_from_a_report_folder(quality_report: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text(json.dumps(quality_report), encoding="utf-8")
    (tmp_path / "report.md").write_text(render_quality_markdown(quality_report), "utf-8")
    data = embedded(rewrite_quality_html(tmp_path).read_text(encoding="utf-8"))
    assert data["queries"] is None
    (tmp_path / "queries.json").write_text(json.dumps(sample()), encoding="utf-8")
    data = embedded(rewrite_quality_html(tmp_path).read_text(encoding="utf-8"))
    assert data["queries"] == sample()


def _sample(results: dict[str, list[str]], caption: str = "a caption") -> dict[str, Any]:
    stream = {"name": "t2t", "query_kind": "caption", "target_kind": "caption", "shown": 1}
    return {
        "bound": {"max_queries": 2, "per_stream": 2, "depth": 10, "seed": 0},
        "streams": [{**stream, "human_threshold": 3.0, "coco_labels": True, "cider": False}],
        "records": [
            {
                "stream": "t2t",
                "query": query,
                "query_kind": "caption",
                "cxc_rated": False,
                "results": [
                    {"rank": rank, "id": item, "score": None, "human": None, "coco": None}
                    | {"cider": None}
                    for rank, item in enumerate(ids, start=1)
                ],
            }
            for query, ids in results.items()
        ],
        "false_negatives": [],
        "captions": {"q1": caption, "q2": "other"},
    }


def test_moves_and_overlap_of_a_hand_made_example() -> None:
    assert moves(["a", "b", "c", "d"], ["c", "a", "x", "d"]) == [2, -1, None, 0]
    assert overlap(["a", "b", "c", "d"], ["c", "a", "x", "d"]) == 3
    samples = {
        "full": _sample({"q1": ["a", "b", "c"], "q2": ["z"]}),
        "short": _sample({"q1": ["b", "a", "y"]}),
    }
    entries = compare_queries(["full", "short"], samples)
    assert [entry["query"] for entry in entries] == ["q1", "q2"]
    first, second = entries[0]["variants"]["full"], entries[0]["variants"]["short"]
    assert first["overlap"] is None
    assert [r["move"] for r in first["results"]] == [None] * 3
    assert second["overlap"] == 2
    assert [r["move"] for r in second["results"]] == [1, -1, None]
    assert entries[1]["variants"]["short"] is None


def test_compare_page_is_self_contained_and_escapes_hostile_strings(tmp_path: Path) -> None:
    report = {
        "dataset": "coco-karpathy",
        "split": HOSTILE,
        "variants": [
            {"name": "full", "quality": {"t2t R@10": {"value": 50.0, "ci95": [48.0, 52.0]}}},
            {"name": "short", "quality": {"t2t R@10": {"value": 40.0, "ci95": [38.0, 42.0]}}},
        ],
    }
    samples = {
        "full": _sample({"q1": ["a", HOSTILE]}, caption=HOSTILE),
        "short": _sample({"q1": [HOSTILE, "b"]}),
    }
    path = write_compare_html(report, "# Compare\n\n" + HOSTILE + "\n", samples, tmp_path)
    assert path == tmp_path / "compare.html"
    page = path.read_text(encoding="utf-8")
    assert not re.findall(r"https?://", page)
    assert "Content-Security-Policy" in page
    parsed = parse(page)
    assert not [attrs for tag, attrs in parsed.tags if tag == "img"]
    scripts = {attrs.get("id"): text for attrs, text in parsed.scripts}
    assert len(parsed.scripts) == 2
    data = json.loads(scripts[DATA_ID])
    assert data["variants"] == ["full", "short"]
    assert data["captions"]["q1"] == HOSTILE
    assert data["compare"]["variants"][1]["quality"]["t2t R@10"]["ci95"] == [38.0, 42.0]
    (entry,) = data["queries"]
    assert entry["query"] == "q1"
    assert [r["id"] for r in entry["variants"]["full"]["results"]] == ["a", HOSTILE]
    assert [r["move"] for r in entry["variants"]["short"]["results"]] == [1, None]
    script = asset("explorer.js") + asset("compare.js")
    for marker in ("variant-column", "data-variant", "overlap", "query-item", "result-row"):
        assert marker in script
    assert "innerHTML" not in script
