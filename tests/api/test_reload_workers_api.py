"""A reload with several worker processes, played by in-process apps that share one run folder
(the real processes are in tests/e2e/test_workers.py): the worker reached reloads, the others
load the same versions before it answers, and a worker that starts later serves them from its
first answer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.http.app import create_app
from service.metrics import MULTIPROCESS_DIR_VARIABLE
from service.process_layout import ProcessLayout
from service.settings import Settings
from tests.api.test_reload_api import (
    BUNDLE,
    V1,
    V2,
    reload,
    reload_settings,
    served_version,
    write_v2,
)
from tests.fakes.fake_encoders import FakeTextEncoder, fake_factory
from tests.fakes.service_app import wait_ready


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workers' shared folder; the metrics variable names its metrics folder, as the
    supervisor sets it for real workers."""
    folder = tmp_path / "run"
    (folder / "metrics").mkdir(parents=True)
    monkeypatch.setenv(MULTIPROCESS_DIR_VARIABLE, str(folder / "metrics"))
    return folder


@contextmanager
def workers(
    settings: Settings, run_dir: Path, *indexes: int, of: int = 2
) -> Iterator[list[TestClient]]:
    """Ready clients of workers ``indexes`` (of ``of``) sharing ``run_dir``."""
    with ExitStack() as stack:
        clients = []
        for index in indexes:
            app = create_app(
                settings,
                encoder_factory=fake_factory(FakeTextEncoder()),
                layout=ProcessLayout(workers=of, worker=index, run_dir=run_dir),
            )
            client = stack.enter_context(TestClient(app))
            wait_ready(client)
            clients.append(client)
        yield clients


def test_a_reload_reaches_every_worker_before_it_answers(
    bundles_root: Path, variants_root: Path, run_dir: Path
) -> None:
    settings = reload_settings(bundles_root, variants_root)
    write_v2(bundles_root, make_current=False)  # CURRENT stays on V1: workers must follow V2
    with workers(settings, run_dir, 0, 1) as (first, second):
        answer = reload(first, {"bundle": BUNDLE, "version": V2})
        assert answer.status_code == 200, answer.text
        assert answer.json()["workers"] == 2
        assert served_version(first) == V2
        assert served_version(second) == V2  # already: the answer waited for it
        variants = second.get("/v1/variants").json()
        assert variants["processes"]["workers"] == 2
        assert variants["processes"]["worker"] == 1
        # A worker that starts now (a replacement) loads CURRENT, then the latest order.
        with workers(settings, run_dir, 1) as (replacement,):
            assert served_version(replacement) == V2
        # Back to V1, asked of the other worker.
        back = reload(second, {"bundle": BUNDLE, "version": V1})
        assert back.json()["workers"] == 2
        assert (served_version(first), served_version(second)) == (V1, V1)


def test_a_worker_that_never_follows_is_counted_out_after_the_timeout(
    bundles_root: Path, variants_root: Path, run_dir: Path
) -> None:
    settings = reload_settings(bundles_root, variants_root, reload_broadcast_timeout_s=0.3)
    write_v2(bundles_root, make_current=False)
    with workers(settings, run_dir, 0) as (only,):  # worker 1 of 2 is not running
        answer = reload(only, {"bundle": BUNDLE, "version": V2})
    assert answer.status_code == 200, answer.text
    assert answer.json()["workers"] == 1


def test_a_refused_reload_sends_no_order(
    bundles_root: Path, variants_root: Path, run_dir: Path
) -> None:
    settings = reload_settings(bundles_root, variants_root)
    with workers(settings, run_dir, 0, 1) as (first, second):
        missing = reload(first, {"bundle": BUNDLE, "version": "20990101T000000Z"})
        assert missing.status_code == 404, missing.text
        assert not (run_dir / "reload" / "order.json").exists()
        assert served_version(second) == V1
