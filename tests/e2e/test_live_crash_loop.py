"""End to end, a crash loop over a live collection (after Qdrant's "crasher"): writers send
small batches of upserts (new ids and replacements), metadata patches, deletes by ids and by
filter, compactions (asked for, and by itself every 60 rows: each writes a new base bundle and
empties the log), and searches to a real uvicorn process, which is SIGKILLed at a random moment; the
service restarts on the same collections folder and the collection is checked against the
model the test keeps:

- every acknowledged write is there: no acknowledged item missing, its vector byte-equal to the
  one the service stored while alive, its metadata as written (patches included);
- no acknowledged delete undone: the id is not in a get, a search or a filtered search;
- no phantom: every id the collection holds was written by some request; no id twice in a
  search; the count is the model's, and the sequence number lies between the last
  acknowledged one and that plus the writes in flight;
- a write in flight at the kill (its answer never came) is wholly there or wholly absent; the
  model then adopts what it finds.

Two writers run at once, each on its own ids and its own metadata values (so a delete by filter
or a filtered search of one writer touches its own items only): their writes share fsyncs
(group commit), and each has at most one write in flight at a kill.

``CRISSCROSS_CRASH_KILLS`` sets the number of kills (50 by default; e.g. 500 for a soak run),
``CRISSCROSS_CRASH_SEED`` the seed (random by default; printed, and named by every failure). The
service serves a tiny bundle of the tiny word-level variant, so a restart costs the process's
imports and little else.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import httpx
import numpy as np
import numpy.typing as npt
import pytest

from encoders.text_encoder import OnnxTextEncoder
from formats.layout import captions_path
from tests.e2e.conftest import free_port
from tests.fakes.tiny_data import write_tiny_dataset
from tests.fakes.tiny_variant import make_tiny_variant
from tests.unit.index_builder.captions_bundle import build_captions_bundle

KILLS_VARIABLE = "CRISSCROSS_CRASH_KILLS"
SEED_VARIABLE = "CRISSCROSS_CRASH_SEED"
KILLS = int(os.environ.get(KILLS_VARIABLE) or "50")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    # About 2.5 s a kill on 2 busy cores (restart, writes, checks): room for slower machines.
    pytest.mark.timeout(max(600, 15 * KILLS)),
]

COLLECTION = "crash"
DIM = 8
WRITERS = 2
POOL = 150
"""Ids each writer draws from (``w<writer>-<n>``): at most 300 items, so one search of
k=1000 returns the whole collection and one get reads every id."""
CATS = 4
"""Values of the ``cat`` field each writer uses (``w<writer>-c<n>``)."""
BATCH = (1, 10)
KILL_AFTER_S = (0.05, 0.5)
FULL_K = 1000
READY_TIMEOUT_S = 60.0
KILL_WAIT_S = 10.0
JOIN_TIMEOUT_S = 30.0
CLIENT_TIMEOUT = httpx.Timeout(10.0, connect=2.0)
LOG_TAIL_LINES = 80


@dataclass(frozen=True)
class Stored:
    """An item as the collection holds it: its float32 vector's bytes and its metadata."""

    vector: bytes
    metadata: Mapping[str, Any]

    def describe(self) -> str:
        values = np.frombuffer(self.vector, dtype=np.float32).tolist()
        return f"metadata={dict(self.metadata)} vector={values}"


State = dict[str, Stored | None]
"""Item id → what it holds (None: absent)."""


@dataclass(frozen=True)
class Write:
    """A write as sent: the ids it may change and what each holds once it is applied."""

    label: str
    before: State
    after: State


@dataclass
class Tally:
    """What the loop did and checked, for the report."""

    acked: dict[str, int] = field(default_factory=dict)
    searches: int = 0
    in_flight: int = 0
    landed: int = 0
    not_landed: int = 0
    undecidable: int = 0
    restarts_s: list[float] = field(default_factory=list)
    torn_tails: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ack(self, kind: str) -> None:
        with self.lock:
            self.acked[kind] = self.acked.get(kind, 0) + 1

    def searched(self) -> None:
        with self.lock:
            self.searches += 1


