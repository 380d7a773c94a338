"""The search page: ``GET /`` (the page) and ``GET /ui/{asset}`` (its script and style sheet),
files inside the package (``service/http/static``), no network fetch at run time.

The page calls the JSON API from the browser; with keys on it asks for one and sends it as a
bearer header (never in a URL, never stored). Left out of the OpenAPI document: not API.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Final

from fastapi import APIRouter, Response

from service.exceptions import NotFoundError, quoted

router = APIRouter(include_in_schema=False)

ASSETS: Final = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
# The page changes with the service version: browsers revalidate rather than guess.
PAGE_CACHE_CONTROL: Final = "no-cache"
# What the page may load and call: itself, the API and thumbnails (blob: URLs made from them).
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


@cache
def _static(name: str) -> bytes:
    """A page file's bytes, read from the package once per process."""
    return resources.files("service.http").joinpath("static", name).read_bytes()


def _headers() -> dict[str, str]:
    return {
        "Cache-Control": PAGE_CACHE_CONTROL,
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "X-Content-Type-Options": "nosniff",
    }


@router.get("/")
async def page() -> Response:
    """The search page."""
    html = _static("index.html")
    return Response(html, media_type="text/html; charset=utf-8", headers=_headers())


@router.get("/ui/{asset}")
async def asset(asset: str) -> Response:
    """One of the page's own files."""
    media_type = ASSETS.get(asset)
    if media_type is None:
        raise NotFoundError(f"no page asset {quoted(asset)}; there are {', '.join(ASSETS)}")
    return Response(_static(asset), media_type=media_type, headers=_headers())
