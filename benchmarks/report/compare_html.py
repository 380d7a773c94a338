"""``compare.html``: a compare run's variants side by side per query, self-contained like
``report.html`` (:mod:`benchmarks.report.html_report`: the same inlined style sheet, explorer
helpers, data embedding and content security policy).

The top shows ``compare.md`` (with ``compare_pareto.png`` inlined) and each variant's headline
quality numbers with their 95 % intervals (``compare.json``'s ``variants[].quality``). Below,
the query list of the first variant's per-query sample (every variant recorded the same query
ids: :func:`benchmarks.runs.compare.run.quality_phase`) and, for a chosen query, one column per
variant with its top results and labels; each other variant's column states its overlap@10 with
the first and each result's move against the first variant's ranking (:func:`compare_queries`).

The embedded object: ``compare`` (``compare.json``), ``variants`` (names, first = baseline),
``bound`` / ``streams`` (the first variant's sample), ``captions``, ``queries`` (one entry per
sampled query: ``stream``, ``query``, ``query_kind``, ``cxc_rated``, ``variants``: name →
``{"results", "overlap"}`` or ``null`` when that variant did not record it), ``thumbnails``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks.report.html_report import fill_page, image_names, plot_source
from benchmarks.report.markdown_html import markdown_to_html
from benchmarks.report.thumbnails import MAX_THUMBNAILS, thumbnails

COMPARE_HTML: Final = "compare.html"
TEMPLATE: Final = "compare_page.html"
COMPARE_QUERIES_JSON: Final = "compare_queries.json"
"""The variants' per-query samples beside ``compare.html`` (variant → sample)."""


def moves(baseline: Sequence[str], ranked: Sequence[str]) -> list[int | None]:
    """Each of ``ranked``'s ids: its baseline rank minus its rank (> 0: moved up, < 0: down,
    0: same place), ``None`` when the baseline's list lacks it ("new")."""
    where = {item: rank for rank, item in enumerate(baseline)}
    return [where[item] - rank if item in where else None for rank, item in enumerate(ranked)]


def overlap(baseline: Sequence[str], ranked: Sequence[str]) -> int:
    """How many ids the two lists share (overlap@len)."""
    return len(set(baseline) & set(ranked))


def compare_queries(
    variants: Sequence[str], samples: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The first variant's sampled queries, each with every variant's record of it: its results
    (each with ``move`` against the first variant; ``None`` on the first) and ``overlap`` (ids
    shared with the first variant's results; ``None`` on the first); ``None`` for a variant
    that did not record the query."""
    if not variants or variants[0] not in samples:
        return []
    by_key = {
        name: {
            (record["stream"], record["query"]): record
            for record in samples[name].get("records", [])
        }
        for name in variants
        if name in samples
    }
    entries = []
    for record in samples[variants[0]].get("records", []):
        key = (record["stream"], record["query"])
        base_ids = [result["id"] for result in record["results"]]
        columns: dict[str, Any] = {}
        for position, name in enumerate(variants):
            found = by_key.get(name, {}).get(key)
            if found is None:
                columns[name] = None
                continue
            ids = [result["id"] for result in found["results"]]
            shifts = moves(base_ids, ids) if position else [None] * len(ids)
            columns[name] = {
                "results": [
                    {**result, "move": shift}
                    for result, shift in zip(found["results"], shifts, strict=True)
                ],
                "overlap": overlap(base_ids, ids) if position else None,
            }
        entries.append(
            {
                "stream": record["stream"],
                "query": record["query"],
                "query_kind": record["query_kind"],
                "cxc_rated": record.get("cxc_rated"),
                "variants": columns,
            }
        )
    return entries


def render_compare_html(
    report: Mapping[str, Any],
    markdown: str,
    samples: Mapping[str, Mapping[str, Any]],
    out_dir: Path,
    images_dir: Path | None = None,
) -> str:
    """The page of a compare run.

    Args:
        report: ``compare.json``'s object.
        markdown: ``compare.md``'s text (its plot is read from ``out_dir``).
        samples: variant → its per-query sample (empty: the explorer says there is none).
        out_dir: the report folder.
        images_dir: the split's image files for thumbnails (none when ``None``).
    """
    variants = [str(entry.get("name")) for entry in report.get("variants") or []]
    first = samples.get(variants[0]) if variants else None
    captions: dict[str, str] = {}
    names: list[str] = []
    for name in variants:
        sample = samples.get(name)
        if sample:
            captions = {**sample.get("captions", {}), **captions}
            names.extend(image_names({**sample, "false_negatives": []}))
    data = {
        "compare": report,
        "variants": variants,
        "bound": first.get("bound") if first else None,
        "streams": first.get("streams", []) if first else [],
        "captions": captions,
        "queries": compare_queries(variants, samples),
        "thumbnails": thumbnails(names, images_dir),
        "max_thumbnails": MAX_THUMBNAILS,
    }
    title = f"Crisscross compare — {report.get('dataset')} {report.get('split')} — " + ", ".join(
        variants
    )
    summary = markdown_to_html(markdown, plot_source(out_dir))
    return fill_page(TEMPLATE, title, summary, data, "compare.js")


def write_compare_html(
    report: Mapping[str, Any],
    markdown: str,
    samples: Mapping[str, Mapping[str, Any]],
    out_dir: Path,
    images_dir: Path | None = None,
) -> Path:
    """Write ``compare.html`` into ``out_dir`` (see :func:`render_compare_html`)."""
    path = out_dir / COMPARE_HTML
    path.write_text(
        render_compare_html(report, markdown, samples, out_dir, images_dir), encoding="utf-8"
    )
    return path
