"""A real headless Chromium (Debian's ``chromium``) driven by Playwright, for the page tests:
Playwright cannot download its own browsers here, so it launches the system executable.
Console errors and uncaught page errors are collected so a test can require there were none."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import ConsoleMessage, Error, Page, sync_playwright

from tests.conftest import REPO_ROOT, require_tools

SCREENSHOTS = REPO_ROOT / "docs" / "screenshots"
UPDATE_SCREENSHOTS = "CRISSCROSS_UPDATE_SCREENSHOTS"

# No background networking: this machine's closed network refuses it, loudly.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@dataclass
class BrowserPage:
    """A page, and the console errors and page errors seen on it so far."""

    page: Page
    errors: list[str] = field(default_factory=list)

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text}")

    def on_page_error(self, error: Error) -> None:
        self.errors.append(f"page error: {error.message}")


@contextmanager
def browser_page(width: int = 1280, height: int = 900) -> Iterator[BrowserPage]:
    """A fresh page in a fresh headless Chromium."""
    chromium = require_tools("chromium")["chromium"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS))
        try:
            context = browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            watched = BrowserPage(page)
            page.on("console", watched.on_console)
            page.on("pageerror", watched.on_page_error)
            yield watched
        finally:
            browser.close()


def wait_until(page: Page, expression: str, timeout_s: float = 30.0) -> None:
    """Poll the JavaScript ``expression`` until it is truthy (Playwright's own wait_for_function
    evaluates strings inside the page, which the page's Content-Security-Policy forbids)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(f"still false after {timeout_s} s: {expression}")
        time.sleep(0.05)


def screenshot_folder(scratch: Path) -> Path:
    """Where a test's screenshots go: the README's ``docs/screenshots`` with
    ``CRISSCROSS_UPDATE_SCREENSHOTS=1`` (``make screenshots``), else ``scratch``."""
    return SCREENSHOTS if os.environ.get(UPDATE_SCREENSHOTS) == "1" else scratch
