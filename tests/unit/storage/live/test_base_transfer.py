"""A base sent whole: the stream unpacks into the same files, opened files survive a
compaction that removes them, and a stream of anything else is refused."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from formats.field_types import FieldType
from storage.live.base import BASE_FOLDER
from storage.live.base_transfer import open_base, unpack_bytes
from storage.live.collection import LiveCollection, create_collection
from storage.live.operations import Upsert
from storage.live.spec import CollectionSpec


def _collection(root: Path) -> LiveCollection:
    folder = create_collection(
        root, CollectionSpec(name="c", dim=4, fields={"cat": FieldType.STRING})
    )
    collection = LiveCollection.open(folder)
    vectors = np.eye(4, dtype=np.float32)
    ids = ("a", "b", "c", "d")
    collection.stage(Upsert(ids, vectors, tuple({"cat": i} for i in ids), (None,) * 4, key="first"))
    collection.commit()
    return collection


def test_a_base_streams_and_unpacks_to_the_same_files(tmp_path: Path) -> None:
    collection = _collection(tmp_path / "leader")
    done = collection.compact()
    files = open_base(collection.folder)
    assert (files.version, files.seq) == (done.base_version, done.seq)
    data = b"".join(files.chunks())
    received = unpack_bytes(data, tmp_path / "in", files.version)
    assert received.version_dir is not None
    source = collection.folder / BASE_FOLDER / str(files.version)
    assert sorted(p.name for p in received.version_dir.iterdir()) == sorted(
        p.name for p in source.iterdir()
    )
    for path in source.iterdir():
        assert (received.version_dir / path.name).read_bytes() == path.read_bytes()
    assert received.keys.get("first") is not None
    collection.close()


def test_opened_files_are_sent_whole_though_a_compaction_removes_them(tmp_path: Path) -> None:
    collection = _collection(tmp_path / "leader")
    collection.compact()
    files = open_base(collection.folder)
    collection.stage(Upsert(("e",), np.ones((1, 4), np.float32) / 2, ({},), (None,)))
    collection.commit()
    collection.compact()  # the version the stream names is removed now
    assert not (collection.folder / BASE_FOLDER / str(files.version)).exists()
    received = unpack_bytes(b"".join(files.chunks()), tmp_path / "in", files.version)
    assert received.version_dir is not None
    assert any(received.version_dir.iterdir())
    collection.close()


def test_a_collection_without_a_base_sends_its_keys_only(tmp_path: Path) -> None:
    collection = _collection(tmp_path / "leader")
    files = open_base(collection.folder)
    assert files.version is None
    assert files.seq == 0
    received = unpack_bytes(b"".join(files.chunks()), tmp_path / "in", None)
    assert received.version_dir is None
    collection.close()


def test_a_stream_with_a_foreign_member_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo("../escape")
        archive.addfile(info, io.BytesIO(b""))
    with pytest.raises(ValueError, match="unexpected member"):
        unpack_bytes(buffer.getvalue(), tmp_path / "in", None)
    with pytest.raises(ValueError, match="not a base stream"):
        unpack_bytes(b"not a tar at all" * 64, tmp_path / "in2", None)