class CrashLoopError(AssertionError):
    """A guarantee broken (raised by writers too, and reported by the main thread)."""


def normalised(values: Sequence[float]) -> npt.NDArray[np.float32]:
    """``values`` as the service stores a client vector: float64, divided by the largest
    magnitude, then by the norm, cast to float32."""
    vector = np.asarray(values, dtype=np.float64)
    scaled = vector / np.abs(vector).max()
    unit: npt.NDArray[np.float32] = (scaled / np.linalg.norm(scaled)).astype(np.float32)
    return unit


def vector_bytes(values: Sequence[float]) -> bytes:
    """The float32 bytes of a vector the service returned (float32 values as JSON numbers)."""
    return np.asarray(values, dtype=np.float32).tobytes()


def pool_ids(writer: int) -> list[str]:
    return [f"w{writer}-{n:03d}" for n in range(POOL)]


def cats(writer: int) -> list[str]:
    return [f"w{writer}-c{n}" for n in range(CATS)]


ALL_IDS = [item for writer in range(WRITERS) for item in pool_ids(writer)]


class Writer(threading.Thread):
    """One writer: its own ids, its model of them (exact while it runs, since no one else
    writes them and its requests go one at a time), and the write it has in flight, if any."""

    def __init__(
        self,
        index: int,
        model: State,
        written: set[str],
        seqs: list[int],
        tally: Tally,
        stop: threading.Event,
    ) -> None:
        super().__init__(name=f"crash-writer-{index}", daemon=True)
        self.index = index
        self.model = model
        self.written = written
        self.seqs = seqs
        self.tally = tally
        self.stop = stop
        self.url = ""
        self.rng = random.Random()
        self.in_flight: Write | None = None
        self.failure: BaseException | None = None
        self.failure_trace = ""
        self.ids = pool_ids(index)
        self.cats = cats(index)

    def start_round(self, url: str, seed: int) -> None:
        self.url = url
        self.rng = random.Random(seed)
        self.in_flight = None
        self.failure = None
        self.failure_trace = ""

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.url, timeout=CLIENT_TIMEOUT) as client:
                while not self.stop.is_set():
                    self.step(client)
        except httpx.TransportError:
            # The server died (or hung past the timeout): the write in flight, if any, is
            # unacknowledged; the checks after the restart settle it.
            pass
        except BaseException as exc:  # reported by the main thread
            self.failure = exc
            self.failure_trace = traceback.format_exc()

    # -- one step ----------------------------------------------------------------------------

    def step(self, client: httpx.Client) -> None:
        roll = self.rng.random()
        if roll < 0.45:
            self.upsert(client)
        elif roll < 0.60:
            self.patch(client)
        elif roll < 0.75:
            self.delete_ids(client)
        elif roll < 0.80:
            self.delete_filter(client)
        elif roll < 0.82:
            self.compact(client)
        else:
            self.search(client)

    def compact(self, client: httpx.Client) -> None:
        """Ask for a compaction (the items stay what they are: a kill during it must keep every
        invariant); a 503 (another compaction's failure) would be a defect."""
        response = client.post(f"/v1/collections/{COLLECTION}/compact")
        if response.status_code != 200:
            self.fail(f"compact answered {response.status_code}: {response.text}")
        self.tally.ack("compact")

    def fail(self, message: str) -> NoReturn:
        raise CrashLoopError(f"writer {self.index}: {message}")

    def alive(self) -> list[str]:
        return [item for item in self.ids if self.model.get(item) is not None]

    def pick(self, count: int, alive_share: float) -> list[str]:
        """``count`` distinct ids, about ``alive_share`` of them alive ones."""
        alive = self.alive()
        alive_set = set(alive)
        absent = [item for item in self.ids if item not in alive_set]
        chosen: list[str] = []
        for _ in range(count):
            source = alive if alive and self.rng.random() < alive_share else absent or alive
            candidates = [item for item in source if item not in chosen]
            if candidates:
                chosen.append(self.rng.choice(candidates))
        return chosen

    def metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {"cat": self.rng.choice(self.cats)}
        if self.rng.random() < 0.7:
            metadata["n"] = self.rng.randrange(-1000, 1000)
        return metadata

    def vector(self) -> list[float]:
        scale = self.rng.choice((1e-3, 1.0, 1e3))
        return [self.rng.gauss(0.0, 1.0) * scale for _ in range(DIM)]

    def send(self, client: httpx.Client, write: Write, method: str, path: str, body: Any) -> Any:
        """Send ``write`` (in flight until its answer comes); the answer's JSON, or None for a
        404 (the caller checks that the model expected it)."""
        self.in_flight = write
        self.written.update(write.after)
        response = client.request(method, path, json=body)
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            self.fail(f"{write.label}: HTTP {response.status_code} {response.text}")
        answer = response.json()
        seq = int(answer["seq"])
        with self.tally.lock:
            self.seqs.append(seq)
        return answer

    def acknowledged(self, write: Write, kind: str) -> None:
        """The write was answered: the model takes it."""
        self.model.update(write.after)
        self.in_flight = None
        self.tally.ack(kind)

    def upsert(self, client: httpx.Client) -> None:
        ids = self.pick(self.rng.randint(*BATCH), alive_share=0.4)
        items: list[dict[str, Any]] = []
        after: State = {}
        for item in ids:
            values, metadata = self.vector(), self.metadata()
            items.append({"id": item, "vector": values, "metadata": metadata})
            after[item] = Stored(normalised(values).tobytes(), metadata)
        write = Write(f"upsert {ids}", {item: self.model.get(item) for item in ids}, after)
        answer = self.send(
            client, write, "POST", f"/v1/collections/{COLLECTION}/items", {"items": items}
        )
        if answer is None or answer["upserted"] != len(ids):
            self.fail(f"{write.label}: answered {answer}")
        self.acknowledged(write, "upsert")
        # Read it back while the service lives: the vector it stored is the one normalised here.
        got = client.post(
            f"/v1/collections/{COLLECTION}/items/get", json={"ids": ids, "include_vectors": True}
        )
        if got.status_code != 200:
            self.fail(f"get after {write.label}: HTTP {got.status_code} {got.text}")
        returned = {item["id"]: item for item in got.json()["items"]}
        for item in ids:
            found = returned.get(item)
            expected = after[item]
            if found is None:
                self.fail(f"get right after acknowledged {write.label} lacks {item}")
            stored = Stored(vector_bytes(found["vector"]), found["metadata"])
            if stored != expected:
                self.fail(
                    f"get right after acknowledged {write.label}: {item} holds "
                    f"{stored.describe()}, sent {describe(expected)}"
                )

    def patch(self, client: httpx.Client) -> None:
        (item,) = self.pick(1, alive_share=0.9)
        current = self.model.get(item)
        change: dict[str, Any] = {}
        roll = self.rng.random()
        if roll < 0.4:
            change["n"] = self.rng.randrange(-1000, 1000)
        elif roll < 0.7:
            change["cat"] = self.rng.choice(self.cats)
        elif roll < 0.85:
            change["n"] = None
        else:
            change = self.metadata()
        merge = self.rng.random() < 0.8
        after: Stored | None = None
        if current is not None:
            merged: dict[str, Any] = dict(current.metadata) if merge else {}
            for name, value in change.items():
                if value is None:
                    merged.pop(name, None)
                else:
                    merged[name] = value
            after = Stored(current.vector, merged)
        write = Write(f"patch {item} {change} merge={merge}", {item: current}, {item: after})
        body = {"metadata": change, "merge": merge}
        answer = self.send(
            client, write, "PATCH", f"/v1/collections/{COLLECTION}/items/{item}", body
        )
        if (answer is None) != (current is None):
            self.fail(f"{write.label}: answered {answer} for an item the model has as {current}")
        self.acknowledged(write, "patch" if current is not None else "patch-404")

    def delete_ids(self, client: httpx.Client) -> None:
        ids = self.pick(self.rng.randint(*BATCH), alive_share=0.8)
        before = {item: self.model.get(item) for item in ids}
        write = Write(f"delete ids {ids}", before, dict.fromkeys(ids))
        answer = self.send(
            client, write, "POST", f"/v1/collections/{COLLECTION}/items/delete", {"ids": ids}
        )
        alive = sum(stored is not None for stored in before.values())
        if answer is None or answer["deleted"] != alive:
            self.fail(f"{write.label}: answered {answer}, {alive} of them alive")
        self.acknowledged(write, "delete-ids")

    def delete_filter(self, client: httpx.Client) -> None:
        cat = self.rng.choice(self.cats)
        kept = [item for item in self.alive() if self.model_cat(item) == cat]
        before = {item: self.model.get(item) for item in kept}
        write = Write(f"delete filter cat={cat} (model: {kept})", before, dict.fromkeys(kept))
        body = {"filter": {"field": "cat", "eq": cat}}
        answer = self.send(
            client, write, "POST", f"/v1/collections/{COLLECTION}/items/delete", body
        )
        if answer is None or answer["deleted"] != len(kept):
            self.fail(f"{write.label}: answered {answer}")
        self.acknowledged(write, "delete-filter")

    def model_cat(self, item: str) -> Any:
        stored = self.model.get(item)
        return None if stored is None else stored.metadata.get("cat")

    def search(self, client: httpx.Client) -> None:
        """A search over the whole collection or one of this writer's categories: no id
        twice, and this writer's ids exactly as its model has them (other writers' ids may
        reflect their writes in flight)."""
        cat = self.rng.choice(self.cats) if self.rng.random() < 0.5 else None
        k = FULL_K if self.rng.random() < 0.5 else self.rng.randint(1, 50)
        body: dict[str, Any] = {
            "query": {"vector": self.vector()},
            "collection": COLLECTION,
            "k": k,
        }
        if cat is not None:
            body["filter"] = {"field": "cat", "eq": cat}
        response = client.post("/v1/search", json=body)
        if response.status_code != 200:
            self.fail(f"search {body}: HTTP {response.status_code} {response.text}")
        results = response.json()["results"]
        problems = result_problems(results, cat)
        own = set(self.ids)
        mine = {hit["id"]: hit for hit in results if hit["id"] in own}
        for item, hit in mine.items():
            stored = self.model.get(item)
            if stored is None:
                kind = "deleted (acknowledged)" if item in self.written else "never written"
                problems.append(f"{item} is {kind} but found")
            elif hit["metadata"] != stored.metadata:
                problems.append(f"{item} has metadata {hit['metadata']}, model {stored.metadata}")
        if k == FULL_K:
            expected = {item for item in self.alive() if cat is None or self.model_cat(item) == cat}
            if missing := sorted(expected - set(mine)):
                problems.append(f"acknowledged items missing: {missing}")
        if problems:
            self.fail(f"search k={k} cat={cat}: " + "; ".join(problems))
        self.tally.searched()


