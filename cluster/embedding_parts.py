"""The parts of a distributed build: the items cut into numbered parts, each embedded once.

A build's *staging folder* (on storage the driver and every worker see) holds, per part ``k``:

```
part-0000k.items.jsonl   the part's items, written by the driver: id, text or image file,
                         typed metadata, origin (one JSON object per line)
part-0000k.npy           float32 [embedded, dim]: the vectors of the items that embedded
part-0000k.result.json   what the worker made of the part (count, failures, seconds, worker)
attempts/part-0000k@<host>-<pid>@<ns>   one empty file per attempt at the part
workers/<host>-<pid>.json          one file per worker process (its pid, for operators)
```

Every file is written under a temporary name and renamed into place (``os.replace``), the
result file last: a part whose result file exists is complete, and a retried part rewrites the
same files with the same content, so a worker killed at any point loses and duplicates nothing.

Nothing here imports Ray: :class:`PartEmbedder` is the callable class Ray Data runs in its
actors, and the rest is plain file logic the driver and the unit tests use.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal

import numpy as np

from encoders.image_decode import ImageLimits
from encoders.image_encoder import OnnxImageEncoder
from encoders.providers import ProviderRequest
from encoders.text_encoder import OnnxTextEncoder
from index_builder.embed import BUILD_IMAGE_LIMITS, embed_images, embed_texts
from index_builder.image_checks import image_problem
from index_builder.items import BadItem, ImageItem, ItemOrigin, Problem, TextItem

DEFAULT_PART_SIZE: Final = 2048
"""Items per part: a multiple of the text (256) and image (64) batch sizes, so a part's
batches are the single-machine build's batches when no item is bad."""
ATTEMPTS_DIR: Final = "attempts"
WORKERS_DIR: Final = "workers"

Tower = Literal["text", "image"]


class PartsError(RuntimeError):
    """The parts of a build are missing, duplicated or inconsistent."""


def part_name(index: int) -> str:
    """``part-00007`` for part 7."""
    if index < 0:
        raise ValueError(f"part index must be >= 0, got {index}")
    return f"part-{index:05d}"


def worker_name() -> str:
    """This process as a worker: ``host-pid``."""
    return f"{socket.gethostname()}-{os.getpid()}"


