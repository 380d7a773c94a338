"""PrivateCopies: versions copied into a folder the server owns, shared by workers, deleted once
no process serves them — and why: a mapped file truncated in place kills the process."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from storage.private_copies import (
    OWNER_FILE,
    TEMPORARY_PREFIX,
    PrivateCopies,
    PrivateCopyError,
    sweep_orphans,
)
from storage.reader import load_bundle
from storage.writer import CollectionInput, write_bundle


def version(root: Path, name: str = "v1") -> Path:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((50, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    collection = CollectionInput(
        name="captions",
        ids=[f"c{i}" for i in range(50)],
        metadata=[{"text": f"caption {i}"} for i in range(50)],
        vectors=vectors,
    )
    return write_bundle(
        root, "demo", [collection], variant_name="fake", variant_fingerprint="f" * 64, version=name
    )


def test_a_version_is_copied_read_only_into_a_folder_only_its_owner_enters(
    tmp_path: Path,
) -> None:
    source = version(tmp_path / "bundles")
    copies = PrivateCopies(tmp_path / "copies")
    copy = copies.adopt(source)
    assert copy == tmp_path / "copies" / "demo" / "v1"
    assert sorted(path.name for path in copy.iterdir()) == sorted(
        path.name for path in source.iterdir() if not path.name.startswith(".")
    )
    for path in copy.iterdir():
        assert path.read_bytes() == (source / path.name).read_bytes()
        assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert stat.S_IMODE((tmp_path / "copies").stat().st_mode) == 0o700
    loaded = load_bundle(copy)  # verified on the copy: the bytes it maps
    assert loaded.collections["captions"].count == 50
    assert copies.adopt(source) == copy


def test_only_the_files_the_manifest_lists_are_copied(tmp_path: Path) -> None:
    source = version(tmp_path / "bundles")
    (source / "notes.txt").write_text("not part of the bundle")
    copy = PrivateCopies(tmp_path / "copies").adopt(source)
    assert not (copy / "notes.txt").exists()


def test_a_manifest_naming_a_file_outside_the_bundle_is_refused(tmp_path: Path) -> None:
    source = version(tmp_path / "bundles")
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["files"]["../../escape"] = "0" * 64
    (source / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(PrivateCopyError, match="outside the bundle"):
        PrivateCopies(tmp_path / "copies").adopt(source)


def test_a_missing_file_leaves_no_copy_behind(tmp_path: Path) -> None:
    source = version(tmp_path / "bundles")
    (source / "captions.faiss").unlink()
    copies = PrivateCopies(tmp_path / "copies")
    with pytest.raises(PrivateCopyError, match=r"cannot copy captions\.faiss"):
        copies.adopt(source)
    assert [path.name for path in (tmp_path / "copies" / "demo").iterdir()] == ["v1.lock"]


def test_workers_sharing_a_root_share_one_copy_and_the_last_one_out_deletes_it(
    tmp_path: Path,
) -> None:
    source = version(tmp_path / "bundles")
    first, second = PrivateCopies(tmp_path / "copies"), PrivateCopies(tmp_path / "copies")
    copy = first.adopt(source)
    inode = (copy / "captions.faiss").stat().st_ino
    assert second.adopt(source) == copy
    assert (copy / "captions.faiss").stat().st_ino == inode  # reused, not copied again
    first.keep(set())
    assert copy.is_dir()  # the second still serves it
    second.keep(set())
    assert not copy.exists()


def test_keep_holds_what_is_still_served(tmp_path: Path) -> None:
    bundles = tmp_path / "bundles"
    old, new = version(bundles, "v1"), version(bundles, "v2")
    copies = PrivateCopies(tmp_path / "copies")
    old_copy, new_copy = copies.adopt(old), copies.adopt(new)
    copies.keep({new})
    assert not old_copy.exists()
    assert new_copy.is_dir()
    copies.close()
    assert not new_copy.exists()


def test_nothing_is_adopted_once_closed(tmp_path: Path) -> None:
    copies = PrivateCopies(tmp_path / "copies")
    copies.close()
    with pytest.raises(PrivateCopyError, match="closed"):
        copies.adopt(version(tmp_path / "bundles"))
    copies.close()  # idempotent


def test_a_temporary_root_is_removed_at_close_and_orphans_are_swept(tmp_path: Path) -> None:
    orphan = tmp_path / f"{TEMPORARY_PREFIX}dead"
    (orphan / "demo" / "v1").mkdir(parents=True)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    (orphan / OWNER_FILE).write_text(dead.stdout.strip())
    alive = tmp_path / f"{TEMPORARY_PREFIX}alive"
    alive.mkdir()
    (alive / OWNER_FILE).write_text(str(os.getpid()))
    copies = PrivateCopies.temporary(tmp_path)
    assert not orphan.exists()
    assert alive.is_dir()
    copies.adopt(version(tmp_path / "bundles"))
    copies.close()
    assert not copies.root.exists()
    assert sweep_orphans(tmp_path) == []


# What the copies are for. The child maps a bundle's vectors, the file is truncated in place
# under it (as `cp new old` or a builder writing into the wrong folder would), and it reads them.
_READER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from storage.private_copies import PrivateCopies
    source = Path(sys.argv[1])
    folder = PrivateCopies(Path(sys.argv[2])).adopt(source) if sys.argv[2] else source
    vectors = np.load(folder / "captions.vectors.npy", mmap_mode="r")
    with open(source / "captions.vectors.npy", "r+b") as damaged:
        damaged.truncate(0)
    print(float(np.asarray(vectors).sum()))
    """
)


def _read_after_truncation(source: Path, copies: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _READER, str(source), copies],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONFAULTHANDLER": ""},
        check=False,
    )


def test_a_mapped_file_truncated_in_place_kills_the_process_with_sigbus(tmp_path: Path) -> None:
    result = _read_after_truncation(version(tmp_path / "bundles"), "")
    assert result.returncode == -signal.SIGBUS, result


def test_a_private_copy_keeps_serving_when_the_bundle_file_is_truncated(tmp_path: Path) -> None:
    source = version(tmp_path / "bundles")
    expected = float(np.load(source / "captions.vectors.npy").sum())
    result = _read_after_truncation(source, str(tmp_path / "copies"))
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) == pytest.approx(expected)