def result_problems(results: Sequence[Mapping[str, Any]], cat: str | None) -> list[str]:
    """What is wrong with a page of search results whatever the model: duplicate ids, ids
    no writer uses, hits the filter should have kept out, scores out of order."""
    problems = []
    ids = [hit["id"] for hit in results]
    if len(set(ids)) != len(ids):
        problems.append(f"ids twice: {sorted(i for i in set(ids) if ids.count(i) > 1)}")
    if phantoms := sorted(set(ids) - set(ALL_IDS)):
        problems.append(f"ids no request wrote: {phantoms}")
    if cat is not None and (
        outside := [h["id"] for h in results if h["metadata"].get("cat") != cat]
    ):
        problems.append(f"hits outside the filter cat={cat}: {outside}")
    scores = [hit["score"] for hit in results]
    if any(later > earlier for earlier, later in itertools.pairwise(scores)):
        problems.append(f"scores out of order: {scores}")
    return problems


# -- the service -------------------------------------------------------------------------------


@dataclass
class Server:
    """One run of the service; its output goes to the shared log, after a marker line."""

    process: subprocess.Popen[bytes]
    url: str

    def kill(self) -> None:
        """SIGKILL the whole process group (it has a session of its own), and reap it."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=KILL_WAIT_S)


@dataclass
class Harness:
    roots: tuple[Path, Path]
    collections_dir: Path
    log_path: Path
    seed: int
    round: int = 0
    server: Server | None = None
    starts: int = 0

    def start(self) -> tuple[Server, float]:
        """Start the service on the collections folder, wait until /readyz answers 200; returns
        it and the seconds from the spawn to ready."""
        variants_root, bundles_root = self.roots
        port = free_port()
        env = {
            **os.environ,
            "CRISSCROSS_VARIANTS_ROOT": str(variants_root),
            "CRISSCROSS_BUNDLES_ROOT": str(bundles_root),
            "CRISSCROSS_PROVIDERS": "cpu",
            "CRISSCROSS_WORKERS": "1",
            "CRISSCROSS_GRACEFUL_SHUTDOWN_S": "5",
            # Compact by itself every few dozen rows too: kills land inside compactions.
            "CRISSCROSS_COMPACT_OWN_ROWS": "60",
        }
        command = [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(port), "--collections-dir", str(self.collections_dir)]
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"\n===== start {self.starts} (round {self.round}) =====\n".encode())
            log.flush()
            started = time.monotonic()
            process = subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        server = Server(process, f"http://127.0.0.1:{port}")
        self.server = server
        deadline = started + READY_TIMEOUT_S
        with httpx.Client(base_url=server.url, timeout=httpx.Timeout(2.0)) as client:
            while True:
                if process.poll() is not None:
                    self.fail(f"the service exited with {process.returncode} before ready")
                with contextlib.suppress(httpx.TransportError):
                    if client.get("/readyz").status_code == 200:
                        return server, time.monotonic() - started
                if time.monotonic() > deadline:
                    self.fail(f"the service was not ready after {READY_TIMEOUT_S} s")
                time.sleep(0.03)

    def kill(self) -> None:
        if self.server is not None:
            self.server.kill()
            self.server = None

    def log_tail(self) -> str:
        lines = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-LOG_TAIL_LINES:])

    def fail(self, message: str) -> NoReturn:
        self.kill()
        pytest.fail(
            f"seed {self.seed} (rerun with {SEED_VARIABLE}={self.seed}), round {self.round}: "
            f"{message}\n--- service log (tail of {self.log_path}) ---\n{self.log_tail()}",
            pytrace=False,
        )


@pytest.fixture(scope="module")
def tiny_roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(variants_root, bundles_root): the tiny word-level variant and a bundle of the tiny
    dataset's captions it embedded. The service needs a bundle to become ready; this one loads
    in milliseconds."""
    root = tmp_path_factory.mktemp("crash-roots")
    variants_root, bundles_root = root / "variants", root / "bundles"
    make_tiny_variant(variants_root / "tiny", name="tiny")
    data = write_tiny_dataset(root / "data", split="val")
    build_captions_bundle(
        OnnxTextEncoder(variants_root / "tiny", providers="cpu"),
        data.captions,
        source=captions_path(root / "data", "val"),
        bundles_root=bundles_root,
        name="tiny-captions",
    )
    return variants_root, bundles_root