def write_atomically(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` through a temporary sibling and ``os.replace``: a reader
    (or a retried attempt) sees the old file or the whole new one."""
    _replace_atomically(path, lambda output: output.write(content))


def save_array_atomically(path: Path, array: np.ndarray) -> None:
    """``np.save`` through a temporary sibling and ``os.replace``."""
    _replace_atomically(path, lambda output: np.save(output, array), suffix=".npy")


def _replace_atomically(path: Path, write: Callable[[BinaryIO], object], suffix: str = "") -> None:
    """Call ``write`` on a temporary sibling of ``path``, fsync it and ``os.replace`` it onto
    ``path``; the temporary file is removed when anything fails."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as output:
            write(output)
            output.flush()
            os.fsync(output.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# --- the items of a part -----------------------------------------------------------------------


@dataclass(frozen=True)
class PartSpec:
    """A part: its index and how many items it holds."""

    index: int
    count: int


def _item_json(item: TextItem | ImageItem) -> dict[str, object]:
    payload = item.text if isinstance(item, TextItem) else str(item.file)
    return {
        "id": item.item_id,
        "payload": payload,
        "metadata": item.metadata,
        "origin": item.origin.to_json(),
    }


def _origin(found: Mapping[str, Any]) -> ItemOrigin:
    return ItemOrigin(
        source=str(found["source"]),
        line=found.get("line"),
        row=found.get("row"),
        path=found.get("path"),
    )


@dataclass(frozen=True)
class PartItem:
    """One item as a part file holds it: ``payload`` is the text, or the image file."""

    item_id: str
    payload: str
    metadata: dict[str, Any]
    origin: ItemOrigin


def write_part_items(staging: Path, index: int, items: Sequence[TextItem | ImageItem]) -> PartSpec:
    """Write one part's items file (atomically) and return its spec."""
    lines = (json.dumps(_item_json(item), ensure_ascii=False) + "\n" for item in items)
    write_atomically(staging / f"{part_name(index)}.items.jsonl", "".join(lines).encode("utf-8"))
    return PartSpec(index=index, count=len(items))


def read_part_items(staging: Path, index: int) -> Iterator[PartItem]:
    """The items of part ``index`` in order."""
    with (staging / f"{part_name(index)}.items.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            found = json.loads(line)
            yield PartItem(
                item_id=found["id"],
                payload=found["payload"],
                metadata=found["metadata"],
                origin=_origin(found["origin"]),
            )


def split_into_parts(
    items: Iterable[TextItem | ImageItem], staging: Path, part_size: int
) -> list[PartSpec]:
    """Cut a stream of items into parts of ``part_size`` (the last may be smaller), writing
    each part's items file as soon as it is full: one part is held in memory at a time."""
    if part_size < 1:
        raise ValueError(f"part_size must be at least 1, got {part_size}")
    specs: list[PartSpec] = []
    pending: list[TextItem | ImageItem] = []
    for item in items:
        pending.append(item)
        if len(pending) == part_size:
            specs.append(write_part_items(staging, len(specs), pending))
            pending = []
    if pending:
        specs.append(write_part_items(staging, len(specs), pending))
    return specs


# --- a part's result ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PartFailure:
    """An item of a part that could not be embedded (an image that does not decode)."""

    position: int
    problem: Problem
    reason: str


@dataclass(frozen=True)
class PartResult:
    """What a worker made of one part: ``embedded`` vectors in the part's ``.npy`` file, one
    per item not in ``failures`` (up to the stop, when ``stopped``)."""

    part: int
    count: int
    embedded: int
    seconds: float
    worker: str
    providers: tuple[str, ...]
    variant_name: str
    variant_fingerprint: str
    failures: tuple[PartFailure, ...] = ()
    stopped: bool = False
    started_at: float = 0.0
    """When the embedding began and ended (seconds since the epoch, the worker's clock)."""
    finished_at: float = 0.0

    def kept_positions(self) -> list[int]:
        """The positions (in the part) of the items whose vectors the ``.npy`` file holds."""
        failed = {failure.position for failure in self.failures}
        tried = self.count
        if self.stopped:
            tried = self.embedded + len(self.failures)
        kept = [position for position in range(tried) if position not in failed]
        if len(kept) != self.embedded:
            raise PartsError(
                f"{part_name(self.part)}: {self.embedded} vectors for {len(kept)} kept items"
            )
        return kept

    def to_json(self) -> dict[str, object]:
        """The result file's content."""
        return {
            "part": self.part,
            "count": self.count,
            "embedded": self.embedded,
            "seconds": self.seconds,
            "worker": self.worker,
            "providers": list(self.providers),
            "variant_name": self.variant_name,
            "variant_fingerprint": self.variant_fingerprint,
            "failures": [
                {"position": f.position, "problem": f.problem.value, "reason": f.reason}
                for f in self.failures
            ],
            "stopped": self.stopped,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }

    @classmethod
    def from_json(cls, found: Mapping[str, Any]) -> PartResult:
        """Read back :meth:`to_json`."""
        return cls(
            part=int(found["part"]),
            count=int(found["count"]),
            embedded=int(found["embedded"]),
            seconds=float(found["seconds"]),
            worker=str(found["worker"]),
            providers=tuple(found["providers"]),
            variant_name=str(found["variant_name"]),
            variant_fingerprint=str(found["variant_fingerprint"]),
            failures=tuple(
                PartFailure(int(f["position"]), Problem(f["problem"]), str(f["reason"]))
                for f in found["failures"]
            ),
            stopped=bool(found["stopped"]),
            started_at=float(found.get("started_at", 0.0)),
            finished_at=float(found.get("finished_at", 0.0)),
        )


def result_path(staging: Path, index: int) -> Path:
    """Where part ``index``'s result file lies."""
    return staging / f"{part_name(index)}.result.json"


def vectors_path(staging: Path, index: int) -> Path:
    """Where part ``index``'s vectors lie."""
    return staging / f"{part_name(index)}.npy"


def read_result(staging: Path, index: int) -> PartResult | None:
    """Part ``index``'s result, or None while it is not complete."""
    try:
        return PartResult.from_json(json.loads(result_path(staging, index).read_bytes()))
    except FileNotFoundError:
        return None


# --- embedding a part (in a worker) ------------------------------------------------------------


@dataclass(frozen=True)
class EmbedConfig:
    """What every worker needs: the variant and tower, where the parts are, and how to embed
    (the single-machine build's batch sizes and limits). ``intra_op_threads`` 0: onnxruntime's
    own choice. ``pause_s``: wait this long before each part (only to make a fault-injection
    test or a demo slow enough to watch)."""

    variant_dir: Path
    tower: Tower
    staging: Path
    providers: ProviderRequest = "auto"
    intra_op_threads: int = 0
    text_batch_size: int = 256
    image_batch_size: int = 64
    decode_workers: int = 2
    limits: ImageLimits = BUILD_IMAGE_LIMITS
    stop_at_failure: bool = True
    pause_s: float = 0.0


def _mark_attempt(staging: Path, index: int, worker: str) -> None:
    folder = staging / ATTEMPTS_DIR
    folder.mkdir(exist_ok=True)
    (folder / f"{part_name(index)}@{worker}@{time.time_ns()}").touch()


def attempts_per_part(staging: Path) -> dict[int, list[str]]:
    """The workers that started each part (more than one: the part was retried)."""
    found: dict[int, list[str]] = defaultdict(list)
    folder = staging / ATTEMPTS_DIR
    if not folder.is_dir():
        return {}
    markers = [marker.name.split("@") for marker in folder.iterdir()]
    for name, worker, _stamp in sorted(
        (fields for fields in markers if len(fields) == 3), key=lambda fields: int(fields[2])
    ):
        found[int(name.removeprefix("part-"))].append(worker)
    return dict(found)


def embed_part(
    config: EmbedConfig,
    index: int,
    *,
    text_encoder: OnnxTextEncoder | None = None,
    image_encoder: OnnxImageEncoder | None = None,
) -> PartResult:
    """Embed part ``index`` with the given tower's encoder and write its vectors and result
    (atomically, result last). A part already complete (an earlier attempt wrote its result
    before dying) is not embedded again."""
    done = read_result(config.staging, index)
    if done is not None and vectors_path(config.staging, index).is_file():
        return done
    worker = worker_name()
    _mark_attempt(config.staging, index, worker)
    if config.pause_s > 0:
        time.sleep(config.pause_s)
    items = list(read_part_items(config.staging, index))
    started_at = time.time()
    started = time.perf_counter()
    failures: list[PartFailure] = []
    stopped = False
    encoder: OnnxTextEncoder | OnnxImageEncoder
    if config.tower == "text":
        if text_encoder is None:
            raise PartsError("a text part needs a text encoder")
        encoder = text_encoder
        vectors = embed_texts(
            text_encoder,
            [item.payload for item in items],
            batch_size=config.text_batch_size,
            progress=False,
        )
    else:
        if image_encoder is None:
            raise PartsError("an image part needs an image encoder")
        encoder = image_encoder
        embedding = embed_images(
            image_encoder,
            [Path(item.payload) for item in items],
            batch_size=config.image_batch_size,
            decode_workers=config.decode_workers,
            limits=config.limits,
            stop_at_failure=config.stop_at_failure,
            progress=False,
        )
        vectors = embedding.vectors
        stopped = embedding.stopped
        for position, error in embedding.failures:
            problem, reason = image_problem(error)
            failures.append(PartFailure(position, problem, reason))
    seconds = time.perf_counter() - started
    save_array_atomically(
        vectors_path(config.staging, index), np.ascontiguousarray(vectors, dtype=np.float32)
    )
    result = PartResult(
        part=index,
        count=len(items),
        embedded=int(vectors.shape[0]),
        seconds=seconds,
        worker=worker,
        providers=tuple(encoder.providers),
        variant_name=encoder.name,
        variant_fingerprint=encoder.fingerprint,
        failures=tuple(failures),
        stopped=stopped,
        started_at=started_at,
        finished_at=started_at + seconds,
    )
    write_atomically(
        result_path(config.staging, index), json.dumps(result.to_json()).encode("utf-8")
    )
    return result


class PartEmbedder:
    """The callable class Ray Data runs in each actor: loads the encoder once, then embeds the
    parts it is given (a batch of part indexes) and returns one small row per part."""

    def __init__(self, config: EmbedConfig) -> None:
        self.config = config
        self.text_encoder: OnnxTextEncoder | None = None
        self.image_encoder: OnnxImageEncoder | None = None
        if config.tower == "text":
            self.text_encoder = OnnxTextEncoder(
                config.variant_dir, config.providers, config.intra_op_threads
            )
        else:
            self.image_encoder = OnnxImageEncoder(
                config.variant_dir, config.providers, config.intra_op_threads
            )
        folder = config.staging / WORKERS_DIR
        folder.mkdir(exist_ok=True)
        record = {"pid": os.getpid(), "host": socket.gethostname(), "worker": worker_name()}
        write_atomically(folder / f"{worker_name()}.json", json.dumps(record).encode("utf-8"))

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[object]]:
        """Embed each part of ``batch["part"]``; returns columns part, count, embedded,
        failed, seconds, worker."""
        rows: dict[str, list[object]] = {
            "part": [],
            "count": [],
            "embedded": [],
            "failed": [],
            "seconds": [],
            "worker": [],
        }
        for index in batch["part"]:
            result = embed_part(
                self.config,
                int(index),
                text_encoder=self.text_encoder,
                image_encoder=self.image_encoder,
            )
            rows["part"].append(result.part)
            rows["count"].append(result.count)
            rows["embedded"].append(result.embedded)
            rows["failed"].append(len(result.failures))
            rows["seconds"].append(result.seconds)
            rows["worker"].append(result.worker)
        return rows


# --- the driver's side: every part exactly once, assembled in order ----------------------------


def check_parts(
    specs: Sequence[PartSpec], reported: Iterable[int], staging: Path
) -> list[PartResult]:
    """Every part's result, in part order; :class:`PartsError` when a part was reported
    twice or never, or its files disagree with its items."""
    counts: dict[int, int] = defaultdict(int)
    for index in reported:
        counts[index] += 1
    expected = {spec.index for spec in specs}
    twice = sorted(index for index, count in counts.items() if count > 1)
    missing = sorted(expected - set(counts))
    unknown = sorted(set(counts) - expected)
    if twice or missing or unknown:
        raise PartsError(
            f"parts reported twice {twice}, never {missing}, unknown {unknown}: "
            "the job lost or duplicated work"
        )
    results: list[PartResult] = []
    for spec in specs:
        result = read_result(staging, spec.index)
        if result is None:
            raise PartsError(f"{part_name(spec.index)} was reported but has no result file")
        if result.count != spec.count:
            raise PartsError(
                f"{part_name(spec.index)}: {result.count} items embedded of {spec.count}"
            )
        shape = np.load(vectors_path(staging, spec.index), mmap_mode="r").shape
        if shape[0] != result.embedded:
            raise PartsError(
                f"{part_name(spec.index)}: {shape[0]} vectors, the result says {result.embedded}"
            )
        results.append(result)
    return results


def failed_items(staging: Path, results: Sequence[PartResult]) -> list[BadItem]:
    """The items that failed while embedding, as bad items."""
    bad: list[BadItem] = []
    for result in results:
        if not result.failures:
            continue
        items = list(read_part_items(staging, result.part))
        for failure in result.failures:
            item = items[failure.position]
            bad.append(BadItem(item.origin, failure.problem, failure.reason, item.item_id))
    return bad


@dataclass
class Assembled:
    """The kept items of every part, in part order, and their vectors (a memory map)."""

    ids: list[str]
    metadata: list[Mapping[str, object]]
    payloads: list[str]
    vectors: np.ndarray


def assemble(staging: Path, results: Sequence[PartResult], dim: int) -> Assembled:
    """Ids, metadata and payloads of the kept items in part order, and their vectors copied
    part by part into one memory-mapped ``vectors.npy`` in the staging folder."""
    total = sum(result.embedded for result in results)
    vectors = np.lib.format.open_memmap(
        staging / "vectors.npy", mode="w+", dtype=np.float32, shape=(total, dim)
    )
    ids: list[str] = []
    metadata: list[Mapping[str, object]] = []
    payloads: list[str] = []
    row = 0
    for result in results:
        part_vectors = np.load(vectors_path(staging, result.part), mmap_mode="r")
        if result.embedded and part_vectors.shape[1] != dim:
            raise PartsError(f"{part_name(result.part)}: dimension {part_vectors.shape[1]}")
        vectors[row : row + result.embedded] = part_vectors
        row += result.embedded
        items = list(read_part_items(staging, result.part))
        for position in result.kept_positions():
            item = items[position]
            ids.append(item.item_id)
            metadata.append(item.metadata)
            payloads.append(item.payload)
    vectors.flush()
    return Assembled(ids=ids, metadata=metadata, payloads=payloads, vectors=vectors)


@dataclass(frozen=True)
class WorkerThroughput:
    """One worker's share: parts and items embedded, seconds spent embedding, items/s."""

    worker: str
    parts: int
    items: int
    busy_s: float

    @property
    def items_per_s(self) -> float:
        """Items per second of embedding (not counting time between parts)."""
        return self.items / self.busy_s if self.busy_s > 0 else 0.0

    def to_json(self) -> dict[str, object]:
        """For build_info and the build report."""
        return {
            "worker": self.worker,
            "parts": self.parts,
            "items": self.items,
            "busy_s": round(self.busy_s, 3),
            "items_per_s": round(self.items_per_s, 1),
        }


def throughput_by_worker(results: Iterable[PartResult]) -> list[WorkerThroughput]:
    """Per worker, from the parts' results (the attempt that completed each part)."""
    parts: dict[str, list[PartResult]] = defaultdict(list)
    for result in results:
        parts[result.worker].append(result)
    return [
        WorkerThroughput(
            worker=worker,
            parts=len(done),
            items=sum(result.count for result in done),
            busy_s=sum(result.seconds for result in done),
        )
        for worker, done in sorted(parts.items())
    ]


def embedding_span(results: Iterable[PartResult]) -> float:
    """Seconds from the first part's start to the last part's end (the job's time less the
    actors' start-up; across nodes, as good as their clocks agree)."""
    timed = [result for result in results if result.finished_at > 0]
    if not timed:
        return 0.0
    return max(r.finished_at for r in timed) - min(r.started_at for r in timed)


def throughput_table(workers: Sequence[WorkerThroughput], total_items: int, wall_s: float) -> str:
    """A plain-text table: one line per worker (busy seconds), then the total over ``wall_s``."""
    width = max([len("worker"), len("total"), *(len(worker.worker) for worker in workers)])
    lines = [f"{'worker':<{width}}  {'parts':>5}  {'items':>8}  {'busy s':>8}  {'items/s':>9}"]
    for worker in workers:
        lines.append(
            f"{worker.worker:<{width}}  {worker.parts:>5}  {worker.items:>8}  "
            f"{worker.busy_s:>8.2f}  {worker.items_per_s:>9.1f}"
        )
    rate = total_items / wall_s if wall_s > 0 else 0.0
    parts = sum(worker.parts for worker in workers)
    lines.append(f"{'total':<{width}}  {parts:>5}  {total_items:>8}  {wall_s:>8.2f}  {rate:>9.1f}")
    return "\n".join(lines)
