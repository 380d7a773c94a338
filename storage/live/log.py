"""The write-ahead log: checksummed, numbered records appended to one file and fsynced.

A record on disk is ``MAGIC | seq (u64) | length (u32) | crc32 (u32) | payload``, little-endian;
the CRC covers the sequence number, the length and the payload. Sequence numbers are
consecutive. :meth:`WriteAheadLog.open` reads every record back and stops at the first one that
is short, fails its checksum or breaks the sequence (a write torn by a crash or a power cut, or
bits flipped in the tail): the file is truncated there and fsynced, and start-up goes on with
the records before it. An append writes its records with one ``write`` and fsyncs the file
before it returns, so concurrent writers that hand their records over together share one fsync
(group commit, :mod:`service.engine.collection.write_path`).
"""

from __future__ import annotations

import bisect
import itertools
import os
import struct
import threading
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from storage.durability import fsync_path

MAGIC: Final = b"CXW1"
_HEAD: Final = struct.Struct("<4sQII")
HEADER_BYTES: Final = _HEAD.size
REWRITE_SUFFIX: Final = ".rewrite"
"""Beside the log, the file a rewrite (:meth:`WriteAheadLog.replace_with`) writes first."""
MAX_RECORD_BYTES: Final = 1 << 31
"""Longest payload a record may carry (a longer length field is read as damage)."""


class LogError(RuntimeError):
    """The log cannot be written (a failed write or fsync): the collection must stop taking
    writes until the service restarts and replays what reached the disk."""


@dataclass(frozen=True)
class LogRecord:
    """One record: its sequence number and payload (:mod:`storage.live.operations`)."""

    seq: int
    payload: bytes


@dataclass(frozen=True)
class Recovery:
    """What opening the log found: the records kept, and the damaged tail cut off."""

    records: int
    truncated_bytes: int
    reason: str | None
    """Why the tail was cut (``None``: the log ended cleanly)."""


def frame(seq: int, payload: bytes) -> bytes:
    """The bytes of one record."""
    if len(payload) >= MAX_RECORD_BYTES:
        raise ValueError(f"a log record holds at most {MAX_RECORD_BYTES - 1} bytes")
    crc = zlib.crc32(payload, zlib.crc32(struct.pack("<QI", seq, len(payload))))
    return _HEAD.pack(MAGIC, seq, len(payload), crc) + payload


def _scan(data: bytes) -> Iterator[tuple[LogRecord, int] | str]:
    """The records in ``data`` with the offset past each; a string (the reason) where the
    readable part ends before the data does. The first record may have any sequence number
    (a compacted log starts with a checkpoint), every later one follows its predecessor."""
    offset, expected = 0, None
    while offset < len(data):
        if len(data) - offset < HEADER_BYTES:
            yield f"a record header cut short at byte {offset}"
            return
        magic, seq, length, crc = _HEAD.unpack_from(data, offset)
        end = offset + HEADER_BYTES + length
        if magic != MAGIC:
            yield f"no record marker at byte {offset}"
            return
        if end > len(data):
            yield f"record {seq} cut short at byte {offset}"
            return
        payload = data[offset + HEADER_BYTES : end]
        if zlib.crc32(payload, zlib.crc32(struct.pack("<QI", seq, length))) != crc:
            yield f"record at byte {offset} fails its checksum"
            return
        if expected is not None and seq != expected:
            yield f"record at byte {offset} has sequence {seq}, expected {expected}"
            return
        yield LogRecord(seq, payload), end
        offset, expected = end, seq + 1


def read_frames(data: bytes, after: int) -> list[LogRecord]:
    """The records framed in ``data`` (records another log sent: a replica's copy), which must
    go on from sequence ``after``; ``ValueError`` naming the first that is damaged, cut short or
    out of sequence."""
    records: list[LogRecord] = []
    expected = after + 1
    for found in _scan(data):
        if isinstance(found, str):
            raise ValueError(f"damaged records: {found}")
        record, _ = found
        if record.seq != expected:
            raise ValueError(f"record {record.seq} does not follow {expected - 1}")
        records.append(record)
        expected += 1
    return records