@pytest.fixture
def harness(tiny_roots: tuple[Path, Path], tmp_path: Path) -> Iterator[Harness]:
    seed = int(os.environ.get(SEED_VARIABLE) or random.SystemRandom().randrange(2**32))
    print(f"crash loop: seed {seed} ({SEED_VARIABLE}={seed} reruns it), {KILLS} kills")
    harness = Harness(tiny_roots, tmp_path / "collections", tmp_path / "service.log", seed)
    try:
        yield harness
    finally:
        harness.kill()


# -- the checks after a restart -----------------------------------------------------------------


def read_collection(harness: Harness, client: httpx.Client) -> tuple[State, dict[str, Any]]:
    """Every pool id as the collection holds it, and the collection's info."""
    response = client.post(
        f"/v1/collections/{COLLECTION}/items/get", json={"ids": ALL_IDS, "include_vectors": True}
    )
    if response.status_code != 200:
        harness.fail(f"get after the restart: HTTP {response.status_code} {response.text}")
    found: State = dict.fromkeys(ALL_IDS)
    for item in response.json()["items"]:
        if item["id"] not in found:
            harness.fail(f"get returned an id it was not asked for: {item['id']}")
        found[item["id"]] = Stored(vector_bytes(item["vector"]), item["metadata"])
    info = client.get(f"/v1/collections/{COLLECTION}")
    if info.status_code != 200:
        harness.fail(f"the collection after the restart: HTTP {info.status_code} {info.text}")
    return found, info.json()


