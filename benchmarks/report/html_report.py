"""``report.html``: one self-contained page for a quality run — the tables and plots of
``report.md``, a per-query explorer and a gallery of MS-COCO false negatives CxC's raters
call similar.

Nothing is fetched when the file is opened: the style sheet and scripts (``html/report.css``,
``html/explorer.js`` + ``html/report.js`` in this package) are inlined, the plots are base64
PNG data URIs, image thumbnails base64 JPEG data URIs (:mod:`benchmarks.report.thumbnails`),
and the data is one JSON object in ``<script type="application/json" id="report-data">`` with
``<``, ``>`` and ``&`` written as ``\\u003c``, ``\\u003e``, ``\\u0026`` so no string can close
the tag. The script builds the explorer with ``textContent`` / ``createElement`` only.

The embedded object: ``report`` (``report.json`` as written), ``queries`` (the bounded sample of
:func:`benchmarks.runs.quality.query_records.query_records`, or ``null``) and ``thumbnails``
(image file name → data URI). The per-query sample's bound is stated in the page.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Final

from benchmarks.report.markdown_html import markdown_to_html
from benchmarks.report.thumbnails import MAX_THUMBNAILS, thumbnails

HTML_REPORT: Final = "report.html"
ASSETS: Final = "html"
DATA_ID: Final = "report-data"
QUERIES_JSON: Final = "queries.json"
"""The per-query sample beside the report (what :func:`rewrite_quality_html` reads back)."""
_PLACEHOLDER: Final = re.compile(r"\{\{(\w+)\}\}")
_JSON_ESCAPES: Final = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def asset(name: str) -> str:
    """A static file of the pages (``report.css``, ``explorer.js``, ``report.js``, ``compare.js``,
    the templates ``page.html`` and ``compare_page.html``, the fragment ``query_pane.html``)."""
    text = resources.files("benchmarks.report").joinpath(ASSETS, name).read_text(encoding="utf-8")
    if not name.endswith(".html") and ("</script" in text.lower() or "</style" in text.lower()):
        raise ValueError(f"{name} would close its own element")
    return text


def script_json(value: object) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element (and still valid JSON)."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return "".join(_JSON_ESCAPES.get(char, char) for char in text)


def png_data_uri(path: Path) -> str | None:
    """A PNG file as a ``data:image/png`` URI, or ``None`` when it is missing / not a PNG."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(b"\x89PNG"):
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def image_names(queries: Mapping[str, Any] | None) -> list[str]:
    """Every image id the sample shows: the gallery's first, then the records' in order."""
    if not queries:
        return []
    kinds = {stream["name"]: stream for stream in queries.get("streams", [])}
    names: list[str] = []

    def add(stream: str, query: str, result: str) -> None:
        info = kinds.get(stream, {})
        if info.get("query_kind") == "image":
            names.append(query)
        if info.get("target_kind") == "image":
            names.append(result)

    for entry in queries.get("false_negatives", []):
        add(entry["stream"], entry["query"], entry["id"])
    for record in queries.get("records", []):
        for result in record["results"]:
            add(record["stream"], record["query"], result["id"])
        if not record["results"]:
            add(record["stream"], record["query"], "")
    return [name for name in names if name]


def render_quality_html(
    report: Mapping[str, Any],
    markdown: str,
    queries: Mapping[str, Any] | None,
    out_dir: Path,
    images_dir: Path | None = None,
) -> str:
    """The page of a quality run.

    Args:
        report: ``report.json``'s object.
        markdown: ``report.md``'s text (its plots are read from ``out_dir``).
        queries: the per-query sample, or ``None`` (the explorer then says so; the gallery
            falls back to ``report.json``'s ``false_negatives.<direction>.examples``).
        out_dir: the report folder (the PNG plots).
        images_dir: the split's image files for thumbnails; ``settings.images_dir`` of the
            report when ``None``.
    """
    if images_dir is None:
        configured = (report.get("settings") or {}).get("images_dir")
        images_dir = Path(configured) if configured else None
    names = image_names(queries)
    for direction in (report.get("false_negatives") or {}).values():
        for example in direction.get("examples", []):
            names.extend(str(example.get(key, "")) for key in ("query", "retrieved"))
    data = {
        "report": report,
        "queries": queries,
        "thumbnails": thumbnails(names, images_dir),
        "max_thumbnails": MAX_THUMBNAILS,
    }

    title = f"Crisscross — {report.get('dataset')} {report.get('split')} — {report.get('variant')}"
    return fill_page(
        "page.html", title, markdown_to_html(markdown, plot_source(out_dir)), data, "report.js"
    )


def plot_source(out_dir: Path) -> Callable[[str], str | None]:
    """The image source of a plot the Markdown names: a PNG in ``out_dir`` as a data URI."""

    def plot_src(name: str) -> str | None:
        if Path(name).name != name:
            return None
        return png_data_uri(out_dir / name)

    return plot_src


def fill_page(template: str, title: str, summary: str, data: object, script: str) -> str:
    """A page template (``page.html``, ``compare_page.html``) with its title, the inlined style
    sheet, the summary's HTML, the shared query pane (``query_pane.html``), the embedded data and
    the inlined ``explorer.js`` + ``script``."""
    values = {
        "title": html.escape(title),
        "css": asset("report.css"),
        "summary": summary,
        "data_id": DATA_ID,
        "data": script_json(data),
        "js": asset("explorer.js") + "\n" + asset(script),
        # the query list, search and detail pane both pages share
        "query_pane": asset("query_pane.html"),
    }
    page = asset(template)
    missing = set(values) - set(_PLACEHOLDER.findall(page))
    if missing:
        raise ValueError(f"the page template lacks {sorted(missing)}")
    # one pass: text put in is never searched for placeholders again
    return _PLACEHOLDER.sub(lambda match: values[match[1]], page)


def write_quality_html(
    report: Mapping[str, Any],
    markdown: str,
    queries: Mapping[str, Any] | None,
    out_dir: Path,
    images_dir: Path | None = None,
) -> Path:
    """Write ``report.html`` into ``out_dir`` (see :func:`render_quality_html`)."""
    path = out_dir / HTML_REPORT
    page = render_quality_html(report, markdown, queries, out_dir, images_dir)
    path.write_text(page, encoding="utf-8")
    return path


def rewrite_quality_html(out_dir: Path, images_dir: Path | None = None) -> Path:
    """``report.html`` again from a report folder's ``report.json``, ``report.md``, plots and,
    when there, ``queries.json`` (no service needed)."""
    report = json.loads((out_dir / "report.json").read_text(encoding="utf-8"))
    markdown = (out_dir / "report.md").read_text(encoding="utf-8")
    queries_file = out_dir / QUERIES_JSON
    queries = (
        json.loads(queries_file.read_text(encoding="utf-8")) if queries_file.is_file() else None
    )
    return write_quality_html(report, markdown, queries, out_dir, images_dir)