class WriteAheadLog:
    """An open log file: :meth:`open` recovers it, :meth:`append` makes records durable,
    :meth:`frames_after` reads them back for a replica."""

    def __init__(
        self, path: Path, fd: int, last_seq: int, size: int, offsets: list[int] | None = None
    ) -> None:
        self.path = path
        self._fd = fd
        self._last_seq = last_seq
        self._size = size
        self._failed: str | None = None
        self._offsets: list[int] = offsets or []
        """Where each record in the file starts (the last one is :attr:`last_seq`)."""
        self._lock = threading.Lock()
        """Held while the file is replaced, and while a replica's records are read."""

    @classmethod
    def open(cls, path: Path, after: int = 0) -> tuple[WriteAheadLog, list[LogRecord], Recovery]:
        """Open (or create) the log at ``path``; return it, its records after sequence
        ``after`` in order (those up to it are held elsewhere: a collection's base), and what
        recovery did. A damaged tail is truncated and the truncation fsynced; the folder is
        fsynced when the file is new. A rewrite that a crash interrupted (``<path>.rewrite``,
        :meth:`replace_with`) is removed: the log it was to replace is whole. The next record
        appended follows the last one in the file, or ``after`` when the file holds none after
        it."""
        path.with_name(path.name + REWRITE_SUFFIX).unlink(missing_ok=True)
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
            records: list[LogRecord] = []
            offsets: list[int] = []
            good_end, reason = 0, None
            for found in _scan(data):
                if isinstance(found, str):
                    reason = found
                    break
                offsets.append(good_end)
                record, good_end = found
                records.append(record)
            if good_end < len(data):
                os.ftruncate(fd, good_end)
                os.fsync(fd)
            if created:
                os.fsync(fd)
                fsync_path(path.parent)
        except OSError:
            os.close(fd)
            raise
        last = max(records[-1].seq if records else 0, after)
        recovery = Recovery(len(records), len(data) - good_end, reason)
        kept = [record for record in records if record.seq > after]
        if records and records[-1].seq < after:
            offsets = []  # every record is held by the base: none is served from here
        return cls(path, fd, last, good_end, offsets), kept, recovery

    @property
    def last_seq(self) -> int:
        """The sequence number of the last record written (0: none)."""
        return self._last_seq

    @property
    def size_bytes(self) -> int:
        """Bytes in the file."""
        return self._size

    @property
    def failed(self) -> str | None:
        """Why the log stopped taking records (None while it works)."""
        return self._failed

    def append(self, records: Sequence[LogRecord], sync: bool = True) -> None:
        """Write ``records`` (consecutive from :attr:`last_seq` + 1) with one write, then fsync
        (unless ``sync`` is False). Raises :class:`LogError` when the write or the fsync
        fails; the log then refuses every later append (what reached the disk is replayed at
        the next start)."""
        if self._failed is not None:
            raise LogError(f"the log stopped taking records: {self._failed}")
        if not records:
            return
        expected = self._last_seq + 1
        for offset, record in enumerate(records):
            if record.seq != expected + offset:
                raise ValueError(f"record {record.seq} does not follow {expected + offset - 1}")
        data = b"".join(frame(record.seq, record.payload) for record in records)
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            if sync:
                os.fsync(self._fd)
        except OSError as exc:
            self._failed = f"{type(exc).__name__}: {exc}"
            raise LogError(f"{self.path}: {self._failed}") from exc
        with self._lock:
            start = self._size
            for record in records:
                self._offsets.append(start)
                start += HEADER_BYTES + len(record.payload)
            self._size += len(data)
            self._last_seq = records[-1].seq

    def replace_with(self, records: Sequence[LogRecord], after: int = 0) -> None:
        """Replace the whole log with ``records`` (consecutive; the first may have any sequence
        number; none: the next record appended follows ``after``), atomically and durably: they
        are written to ``<path>.rewrite`` and fsynced, which is renamed over the log, and the
        folder fsynced. A crash before the rename leaves
        the old log whole; after it, the new one. Raises :class:`LogError` (the log then takes
        no more records)."""
        if self._failed is not None:
            raise LogError(f"the log stopped taking records: {self._failed}")
        for before, following in itertools.pairwise(records):
            if following.seq != before.seq + 1:
                raise ValueError(f"record {following.seq} does not follow {before.seq}")
        staging = self.path.with_name(self.path.name + REWRITE_SUFFIX)
        data = b"".join(frame(record.seq, record.payload) for record in records)
        try:
            with staging.open("wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(staging, self.path)
            fsync_path(self.path.parent)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        except OSError as exc:
            self._failed = f"{type(exc).__name__}: {exc}"
            raise LogError(f"{self.path}: {self._failed}") from exc
        with self._lock:
            os.close(self._fd)
            self._fd = fd
            self._size = len(data)
            self._last_seq = records[-1].seq if records else max(after, self._last_seq)
            self._offsets = []
            start = 0
            for record in records:
                self._offsets.append(start)
                start += HEADER_BYTES + len(record.payload)

    @property
    def first_seq(self) -> int:
        """The sequence number of the first record in the file (:attr:`last_seq` + 1: none)."""
        return self._last_seq - len(self._offsets) + 1

    def frames_after(self, after: int, upto: int, max_bytes: int) -> bytes:
        """The framed records after sequence ``after`` up to ``upto`` (at least one record,
        then as many as fit in ``max_bytes``), read back from the file: what a replica appends
        to its own copy. ``ValueError`` when the file no longer holds record ``after + 1`` (a
        compaction emptied the log past it: the replica needs the base)."""
        with self._lock:
            first = self._last_seq - len(self._offsets) + 1
            upto = min(upto, self._last_seq)
            if after >= upto:
                return b""
            if after + 1 < first:
                raise ValueError(f"the log starts at record {first}, after {after}")
            offsets, size = self._offsets, self._size
            first_index, last_index = after + 1 - first, upto - first
            start = offsets[first_index]
            # Record i ends where record i + 1 starts (the last one: at the file's end); send
            # every record that ends within max_bytes of the start, and at least one.
            fits = bisect.bisect_right(offsets, start + max_bytes, lo=first_index + 1) - 2
            if fits == len(offsets) - 2 and size - start <= max_bytes:
                fits = len(offsets) - 1
            last = max(first_index, min(last_index, fits))
            end = offsets[last + 1] if last + 1 < len(offsets) else size
            return os.pread(self._fd, end - start, start)

    def sync(self) -> None:
        """fsync what :meth:`append` wrote without syncing."""
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._failed = f"{type(exc).__name__}: {exc}"
            raise LogError(f"{self.path}: {self._failed}") from exc

    def close(self) -> None:
        """Close the file (appends after this fail)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            self._failed = self._failed or "closed"