def settle(harness: Harness, writer: Writer, found: State, tally: Tally) -> int:
    """Decide the writer's write in flight at the kill from what the collection holds: wholly
    applied or wholly absent (anything else fails); the model adopts it. Returns 1 when it
    may have taken a sequence number, else 0."""
    write = writer.in_flight
    writer.in_flight = None
    if write is None:
        return 0
    tally.in_flight += 1
    actual = {item: found[item] for item in write.after}
    if write.before == write.after:
        tally.undecidable += 1  # a delete of absent ids, a patch of a missing item: no trace
    elif actual == write.after:
        tally.landed += 1
        writer.model.update(write.after)
    elif actual == write.before:
        tally.not_landed += 1
    else:
        lines = [
            f"  {item}: before {describe(write.before[item])}; after {describe(write.after[item])}"
            f"; found {describe(actual[item])}"
            for item in write.after
        ]
        harness.fail(
            f"writer {writer.index}'s unacknowledged {write.label} is partly applied:\n"
            + "\n".join(lines)
        )
    return 1


def describe(stored: Stored | None) -> str:
    return "absent" if stored is None else stored.describe()


def verify(
    harness: Harness,
    client: httpx.Client,
    writers: Sequence[Writer],
    written: set[str],
    seqs: Sequence[int],
    tally: Tally,
) -> int:
    """The collection after a restart against the model (in-flight writes settled first);
    returns its sequence number."""
    found, info = read_collection(harness, client)
    maybe_logged = sum(settle(harness, writer, found, tally) for writer in writers)
    model: State = {}
    for writer in writers:
        model.update(writer.model)
    problems = []
    for item in ALL_IDS:
        expected, actual = model.get(item), found[item]
        if expected == actual:
            continue
        if expected is None:
            kind = "deleted (acknowledged) but back" if item in written else "phantom"
            problems.append(f"{item}: {kind}: {describe(actual)}")
        elif actual is None:
            problems.append(f"{item}: acknowledged write lost: expected {describe(expected)}")
        elif actual.vector != expected.vector:
            problems.append(
                f"{item}: vector differs: expected {describe(expected)}, found {describe(actual)}"
            )
        else:
            problems.append(
                f"{item}: metadata differs: expected {dict(expected.metadata)}, found "
                f"{dict(actual.metadata)}"
            )
    alive = {item for item, stored in model.items() if stored is not None}
    if info["count"] != len(alive):
        problems.append(f"count {info['count']}, the model holds {len(alive)}")
    last_acked = max(seqs, default=0)
    if not last_acked <= info["seq"] <= last_acked + maybe_logged:
        problems.append(
            f"seq {info['seq']}: the last acknowledged write has {last_acked}, "
            f"{maybe_logged} were in flight"
        )
    # Searches: the whole collection, then each category, exactly the model's items.
    searches: list[tuple[str | None, set[str]]] = [(None, alive)]
    for writer in writers:
        for value in writer.cats:
            kept = {
                i for i in alive if (s := model[i]) is not None and s.metadata.get("cat") == value
            }
            searches.append((value, kept))
    query = [random.Random(harness.seed + harness.round).gauss(0.0, 1.0) for _ in range(DIM)]
    for cat, expected_ids in searches:
        body: dict[str, Any] = {"query": {"vector": query}, "collection": COLLECTION, "k": FULL_K}
        if cat is not None:
            body["filter"] = {"field": "cat", "eq": cat}
        response = client.post("/v1/search", json=body)
        if response.status_code != 200:
            harness.fail(f"search {body}: HTTP {response.status_code} {response.text}")
        results = response.json()["results"]
        tally.searched()
        page = [f"search cat={cat}: {p}" for p in result_problems(results, cat)]
        got = {hit["id"] for hit in results}
        if back := sorted(got - expected_ids):
            page.append(f"search cat={cat} returns ids the model has deleted or elsewhere: {back}")
        if lost := sorted(expected_ids - got):
            page.append(f"search cat={cat} misses acknowledged ids: {lost}")
        for hit in results:
            stored = model.get(hit["id"])
            if stored is not None and hit["metadata"] != stored.metadata:
                page.append(f"search cat={cat}: {hit['id']} has metadata {hit['metadata']}")
        problems += page
    if problems:
        harness.fail(
            f"after restart {harness.starts}, {len(problems)} problems:\n"
            + "\n".join(problems[:40])
        )
    return int(info["seq"])


