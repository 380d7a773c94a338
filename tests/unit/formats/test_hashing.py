"""sha256_file streams files of any size to the same digest hashlib computes in one go."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from formats.hashing import sha256_bytes, sha256_file, sha256_files


@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 1 << 20, (3 << 20) + 17])
def test_matches_hashlib_across_chunk_boundaries(tmp_path: Path, size: int) -> None:
    content = bytes(index % 251 for index in range(size))
    path = tmp_path / "blob.bin"
    path.write_bytes(content)
    assert sha256_file(path) == hashlib.sha256(content).hexdigest()


def test_known_digest(tmp_path: Path) -> None:
    path = tmp_path / "abc.txt"
    path.write_bytes(b"abc")
    assert sha256_file(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_hashes_named_files_sorted_by_name(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_bytes(b"b")
    (tmp_path / "a.txt").write_bytes(b"a")
    hashes = sha256_files(tmp_path, ["b.txt", "a.txt"])
    assert list(hashes) == ["a.txt", "b.txt"]
    assert hashes["a.txt"] == hashlib.sha256(b"a").hexdigest()


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        sha256_file(tmp_path / "absent")


def test_bytes_digest_equals_the_file_digest(tmp_path: Path) -> None:
    path = tmp_path / "abc.txt"
    path.write_bytes(b"abc")
    assert sha256_bytes(b"abc") == sha256_file(path)
