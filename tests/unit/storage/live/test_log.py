"""The write-ahead log: records come back in order; a torn or damaged tail is cut off, never
refused; every append is fsynced before it returns."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from storage.live import log as log_module
from storage.live.log import (
    HEADER_BYTES,
    LogError,
    LogRecord,
    WriteAheadLog,
    frame,
    read_frames,
)


def _records(first: int, count: int) -> list[LogRecord]:
    return [LogRecord(seq, f"payload {seq}".encode() * seq) for seq in range(first, first + count)]


def _written(path: Path, count: int) -> list[LogRecord]:
    log, _, _ = WriteAheadLog.open(path)
    records = _records(1, count)
    log.append(records[:2])
    log.append(records[2:])
    log.close()
    return records


def test_records_come_back_in_order_after_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "log.wal"
    records = _written(path, 5)
    log, found, recovery = WriteAheadLog.open(path)
    assert found == records
    assert recovery.truncated_bytes == 0
    assert recovery.reason is None
    assert log.last_seq == 5
    log.append([LogRecord(6, b"six")])
    log.close()
    assert [r.seq for r in WriteAheadLog.open(path)[1]] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("cut", [1, HEADER_BYTES - 1, HEADER_BYTES + 3])
def test_a_torn_tail_is_truncated_and_the_rest_kept(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "log.wal"
    records = _written(path, 4)
    size = path.stat().st_size
    with path.open("ab") as handle:  # a fifth record, torn after `cut` bytes
        handle.write(frame(5, b"fifth record" * 10)[:cut])
    log, found, recovery = WriteAheadLog.open(path)
    assert found == records
    assert recovery.truncated_bytes == cut
    assert recovery.reason is not None
    assert path.stat().st_size == size
    log.append([LogRecord(5, b"again")])  # the log goes on from the last whole record
    log.close()
    assert WriteAheadLog.open(path)[1][-1] == LogRecord(5, b"again")


@pytest.mark.parametrize("record", [0, 2, 3])
def test_a_flipped_bit_cuts_the_log_at_the_damaged_record(tmp_path: Path, record: int) -> None:
    path = tmp_path / "log.wal"
    records = _written(path, 4)
    offsets = [0]
    for r in records:
        offsets.append(offsets[-1] + HEADER_BYTES + len(r.payload))
    data = bytearray(path.read_bytes())
    data[offsets[record] + HEADER_BYTES + 2] ^= 0x10
    path.write_bytes(bytes(data))
    _, found, recovery = WriteAheadLog.open(path)
    assert found == records[:record]
    assert "checksum" in (recovery.reason or "")
    assert path.stat().st_size == offsets[record]


def test_a_sequence_gap_ends_the_readable_log(tmp_path: Path) -> None:
    path = tmp_path / "log.wal"
    path.write_bytes(frame(1, b"a") + frame(2, b"b") + frame(4, b"d"))
    _, found, recovery = WriteAheadLog.open(path)
    assert [r.seq for r in found] == [1, 2]
    assert "expected 3" in (recovery.reason or "")


def test_every_append_is_fsynced_before_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, _, _ = WriteAheadLog.open(tmp_path / "log.wal")
    events: list[str] = []
    real_write, real_fsync = os.write, os.fsync

    def write(fd: int, data: bytes) -> int:
        events.append("write")
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        events.append("fsync")
        real_fsync(fd)

    monkeypatch.setattr(log_module.os, "write", write)
    monkeypatch.setattr(log_module.os, "fsync", fsync)
    log.append(_records(1, 3))  # three records, one write, one fsync: group commit
    log.append(_records(4, 1))
    assert events == ["write", "fsync", "write", "fsync"]
    log.close()


def test_a_failed_fsync_stops_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log, _, _ = WriteAheadLog.open(tmp_path / "log.wal")

    def broken(_fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(log_module.os, "fsync", broken)
    with pytest.raises(LogError, match="Input/output error"):
        log.append(_records(1, 1))
    monkeypatch.undo()
    assert log.failed is not None
    with pytest.raises(LogError, match="stopped"):
        log.append(_records(1, 1))
    assert log.last_seq == 0
    log.close()


def test_records_must_follow_each_other(tmp_path: Path) -> None:
    log, _, _ = WriteAheadLog.open(tmp_path / "log.wal")
    with pytest.raises(ValueError, match="does not follow"):
        log.append([LogRecord(2, b"x")])
    log.close()


def test_a_log_is_replaced_whole_and_goes_on_from_its_last_record(tmp_path: Path) -> None:
    path = tmp_path / "log.wal"
    _written(path, 4)
    log, _, _ = WriteAheadLog.open(path)
    log.replace_with([LogRecord(4, b"checkpoint")])
    log.append([LogRecord(5, b"five")])
    log.close()
    _, found, recovery = WriteAheadLog.open(path)
    assert found == [LogRecord(4, b"checkpoint"), LogRecord(5, b"five")]
    assert recovery.reason is None


def test_frames_after_reads_back_what_a_replica_appends(tmp_path: Path) -> None:
    log, _, _ = WriteAheadLog.open(tmp_path / "log.wal")
    log.append([LogRecord(seq, b"x" * seq) for seq in range(1, 11)])
    data = log.frames_after(3, upto=7, max_bytes=1 << 20)
    assert [record.seq for record in read_frames(data, 3)] == [4, 5, 6, 7]
    assert log.frames_after(10, upto=10, max_bytes=1 << 20) == b""
    # At least one record, then as many as fit.
    one = log.frames_after(0, upto=10, max_bytes=1)
    assert [record.seq for record in read_frames(one, 0)] == [1]
    some = read_frames(log.frames_after(0, upto=10, max_bytes=HEADER_BYTES * 3 + 6), 0)
    assert [record.seq for record in some] == [1, 2, 3]
    # A replica's copy reads the same records back after a reopen.
    log.close()
    again, _, _ = WriteAheadLog.open(tmp_path / "log.wal")
    assert again.frames_after(3, upto=7, max_bytes=1 << 20) == data
    again.close()


def test_frames_after_a_rewrite_start_at_its_first_record(tmp_path: Path) -> None:
    log, _, _ = WriteAheadLog.open(tmp_path / "log.wal")
    log.append([LogRecord(seq, b"r") for seq in range(1, 6)])
    log.replace_with([], after=5)
    assert log.first_seq == 6
    log.append([LogRecord(6, b"s"), LogRecord(7, b"t")])
    with pytest.raises(ValueError, match="starts at record 6"):
        log.frames_after(2, upto=7, max_bytes=1 << 20)
    assert [r.payload for r in read_frames(log.frames_after(5, 7, 1 << 20), 5)] == [b"s", b"t"]
    log.close()


def test_read_frames_refuses_records_that_do_not_go_on() -> None:
    data = frame(3, b"a") + frame(4, b"b")
    assert len(read_frames(data, 2)) == 2
    with pytest.raises(ValueError, match="does not follow"):
        read_frames(data, 1)
    with pytest.raises(ValueError, match="damaged"):
        read_frames(data[:-1], 2)