# -- the loop -----------------------------------------------------------------------------------


def test_acknowledged_writes_survive_kill_9_and_unacknowledged_ones_are_atomic(
    harness: Harness,
) -> None:
    master = random.Random(harness.seed)
    tally = Tally()
    written: set[str] = set()
    seqs: list[int] = []
    models: list[State] = [{} for _ in range(WRITERS)]
    writers: list[Writer] = []
    started = time.monotonic()
    for round_ in range(KILLS + 1):
        harness.round = round_
        server, ready_s = harness.start()
        tally.restarts_s.append(ready_s)
        with httpx.Client(base_url=server.url, timeout=CLIENT_TIMEOUT) as client:
            if harness.round == 0:
                create = {
                    "name": COLLECTION,
                    "dim": DIM,
                    "fields": {"cat": "string", "n": "integer"},
                }
                response = client.post("/v1/collections", json=create)
                if response.status_code != 201:
                    harness.fail(f"create: HTTP {response.status_code} {response.text}")
            else:
                # The sequence it found is durable: the floor of the next check's.
                seqs.append(verify(harness, client, writers, written, seqs, tally))
        if harness.round == KILLS:
            break
        stop = threading.Event()
        writers = [
            Writer(index, models[index], written, seqs, tally, stop) for index in range(WRITERS)
        ]
        for writer in writers:
            writer.start_round(server.url, master.randrange(2**63))
            writer.start()
        time.sleep(master.uniform(*KILL_AFTER_S))
        harness.kill()
        stop.set()
        for writer in writers:
            writer.join(JOIN_TIMEOUT_S)
            if writer.is_alive():
                harness.fail(f"writer {writer.index} still runs {JOIN_TIMEOUT_S} s after the kill")
            if writer.failure is not None:
                harness.fail(f"{writer.failure}\n{writer.failure_trace}")
    # The last start: shut down cleanly (SIGTERM), exit 0.
    assert harness.server is not None
    harness.server.process.send_signal(signal.SIGTERM)
    code = harness.server.process.wait(timeout=30)
    harness.server = None
    if code != 0:
        harness.fail(f"the service exited with {code} on SIGTERM")
    log = harness.log_path.read_text(errors="replace")
    tally.torn_tails = log.count("bytes off its log")
    restarts = tally.restarts_s
    print(
        f"crash loop: seed {harness.seed}, {KILLS} kills in {time.monotonic() - started:.1f} s; "
        f"acknowledged {dict(sorted(tally.acked.items()))}, searches {tally.searches}; "
        f"in flight at a kill {tally.in_flight} (landed {tally.landed}, absent "
        f"{tally.not_landed}, no trace either way {tally.undecidable}); torn log tails cut "
        f"{tally.torn_tails}; restart to ready s: min {min(restarts):.2f} median "
        f"{statistics.median(restarts):.2f} max {max(restarts):.2f}; last seq "
        f"{max(seqs, default=0)}"
    )
    assert sum(tally.acked.values()) > KILLS, "the writers acknowledged too few writes to mean much"
