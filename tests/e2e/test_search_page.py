"""The search page (``GET /``) in a real headless Chromium against a real uvicorn process serving
real bundles of generated scenes (the committed two-tower model, thumbnails made at index time):
a text query shows k results with scores, an uploaded image shows image results with thumbnails,
"More like this" searches by a result, compare shows two columns with their overlap, a filter
narrows the results, paging moves on, and with keys on a search without the key shows the error
and one with it succeeds. No console errors (but the refused request's own 401 line).

Screenshots are taken in every run; with ``CRISSCROSS_UPDATE_SCREENSHOTS=1`` (``make
screenshots``) they replace the README's in ``docs/screenshots/``: look at them after a change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from index_builder.__main__ import main as index_main
from tests.e2e.browser import BrowserPage, browser_page, screenshot_folder, wait_until
from tests.e2e.conftest import LiveService, build_scenes_roots, start_service, stop_service

pytestmark = [pytest.mark.e2e]

READ_KEY = "page-test-read-key-0123456789"
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The scenes bundle, and the same corpus in a second bundle with an HNSW index (something
    to compare with)."""
    root = tmp_path_factory.mktemp("page")
    variants_root, bundles_root = build_scenes_roots(root, scenes=24)
    corpus = root / "scenes-corpus"
    build = ["build", "--variant", str(variants_root / "scenes-dual-encoder")]
    build += ["--name", "scenes-hnsw", "--factory", "HNSW16"]
    build += ["--captions", str(corpus / "coco-karpathy-captions" / "captions_val.csv")]
    build += ["--images-dir", str(corpus / "images" / "val"), "--bundles-root", str(bundles_root)]
    assert index_main([*build, "--providers", "cpu", "--no-progress"]) == 0
    return variants_root, bundles_root


@pytest.fixture(scope="module")
def service(
    roots: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveService]:
    log = tmp_path_factory.mktemp("page-log") / "service.log"
    served = start_service(*roots, log)
    yield served
    assert stop_service(served) == 0, served.log()


@pytest.fixture(scope="module")
def scene_image(roots: tuple[Path, Path]) -> Path:
    images = sorted((roots[0].parent / "scenes-corpus" / "images" / "val").glob("*"))
    return images[3]


@pytest.fixture
def page(service: LiveService) -> Iterator[BrowserPage]:
    with browser_page() as opened:
        opened.page.goto(service.url + "/")
        opened.page.wait_for_selector("#collection option", state="attached", timeout=TIMEOUT_MS)
        yield opened
        assert opened.errors == []


def screenshot(browser: BrowserPage, name: str, factory: pytest.TempPathFactory) -> None:
    folder = screenshot_folder(factory.getbasetemp())
    browser.page.screenshot(path=str(folder / name), full_page=True)


def hits(browser: BrowserPage, column: int = 0) -> list[dict[str, str]]:
    """The results of ``column`` as the page shows them."""
    return browser.page.eval_on_selector_all(
        f"#results .column:nth-of-type({column + 1}) li.hit",
        """items => items.map(item => ({
            id: item.dataset.id,
            rank: item.dataset.rank,
            score: item.querySelector('.score').textContent,
            caption: (item.querySelector('.caption') || {}).textContent || '',
            thumbnail: String(Boolean(item.querySelector('img.thumbnail')
                && item.querySelector('img.thumbnail').naturalWidth > 0)),
        }))""",
    )


def search(browser: BrowserPage) -> None:
    browser.page.click("#search-button")
    wait_until(
        browser.page,
        "document.querySelector('#status').textContent.includes('results in')"
        " || !document.querySelector('#error').hidden",
    )


def test_the_variant_picker_lists_the_variants_and_their_collections(page: BrowserPage) -> None:
    variants = page.page.eval_on_selector_all("#variant option", "o => o.map(x => x.value)")
    assert variants == ["", "scenes-dual-encoder"]
    page.page.select_option("#variant", "scenes-dual-encoder")
    names = page.page.eval_on_selector_all("#collection option", "o => o.map(x => x.value)")
    assert sorted(names) == [
        "scenes-hnsw:captions",
        "scenes-hnsw:images",
        "scenes:captions",
        "scenes:images",
    ]
    info = page.page.text_content("#variant-info") or ""
    assert "scenes-dual-encoder: " in info
    assert "towers" in info
    assert page.page.is_enabled("#query-image")


