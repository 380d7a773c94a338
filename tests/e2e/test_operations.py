"""End to end, operations under load and under attack: a real uvicorn process serving a bundle
of real COCO captions embedded by the real exported MiniLM — one process, and two worker
processes under the supervisor (the first three guarantees are checked in both layouts).

- SIGTERM while requests are in flight: they finish with 200, readiness turns 503, exit 0.
- A hot reload under a stream of searches: no errors, every answer wholly from one version.
- A corrupt new version is refused by reload while the old one keeps serving.
- A build killed midway leaves the served bundle and CURRENT intact.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from formats.karpathy import CaptionRecord
from storage.layout import CURRENT_FILE
from storage.manifest import verify_bundle
from storage.reader import load_bundle, resolve_current
from storage.writer import CollectionInput, set_current, write_bundle
from tests.e2e.conftest import LiveService, start_service, stop_service

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ADMIN_KEY = "e2e-admin-key-0123456789abcdef"
ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}
BUNDLE = "coco-captions"
RELOAD_ENV = {"CRISSCROSS_ADMIN_KEYS": ADMIN_KEY, "CRISSCROSS_ADMIN_RELOAD": "true"}
V2_SUFFIX = "#v2"
TIMEOUT_S = 60.0


@pytest.fixture(params=[1, 2], ids=["1-worker", "2-workers"])
def workers(request: pytest.FixtureRequest) -> int:
    """The process layout under test: ``CRISSCROSS_WORKERS``."""
    return int(request.param)


def with_workers(env: dict[str, str], workers: int) -> dict[str, str]:
    return {**env, "CRISSCROSS_WORKERS": str(workers)}


@contextmanager
def serving(
    roots: tuple[Path, Path], tmp_path: Path, env: dict[str, str] | None = None
) -> Iterator[LiveService]:
    """A service on ``roots``, stopped with SIGTERM afterwards (and required to exit 0)."""
    variants_root, bundles_root = roots
    service = start_service(variants_root, bundles_root, tmp_path / "service.log", env)
    try:
        yield service
    finally:
        assert stop_service(service) == 0, service.log()


def search(client: httpx.Client, text: str, k: int = 10) -> httpx.Response:
    return client.post(
        "/v1/search", json={"query": {"text": text}, "collection": "captions", "k": k}
    )


def reload(service: LiveService, body: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(
        f"{service.url}/v1/admin/reload", json=body or {}, headers=ADMIN, timeout=TIMEOUT_S
    )


def served_version(service: LiveService) -> str:
    collections = httpx.get(f"{service.url}/v1/collections").json()["collections"]
    (version,) = {collection["bundle_version"] for collection in collections}
    return str(version)


def write_tagged_version(bundles_root: Path, version: str) -> Path:
    """A new version of the served bundle holding the same real MiniLM embeddings under other
    ids (``<id>#v2``) and metadata (``release: v2``), so an answer tells which version it came
    from. Written without moving CURRENT."""
    current = load_bundle(resolve_current(bundles_root / BUNDLE))
    captions = current.collections["captions"]
    tagged = CollectionInput(
        name="captions",
        ids=[item_id + V2_SUFFIX for item_id in captions.ids],
        metadata=[{**metadata, "release": "v2"} for metadata in captions.metadata],
        vectors=captions.vectors,
    )
    return write_bundle(
        bundles_root,
        BUNDLE,
        [tagged],
        variant_name=current.variant_name,
        variant_fingerprint=current.variant_fingerprint,
        version=version,
        make_current=False,
    )


# -- (a) SIGTERM drains ---------------------------------------------------------------------------


def test_sigterm_lets_in_flight_requests_finish_then_exits_0(
    private_roots: tuple[Path, Path],
    tmp_path: Path,
    real_captions: list[CaptionRecord],
    workers: int,
) -> None:
    delay_s, graceful_s = 3.0, 30
    env = {
        "CRISSCROSS_SHUTDOWN_DELAY_S": str(delay_s),
        "CRISSCROSS_GRACEFUL_SHUTDOWN_S": str(graceful_s),
        # A busy 2-core machine must not turn the queued work into deadline refusals.
        "CRISSCROSS_REQUEST_TIMEOUT_MS": "60000",
        "CRISSCROSS_WORKERS": str(workers),
    }
    variants_root, bundles_root = private_roots
    service = start_service(variants_root, bundles_root, tmp_path / "service.log", env)
    texts = [record.text for record in real_captions]
    finished_at: dict[int, float] = {}

    def slow_request(number: int) -> httpx.Response:
        # 48 texts per request (more than a micro-batch), 8 requests: seconds of encoder work.
        batch = texts[number * 48 : (number + 1) * 48]
        with httpx.Client(base_url=service.url, timeout=TIMEOUT_S) as client:
            response = client.post("/v1/embed", json={"texts": batch})
        finished_at[number] = time.monotonic()
        return response

    try:
        with ThreadPoolExecutor(8) as pool:
            in_flight = [pool.submit(slow_request, number) for number in range(8)]
            deadline = time.monotonic() + TIMEOUT_S
            while "crisscross_encode_queue_depth" not in _metrics(service) or _queued(service) < 1:
                assert time.monotonic() < deadline, "requests never queued"
                time.sleep(0.05)
            signalled_at = time.monotonic()
            service.process.send_signal(signal.SIGTERM)
            # Readiness turns 503 at once; during the delay the service still answers.
            readiness = httpx.get(f"{service.url}/readyz", timeout=TIMEOUT_S)
            with httpx.Client(base_url=service.url, timeout=TIMEOUT_S) as client:
                late = search(client, "a dog on a couch", k=3)
            answers = [future.result(timeout=TIMEOUT_S) for future in in_flight]
        exit_code = service.process.wait(timeout=delay_s + graceful_s + 15)
        exited_after_s = time.monotonic() - signalled_at
    finally:
        if service.process.poll() is None:
            service.process.kill()
            service.process.wait()
    assert readiness.status_code == 503, readiness.text
    assert readiness.json()["error"]["code"] == "not_ready"
    assert "shutting down" in readiness.json()["error"]["message"]
    assert readiness.headers["retry-after"]
    assert late.status_code == 200, late.text
    assert [answer.status_code for answer in answers] == [200] * 8, service.log()
    assert all(len(answer.json()["embeddings"]) == 48 for answer in answers)
    assert any(moment > signalled_at for moment in finished_at.values())  # truly in flight
    assert exit_code == 0, service.log()
    assert exited_after_s < delay_s + graceful_s + 5
    # Every worker drained (the supervisor forwarded the signal to each).
    assert service.log().count("shutdown signal") == workers, service.log()


def _metrics(service: LiveService) -> str:
    return httpx.get(f"{service.url}/metrics", timeout=TIMEOUT_S).text


def _queued(service: LiveService) -> float:
    for line in _metrics(service).splitlines():
        if line.startswith("crisscross_encode_queue_depth{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


# -- (b) reload under load ------------------------------------------------------------------------


@dataclass
class SearchLoad:
    """Threads searching real captions in a loop until stopped; every answer is kept."""

    service: LiveService
    texts: list[str]
    threads: int = 3
    stop: threading.Event = field(default_factory=threading.Event)
    answers: list[httpx.Response] = field(default_factory=list)
    sent_at: dict[int, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def run(self, worker: int) -> None:
        with httpx.Client(base_url=self.service.url, timeout=TIMEOUT_S) as client:
            count = worker
            while not self.stop.is_set():
                sent = time.monotonic()
                try:
                    answer = search(client, self.texts[count % len(self.texts)])
                except httpx.HTTPError as error:
                    self.failures.append(repr(error))
                else:
                    self.sent_at[id(answer)] = sent
                    self.answers.append(answer)
                count += self.threads

    def sent_after(self, moment: float) -> list[httpx.Response]:
        return [answer for answer in self.answers if self.sent_at[id(answer)] > moment]

    def answered_versions(self) -> set[str]:
        return {answer.json()["bundle_version"] for answer in self.answers if answer.is_success}


@contextmanager
def search_load(service: LiveService, texts: list[str]) -> Iterator[SearchLoad]:
    load = SearchLoad(service, texts)
    with ThreadPoolExecutor(load.threads) as pool:
        workers: list[Future[None]] = [pool.submit(load.run, n) for n in range(load.threads)]
        try:
            yield load
        finally:
            load.stop.set()
            for worker in workers:
                worker.result(timeout=TIMEOUT_S)


def wait_for_answers(load: SearchLoad, count: int) -> None:
    target = len(load.answers) + count
    deadline = time.monotonic() + TIMEOUT_S
    while len(load.answers) < target:
        assert time.monotonic() < deadline, "the search load stalled"
        time.sleep(0.02)


def test_a_reload_under_load_swaps_versions_without_an_error(
    private_roots: tuple[Path, Path],
    tmp_path: Path,
    real_captions: list[CaptionRecord],
    workers: int,
) -> None:
    _, bundles_root = private_roots
    old_version = resolve_current(bundles_root / BUNDLE).name
    new_version = "20990101T000000000000Z"
    texts = [record.text for record in real_captions[::7]]
    with serving(private_roots, tmp_path, with_workers(RELOAD_ENV, workers)) as service:
        with search_load(service, texts) as load:
            wait_for_answers(load, 15)
            write_tagged_version(bundles_root, new_version)
            set_current(bundles_root / BUNDLE, new_version)
            wait_for_answers(load, 5)
            reloaded = reload(service)
            reloaded_at = time.monotonic()
            wait_for_answers(load, 15)
        assert reloaded.status_code == 200, reloaded.text
        assert reloaded.json()["bundles"] == [
            {
                "bundle": BUNDLE,
                "previous_version": old_version,
                "version": new_version,
                "changed": True,
            }
        ]
        assert reloaded.json()["workers"] == workers
        # Whichever worker answers serves the new version.
        assert {served_version(service) for _ in range(8)} == {new_version}
        metrics = _metrics(service)
        assert 'crisscross_reloads_total{outcome="swapped"} 1.0' in metrics
        if workers > 1:
            assert f'crisscross_reloads_total{{outcome="followed"}} {workers - 1}.0' in metrics
    assert load.failures == []
    assert [a.text for a in load.answers if a.status_code != 200] == []
    assert load.answered_versions() == {old_version, new_version}
    for answer in load.answers:
        body = answer.json()
        ids = [hit["id"] for hit in body["results"]]
        releases = {hit["metadata"].get("release") for hit in body["results"]}
        if body["bundle_version"] == new_version:
            assert all(item_id.endswith(V2_SUFFIX) for item_id in ids), body
            assert releases == {"v2"}, body
        else:
            assert not any(item_id.endswith(V2_SUFFIX) for item_id in ids), body
            assert releases == {None}, body
    # Every search sent after the reload answered came from the new version.
    after = load.sent_after(reloaded_at)
    assert after
    assert {answer.json()["bundle_version"] for answer in after} == {new_version}


# -- (c) a corrupt version is refused -------------------------------------------------------------


def test_a_corrupt_version_is_refused_while_the_old_one_keeps_serving(
    private_roots: tuple[Path, Path],
    tmp_path: Path,
    real_captions: list[CaptionRecord],
    workers: int,
) -> None:
    _, bundles_root = private_roots
    old_version = resolve_current(bundles_root / BUNDLE).name
    bad_version = "20990202T000000000000Z"
    texts = [record.text for record in real_captions[::11]]
    with serving(private_roots, tmp_path, with_workers(RELOAD_ENV, workers)) as service:
        bad_dir = write_tagged_version(bundles_root, bad_version)
        vectors = bad_dir / "captions.vectors.npy"
        data = bytearray(vectors.read_bytes())
        data[-7] ^= 0x01  # one bit of one embedding
        vectors.write_bytes(bytes(data))
        # A careless deploy points CURRENT at it without verifying (set_current would refuse).
        (bundles_root / BUNDLE / CURRENT_FILE).write_text(bad_version + "\n")
        with search_load(service, texts) as load:
            wait_for_answers(load, 10)
            refused = reload(service)
            named = reload(service, {"bundle": BUNDLE, "version": bad_version})
            wait_for_answers(load, 10)
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "bundle_rejected"
        assert "sha256" in refused.json()["error"]["message"]
        assert named.status_code == 409, named.text
        assert {served_version(service) for _ in range(8)} == {old_version}
        assert httpx.get(f"{service.url}/readyz").status_code == 200
        assert 'crisscross_reloads_total{outcome="rejected"} 2.0' in _metrics(service)
    assert load.failures == []
    assert {answer.status_code for answer in load.answers} == {200}
    assert load.answered_versions() == {old_version}


# -- (d) a build killed midway --------------------------------------------------------------------


def _entries(bundle_dir: Path) -> set[str]:
    """Version folders and pointers a service could see (hidden staging folders excluded)."""
    return {path.name for path in bundle_dir.iterdir() if not path.name.startswith(".")}


def test_a_build_killed_while_embedding_leaves_the_served_bundle_intact(
    private_roots: tuple[Path, Path], tmp_path: Path, data_dir: Path
) -> None:
    variants_root, bundles_root = private_roots
    bundle_dir = bundles_root / BUNDLE
    current_before = (bundle_dir / CURRENT_FILE).read_bytes()
    entries_before = _entries(bundle_dir)
    variant_dir = next(path for path in variants_root.iterdir() if path.is_dir())
    with serving(private_roots, tmp_path, RELOAD_ENV) as service:
        build = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "index_builder",
                "build",
                "--variant",
                str(variant_dir),
                "--name",
                BUNDLE,
                "--captions",
                str(data_dir / "coco-karpathy-captions" / "captions_val.csv"),
                "--bundles-root",
                str(bundles_root),
                "--providers",
                "cpu",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            progress = _wait_for_embedding_progress(build)
            build.send_signal(signal.SIGKILL)
            assert build.wait(timeout=TIMEOUT_S) == -signal.SIGKILL
        finally:
            if build.poll() is None:
                build.kill()
                build.wait()
            assert build.stderr is not None
            build.stderr.close()
        assert "embedding captions" in progress
        # Nothing a reader could mistake for a bundle was left behind.
        assert (bundle_dir / CURRENT_FILE).read_bytes() == current_before
        assert _entries(bundle_dir) == entries_before
        manifest = verify_bundle(resolve_current(bundle_dir))
        assert manifest.collections["captions"].count > 0
        # The service is undisturbed: it reloads (nothing new) and answers.
        reloaded = reload(service)
        assert reloaded.status_code == 200, reloaded.text
        assert reloaded.json()["bundles"][0]["changed"] is False
        with httpx.Client(base_url=service.url, timeout=TIMEOUT_S) as client:
            assert search(client, "a dog on a couch").status_code == 200
    # A fresh process starts from what the killed build left.
    (tmp_path / "again").mkdir()
    with serving(private_roots, tmp_path / "again") as again:
        assert served_version(again) == current_before.decode().strip()


def _wait_for_embedding_progress(build: subprocess.Popen[bytes]) -> str:
    """Read the build's stderr until its progress bar has embedded some captions."""
    assert build.stderr is not None
    seen = bytearray()
    deadline = time.monotonic() + TIMEOUT_S * 2
    while time.monotonic() < deadline:
        chunk = build.stderr.read1(4096)
        text = seen.decode(errors="replace")
        if not chunk:
            raise AssertionError(f"the build ended before embedding:\n{text}")
        seen += chunk
        text = seen.decode(errors="replace")
        done = [int(count) for count in _EMBEDDED.findall(text)]
        if done and max(done) > 0:
            return text
    raise AssertionError(f"no embedding progress in time:\n{seen.decode(errors='replace')}")


# tqdm's bar: "embedding captions:   1%|▏   | 256/25010 [00:01<...]"
_EMBEDDED = re.compile(r"embedding captions:[^\r\n]*?\| *(\d+)/\d+")
