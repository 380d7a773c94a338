"""The interactive evaluation report (``report.html``) opened from disk in a real headless
Chromium: a quality run of every task (the tiny CxC-format dataset against the fake dual-tower
service, CIDEr-D on) written by the real writers; the query explorer finds a query by its text,
shows its top results with their CxC human scores, MS-COCO verdicts and CIDEr-D scores as the
run recorded them; a false-negative card opens its query; thumbnails show; no console errors.

Screenshots as in ``test_search_page.py`` (``make screenshots`` updates ``docs/screenshots``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.report.writers import write_compare_outputs, write_quality_outputs
from benchmarks.runs.compare.run import run_compare
from benchmarks.runs.quality.run import run_quality
from tests.e2e.browser import browser_page, screenshot_folder, wait_until
from tests.fakes.fake_service import dual_tower_service
from tests.fakes.fake_variants import two_variants
from tests.fakes.tiny_data import TinyDataset
from tests.unit.benchmarks.runs.compare.test_run import config_for
from tests.unit.benchmarks.runs.quality.test_run import images_config

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def report_dir(tiny: TinyDataset, tmp_path: Path) -> Path:
    config = images_config(tiny, cider="auto", cider_cache_dir=tmp_path / "cache", html_queries=200)
    run = asyncio.run(run_quality(config, transport=dual_tower_service(tiny).transport()))
    out = tmp_path / "report"
    written = write_quality_outputs(run, out)
    assert written["html"] == out / "report.html"
    return out


def rows(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "#query-detail tr[data-testid=result-row]",
        """rows => rows.map(row => ({
            rank: row.dataset.rank, id: row.dataset.resultId, human: row.dataset.humanScore,
            coco: row.dataset.cocoPositive, cider: row.dataset.cider,
        }))""",
    )


def test_the_explorer_shows_the_judgments_of_a_chosen_query(
    report_dir: Path, tmp_path: Path
) -> None:
    queries = json.loads((report_dir / "queries.json").read_text(encoding="utf-8"))
    # A t2i query (a caption searching images) with a CxC-rated result among its top results.
    chosen = next(
        record
        for record in queries["records"]
        if record["stream"] == "t2i"
        and any(result["human"] is not None for result in record["results"])
    )
    with browser_page() as browser:
        page = browser.page
        page.goto((report_dir / "report.html").as_uri())
        page.wait_for_selector("button[data-testid=query-item]", timeout=30_000)
        total = page.locator("button[data-testid=query-item]").count()
        page.select_option("#stream-select", "t2i")
        page.fill("#query-search", chosen["query"])
        # The search keeps the queries whose id or text contains it, this one among them.
        wait_until(
            page,
            "document.querySelectorAll('button[data-testid=query-item]').length < " + str(total),
        )
        page.click(f'button[data-testid=query-item][data-query-id="{chosen["query"]}"]')
        wait_until(
            page,
            f"document.querySelector('#query-detail').dataset.queryId === {chosen['query']!r}",
        )
        shown = rows(page)
        expected = chosen["results"]
        assert [row["id"] for row in shown] == [result["id"] for result in expected]
        for row, result in zip(shown, expected, strict=True):
            if result["human"] is None:
                assert row["human"] == ""
            else:
                assert float(row["human"]) == pytest.approx(result["human"])
            coco = "" if result["coco"] is None else str(result["coco"]).lower()
            assert row["coco"] == coco
            assert (row["cider"] == "") == (result["cider"] is None)
        assert any(row["human"] for row in shown)
        wait_until(
            page,
            "[...document.querySelectorAll('#query-detail img')]"
            ".every(i => i.complete && i.naturalWidth > 0)",
        )
        assert page.locator("#query-detail img").count() > 0  # image results show thumbnails
        folder = screenshot_folder(tmp_path)
        page.locator("#explorer").screenshot(path=str(folder / "report-explorer.png"))

        cards = page.locator("[data-testid=false-negative]")
        assert cards.count() > 0
        if cards.count():
            card_query = cards.first.get_attribute("data-query-id")
            page.locator("#false-negatives").screenshot(
                path=str(folder / "report-false-negatives.png")
            )
            cards.first.click()
            wait_until(
                page,
                f"document.querySelector('#query-detail').dataset.queryId === {card_query!r}",
            )
        assert browser.errors == []


def test_the_compare_page_shows_the_variants_side_by_side(
    tiny: TinyDataset, tmp_path: Path
) -> None:
    service = two_variants(tiny)
    config = config_for(tiny, rounds=1, concurrency_levels=(1,), tasks=("t2t",), html_queries=20)
    run = asyncio.run(run_compare(config, transport=service.transport()))
    page_file = write_compare_outputs(run, tmp_path / "compare")["html"]
    first = run.queries["full"]["records"][0]
    with browser_page() as browser:
        page = browser.page
        page.goto(page_file.as_uri())
        page.wait_for_selector("[data-testid=query-item]", timeout=30_000)
        page.fill("#query-search", first["query"])
        page.click(f'[data-testid=query-item][data-query-id="{first["query"]}"]')
        wait_until(
            page,
            "document.querySelectorAll('[data-testid=variant-column]').length === 2",
        )
        for variant in ("full", "short"):
            column = f"[data-testid=variant-column][data-variant={variant}]"
            shown = page.eval_on_selector_all(
                f"{column} [data-testid=result-row]", "rows => rows.map(r => r.dataset.resultId)"
            )
            recorded = next(
                record
                for record in run.queries[variant]["records"]
                if record["query"] == first["query"]
            )
            assert shown == [result["id"] for result in recorded["results"]]
        overlap = page.get_attribute("[data-testid=overlap]", "data-overlap")
        assert overlap is not None
        full_ids = {result["id"] for result in first["results"]}
        short_record = next(
            r for r in run.queries["short"]["records"] if r["query"] == first["query"]
        )
        shared = len(full_ids & {result["id"] for result in short_record["results"]})
        assert int(overlap) == shared  # results in both top lists
        assert page.locator("[data-testid=headline-row]").count() > 0
        folder = screenshot_folder(tmp_path)
        page.locator("#explorer").screenshot(path=str(folder / "report-compare.png"))
        assert browser.errors == []