def test_a_text_query_shows_k_results_with_scores(
    page: BrowserPage, tmp_path_factory: pytest.TempPathFactory
) -> None:
    page.page.select_option("#collection", "scenes:captions")
    page.page.select_option("#k", "5")
    page.page.fill("#query-text", "a red circle")
    search(page)
    shown = hits(page)
    assert [hit["rank"] for hit in shown] == ["1", "2", "3", "4", "5"]
    scores = [float(hit["score"]) for hit in shown]
    assert scores == sorted(scores, reverse=True)
    assert all(hit["caption"] for hit in shown)  # text items show their caption
    timings = page.page.text_content("#results .timings") or ""
    assert re.search(r"encode [\d.]+ ms · search [\d.]+ ms", timings)
    screenshot(page, "search-text.png", tmp_path_factory)


def test_an_uploaded_image_shows_image_results_with_thumbnails(
    page: BrowserPage, scene_image: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    page.page.select_option("#collection", "scenes:images")
    page.page.set_input_files("#query-image", str(scene_image))
    assert page.page.text_content("#image-name") == scene_image.name
    search(page)
    wait_until(
        page.page,
        "[...document.querySelectorAll('img.thumbnail')].every(i => i.complete && i.naturalWidth)",
    )
    shown = hits(page)
    assert len(shown) == 10
    assert all(hit["thumbnail"] == "true" for hit in shown)
    assert shown[0]["id"].endswith(scene_image.name)  # the image itself comes first
    screenshot(page, "search-image.png", tmp_path_factory)


def test_more_like_this_searches_by_a_result(page: BrowserPage) -> None:
    page.page.select_option("#collection", "scenes:images")
    page.page.fill("#query-text", "a blue square")
    search(page)
    third = hits(page)[2]["id"]
    page.page.click("#results li.hit:nth-of-type(3) .more-like-this")
    wait_until(page.page, f"document.querySelector('#results li.hit')?.dataset.id === {third!r}")
    assert third in (page.page.text_content("#item-query") or "")
    assert float(hits(page)[0]["score"]) == pytest.approx(1.0, abs=1e-3)


def test_compare_shows_two_columns_and_their_overlap(
    page: BrowserPage, tmp_path_factory: pytest.TempPathFactory
) -> None:
    page.page.select_option("#collection", "scenes:images")
    page.page.check("#compare-on")
    page.page.select_option("#compare-collection", "scenes-hnsw:images")
    page.page.fill("#query-text", "a green triangle")
    search(page)
    assert page.page.locator("#results .column").count() == 2
    overlap = page.page.text_content("#overlap") or ""
    assert re.match(r"overlap@10: [01]\.\d\d \(\d+ of 10 results in both\)", overlap)
    left, right = hits(page, 0), hits(page, 1)
    assert len(left) == len(right) == 10
    shared = len({hit["id"] for hit in left} & {hit["id"] for hit in right})
    assert overlap.startswith(f"overlap@10: {shared / 10:.2f}")
    assert page.page.locator("#results .column:nth-of-type(2) .moved").count() == 10
    screenshot(page, "search-compare.png", tmp_path_factory)


def test_a_filter_narrows_the_results_and_paging_moves_on(
    page: BrowserPage, service: LiveService
) -> None:
    captions = next(
        c
        for c in httpx.get(f"{service.url}/v1/collections").json()["collections"]
        if c["qualified_name"] == "scenes:captions"
    )
    assert captions["fields"]["image_id"] == "integer"
    page.page.select_option("#collection", "scenes:captions")
    page.page.fill("#query-text", "a shape")
    search(page)
    first_page = [hit["id"] for hit in hits(page)]
    assert len(first_page) == 10
    page.page.click("#next-page")
    wait_until(
        page.page, "document.querySelector('#page-label').textContent.startsWith('results 11')"
    )
    assert not {hit["id"] for hit in hits(page)} & set(first_page)

    item = httpx.get(f"{service.url}/v1/items/scenes:captions/{first_page[0]}").json()
    image_id = item["metadata"]["image_id"]
    page.page.select_option("#filter-field", "image_id")
    page.page.select_option("#filter-op", "eq")
    page.page.fill("#filter-value", str(image_id))
    search(page)
    filtered = hits(page)
    assert 1 <= len(filtered) < 10  # the captions of one image
    for hit in filtered:
        metadata = httpx.get(f"{service.url}/v1/items/scenes:captions/{hit['id']}").json()
        assert metadata["metadata"]["image_id"] == image_id


def test_with_keys_on_the_key_is_asked_for_and_then_used(
    roots: tuple[Path, Path], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    keyed = start_service(*roots, tmp_path / "keyed.log", {"CRISSCROSS_READ_KEYS": READ_KEY})
    try:
        with browser_page(width=420, height=900) as browser:  # a narrow screen, too
            browser.page.goto(keyed.url + "/")
            browser.page.wait_for_selector("#error:not([hidden])", timeout=TIMEOUT_MS)
            assert "401" in (browser.page.text_content("#error") or "")
            browser.page.fill("#query-text", "a red circle")
            search(browser)
            assert "Enter an API key" in (browser.page.text_content("#error") or "")
            browser.page.fill("#api-key", READ_KEY)
            search(browser)
            assert browser.page.is_hidden("#error")
            assert len(hits(browser)) == 10
            assert READ_KEY not in browser.page.url
            stored = browser.page.evaluate(
                "JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie"
            )
            assert READ_KEY not in stored
            # Readable on a narrow screen: nothing wider than the window.
            assert browser.page.evaluate(
                "document.documentElement.scrollWidth <= window.innerWidth"
            )
            screenshot(browser, "search-narrow.png", tmp_path_factory)
            # The refused requests are the only errors the browser reported.
            assert browser.errors
            assert all("401" in error for error in browser.errors), browser.errors
    finally:
        assert stop_service(keyed) == 0, keyed.log()


def test_a_live_collection_takes_an_item_and_a_delete_from_the_page(
    roots: tuple[Path, Path], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    env = {"CRISSCROSS_COLLECTIONS_DIR": str(tmp_path / "collections")}
    served = start_service(*roots, tmp_path / "live.log", env)
    try:
        created = httpx.post(
            served.url + "/v1/collections",
            json={"name": "notes", "variant": "scenes-dual-encoder", "fields": {"topic": "string"}},
        )
        assert created.status_code == 201, created.text
        items = [
            {"id": f"n{n}", "text": text, "metadata": {"topic": "shapes"}}
            for n, text in enumerate(["a blue square", "a green triangle", "a small yellow star"])
        ]
        upserted = httpx.post(served.url + "/v1/collections/notes/items", json={"items": items})
        assert upserted.status_code == 200, upserted.text
        with browser_page() as browser:
            browser.page.goto(served.url + "/")
            browser.page.wait_for_selector("#collection option[value=notes]", state="attached")
            browser.page.select_option("#collection", "notes")
            assert browser.page.is_visible("#live-row")
            browser.page.fill("#add-id", "n-new")
            browser.page.fill("#add-text", "a big red circle")
            browser.page.fill("#add-metadata", '{"topic": "circles"}')
            browser.page.click("#add-button")
            wait_until(
                browser.page,
                "document.querySelector('#status').textContent.includes('Added n-new')",
            )
            assert "4 items" in (browser.page.text_content("#collection option[value=notes]") or "")
            browser.page.fill("#query-text", "a big red circle")
            search(browser)
            found = [hit["id"] for hit in hits(browser)]
            assert found[0] == "n-new", found
            screenshot(browser, "search-live.png", tmp_path_factory)
            browser.page.click("li.hit[data-id='n-new'] button.delete-item")
            wait_until(
                browser.page,
                "document.querySelector('#status').textContent.includes('Deleted n-new')",
            )
            assert "n-new" not in [hit["id"] for hit in hits(browser)]
            assert browser.errors == []
        stored = httpx.post(served.url + "/v1/collections/notes/items/get", json={"ids": ["n-new"]})
        assert stored.json()["items"] == []
    finally:
        assert stop_service(served) == 0, served.log()
