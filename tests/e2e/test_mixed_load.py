"""End to end, the mixed run (``python -m benchmarks mixed``) against a real
``python -m service serve`` process that serves live collections only (a collections folder,
no bundle): a fresh collection preloaded, searched idle and beside two writers, every
acknowledged write read back at once. Latency is the benchmark's business; here the writes must
flow, every write must be visible at its first read, no deleted id may come back, no request may
fail, and the three files must be written."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import benchmarks.__main__ as cli
from tests.e2e.conftest import LiveService, start_service, stop_service

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def live_only_service(tmp_path: Path) -> Iterator[LiveService]:
    """The service on a collections folder in ``tmp_path``, with empty variants and bundles
    folders (``CRISSCROSS_COLLECTIONS_DIR`` is ``--collections-dir``)."""
    variants_root, bundles_root = tmp_path / "variants", tmp_path / "bundles"
    variants_root.mkdir()
    bundles_root.mkdir()
    env = {"CRISSCROSS_COLLECTIONS_DIR": str(tmp_path / "collections")}
    service = start_service(variants_root, bundles_root, tmp_path / "service.log", env)
    yield service
    assert stop_service(service) == 0, service.log()


def test_writes_while_searching_are_visible_at_once_and_deletes_stay_deleted(
    live_only_service: LiveService, tmp_path: Path
) -> None:
    out = tmp_path / "reports" / "mixed"
    arguments = ["mixed", "--url", live_only_service.url, "--out", str(out), "--no-progress"]
    arguments += ["--preload", "500", "--phase-s", "2", "--dim", "16", "--warmup", "5"]
    started = time.monotonic()
    assert cli.main(arguments) == 0, live_only_service.log()
    print(f"mixed run: {time.monotonic() - started:.1f} s")
    for name in ("mixed.json", "mixed.md", "mixed.png"):
        assert (out / name).is_file(), name
    assert (out / "mixed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((out / "mixed.json").read_text(encoding="utf-8"))
    writing = report["phases"]["writing"]
    assert writing["items_per_s"] > 0, writing
    assert writing["upserts"]["ok"] > 0
    assert writing["delete_checks"]["deletes"] > 0, writing["delete_checks"]
    for phase in ("idle", "writing"):
        assert report["phases"][phase]["search"]["ok"] > 0
    for kind in ("get", "search"):
        visibility = writing["visibility"][kind]
        assert visibility["checked"] == writing["upserts"]["ok"], visibility
        assert visibility["not_visible_at_first_read"] == 0, visibility
    assert report["totals"] == {
        "errors": 0,
        "retried_503": report["totals"]["retried_503"],
        "not_visible_at_first_read": 0,
        "never_visible": 0,
        "resurrected_deletes": 0,
        "delete_not_found": 0,
    }
    final = report["collection"]["final"]
    assert final["count"] == 500 + writing["items_upserted"] - writing["ids_deleted"]
    # Dropped at the end.
    answer = httpx.get(f"{live_only_service.url}/v1/collections/mixed-bench", timeout=10)
    assert answer.status_code == 404, answer.text
