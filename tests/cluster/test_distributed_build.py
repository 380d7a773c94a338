"""The distributed build on the session's local Ray cluster: the same bundle as the
single-machine build, a killed worker retried without losing or duplicating an item, bad items
refused or skipped as there, throughput per worker in the manifest."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cluster.build import ClusterOptions, DistributedResult, distributed_build
from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder
from formats.karpathy import CaptionRecord, write_captions
from index_builder.bad_item_policy import BuildRefusedError, OnError
from index_builder.corpus import Corpus, ImageFolderCorpus, TextTable
from index_builder.ingest import IngestOptions, ingest
from storage.manifest import verify_bundle
from storage.reader import load_bundle
from tests.fakes.tiny_image_variant import make_tiny_image_variant
from tests.fakes.tiny_variant import WORDS, make_tiny_variant
from tests.fakes.user_corpora import truncated_png, write_image, write_jsonl
from tests.unit.index_builder.captions_bundle import build_captions_bundle

pytestmark = pytest.mark.usefixtures("ray_session")

CORPUS_SIZE = 600


@pytest.fixture(scope="module")
def text_variant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    variant_dir = tmp_path_factory.mktemp("variants") / "tiny"
    make_tiny_variant(variant_dir)
    return variant_dir


@pytest.fixture(scope="module")
def image_variant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    variant_dir = tmp_path_factory.mktemp("variants") / "tiny-image"
    make_tiny_image_variant(variant_dir)
    return variant_dir


def _texts(count: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(7)
    rows: list[dict[str, object]] = []
    for index in range(count):
        words = rng.choice(len(WORDS), size=int(rng.integers(2, 7)))
        rows.append(
            {
                "id": f"t{index:05d}",
                "text": " ".join(WORDS[word] for word in words),
                "section": ["pets", "travel", "home"][index % 3],
                "price": round(float(rng.uniform(1, 100)), 2),
                "tags": [WORDS[int(words[0])]],
            }
        )
    return rows


@pytest.fixture(scope="module")
def text_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("corpus") / "texts.jsonl", _texts(CORPUS_SIZE))


@pytest.fixture(scope="module")
def bad_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows: list[dict[str, object] | str] = list(_texts(CORPUS_SIZE))
    rows[10] = {"id": "t00010", "text": "   "}
    rows[20] = '{"id": "broken'
    rows[30] = {**_texts(31)[30], "id": "t00001"}
    rows[40] = {**_texts(41)[40], "price": "n/a"}
    return write_jsonl(tmp_path_factory.mktemp("corpus") / "bad.jsonl", rows)


def _single_machine(
    corpus: Path, variant: Path, root: Path, on_error: OnError = OnError.REFUSE
) -> Path:
    return ingest(
        TextTable(corpus),
        text_encoder=OnnxTextEncoder(variant, providers="cpu"),
        image_encoder=None,
        bundles_root=root,
        name="corpus",
        options=IngestOptions(collection="texts", on_error=on_error, progress=False),
    ).version_dir


def _distributed(
    corpus: Corpus,
    variant: Path,
    root: Path,
    *,
    on_error: OnError = OnError.REFUSE,
    collection: str = "texts",
    **cluster: object,
) -> DistributedResult:
    return distributed_build(
        corpus,
        variant_dir=variant,
        bundles_root=root,
        name="corpus",
        options=IngestOptions(collection=collection, on_error=on_error, progress=False),
        cluster=ClusterOptions(providers="cpu", **cluster),  # type: ignore[arg-type]
    )


def _assert_same_bundle(local_dir: Path, ray_dir: Path, collection: str) -> None:
    verify_bundle(ray_dir)
    local = load_bundle(local_dir).collections[collection]
    remote = load_bundle(ray_dir).collections[collection]
    assert list(remote.ids) == list(local.ids)
    assert remote.metadata == local.metadata
    assert remote.fields == local.fields
    np.testing.assert_allclose(remote.vectors, local.vectors, atol=1e-5)
    queries = np.asarray(local.vectors[[0, 17, 123 % local.count, local.count - 1]])
    _, local_rows = local.index.search(queries, 10)
    _, remote_rows = remote.index.search(queries, 10)
    assert (local_rows == remote_rows).all()


def test_texts_match_the_single_machine_build_bad_rows_skipped(
    bad_corpus: Path, text_variant: Path, tmp_path: Path
) -> None:
    local_dir = _single_machine(bad_corpus, text_variant, tmp_path / "local", OnError.SKIP)
    result = _distributed(
        TextTable(bad_corpus),
        text_variant,
        tmp_path / "ray",
        on_error=OnError.SKIP,
        workers=2,
        part_size=128,
    )

    _assert_same_bundle(local_dir, result.version_dir, "texts")
    local_report = json.loads((local_dir / "build_report.json").read_text())
    ray_report = json.loads((result.version_dir / "build_report.json").read_text())
    assert ray_report["counts"] == {"read": CORPUS_SIZE, "indexed": CORPUS_SIZE - 4, "skipped": 4}
    assert ray_report["counts"] == local_report["counts"]
    ray_texts, local_texts = (
        ray_report["collections"]["texts"],
        local_report["collections"]["texts"],
    )
    assert ray_texts["counts"] == local_texts["counts"]
    assert ray_texts["skipped"] == local_texts["skipped"]
    assert ray_texts["fields"] == local_texts["fields"]
    assert ray_report["schema_version"] == local_report["schema_version"] == 2
    info = verify_bundle(result.version_dir).build_info
    assert info["mode"] == "ray"
    assert info["counts"] == local_report["counts"]
    assert info["ray"]["parts"] == 5
    throughput = info["ray"]["throughput"]
    assert info["ray"]["workers"] == 2
    assert 1 <= len(throughput["workers"]) <= 2  # an actor that starts late may get no part
    assert sum(worker["items"] for worker in throughput["workers"]) == CORPUS_SIZE - 4
    assert all(worker["items_per_s"] > 0 for worker in throughput["workers"])
    assert throughput["total"]["items"] == CORPUS_SIZE - 4
    assert throughput["total"]["items_per_s"] > 0
    assert ray_report["notes"]["ray"]["throughput"] == throughput
    assert not list((tmp_path / "ray" / "corpus").glob(".ray-build-*"))  # staging removed


def _kill_a_busy_worker(staging_root: Path, stop: threading.Event) -> list[int]:
    """Once a part is complete, SIGKILL a worker that has started a part it has not finished."""
    killed: list[int] = []
    deadline = time.monotonic() + 60
    while not stop.is_set() and time.monotonic() < deadline:
        for staging in staging_root.glob(".ray-build-*"):
            if not list(staging.glob("part-*.result.json")):
                continue
            for marker in sorted((staging / "attempts").glob("part-*")):
                part, worker, _ = marker.name.split("@")
                if (staging / f"{part}.result.json").exists():
                    continue
                pid = json.loads((staging / "workers" / f"{worker}.json").read_text())["pid"]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return killed
        time.sleep(0.02)
    return killed


def test_a_killed_worker_loses_and_duplicates_nothing(
    text_corpus: Path, text_variant: Path, tmp_path: Path
) -> None:
    staging_root = tmp_path / "staging"
    staging_root.mkdir()
    stop = threading.Event()
    killed: list[int] = []
    killer = threading.Thread(
        target=lambda: killed.extend(_kill_a_busy_worker(staging_root, stop)), daemon=True
    )
    killer.start()
    try:
        result = _distributed(
            TextTable(text_corpus),
            text_variant,
            tmp_path / "ray",
            workers=2,
            part_size=50,
            pause_s=0.3,
            staging_root=staging_root,
        )
    finally:
        stop.set()
        killer.join()

    assert len(killed) == 1
    bundle = load_bundle(result.version_dir).collections["texts"]
    expected = [f"t{index:05d}" for index in range(CORPUS_SIZE)]
    assert bundle.count == CORPUS_SIZE
    assert list(bundle.ids) == expected
    assert result.retried_parts, "the killed worker's part was retried"
    assert any(
        str(killed[0]) in worker for tried in result.retried_parts.values() for worker in tried
    )
    info = verify_bundle(result.version_dir).build_info["ray"]
    assert info["retried_parts"]
    assert sum(worker["items"] for worker in info["throughput"]["workers"]) == CORPUS_SIZE


def test_bad_items_are_refused_and_nothing_is_written(
    bad_corpus: Path, text_variant: Path, tmp_path: Path
) -> None:
    with pytest.raises(BuildRefusedError) as refused:
        _distributed(TextTable(bad_corpus), text_variant, tmp_path / "ray", part_size=64)

    assert len(refused.value.bad) == 4
    assert refused.value.headline.startswith(f"refused: 4 of {CORPUS_SIZE} records are bad")
    bundle_dir = tmp_path / "ray" / "corpus"
    assert not bundle_dir.exists() or not list(bundle_dir.iterdir())


def test_images_an_undecodable_file_skipped(image_variant: Path, tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    for index in range(40):
        write_image(folder / f"{index:03d}.png", ["red", "green", "blue"][index % 3], "PNG")
    (folder / "017.png").write_bytes(truncated_png())
    corpus = ImageFolderCorpus(folder)
    local_dir = ingest(
        corpus,
        text_encoder=None,
        image_encoder=OnnxImageEncoder(image_variant, providers="cpu"),
        bundles_root=tmp_path / "local",
        name="corpus",
        options=IngestOptions(collection="photos", on_error=OnError.SKIP, progress=False),
    ).version_dir

    result = _distributed(
        corpus,
        image_variant,
        tmp_path / "ray",
        collection="photos",
        on_error=OnError.SKIP,
        part_size=16,
    )
    _assert_same_bundle(local_dir, result.version_dir, "photos")
    report = json.loads((result.version_dir / "build_report.json").read_text())
    assert [item["id"] for item in report["collections"]["photos"]["skipped"]] == ["017.png"]
    assert load_bundle(result.version_dir).collections["photos"].thumbnails is not None


def _captions(count: int) -> Iterator[CaptionRecord]:
    for index, row in enumerate(_texts(count)):
        yield CaptionRecord(
            sentid=index,
            key=f"COCO_val2014:sentid:{index}",
            image_id=index // 5,
            filename=f"COCO_val2014_{index // 5:012d}.jpg",
            image_index=index // 5,
            caption_index=index % 5,
            text=str(row["text"]),
            raw=str(row["text"]),
            row=index,
        )


def test_captions_through_the_command_line(
    text_variant: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cluster.__main__ import main

    captions = tmp_path / "captions_test.csv"
    write_captions(captions, _captions(200))
    local_dir = build_captions_bundle(
        OnnxTextEncoder(text_variant, providers="cpu"),
        list(_captions(200)),
        source=captions,
        bundles_root=tmp_path / "local",
        name="coco",
    )

    status = main(
        [
            "build",
            "--variant", str(text_variant),
            "--captions", str(captions),
            "--name", "coco",
            "--bundles-root", str(tmp_path / "ray"),
            "--workers", "2",
            "--part-size", "64",
            "--providers", "cpu",
            "--no-progress",
        ]
    )  # fmt: skip

    out, err = capsys.readouterr()
    assert status == 0, err
    version_dir = Path(out.strip())
    _assert_same_bundle(local_dir, version_dir, "captions")
    assert "captions: read 200, indexed 200, skipped 0" in err  # reported like every kind
    report = json.loads((version_dir / "build_report.json").read_text())
    assert report["kind"] == "captions"
    assert report["inputs"]["captions"] == str(captions)
    assert "items/s" in err
    assert "\ntotal " in err

    missing = tmp_path / "none.csv"
    arguments = ["build", "--variant", str(text_variant), "--captions", str(missing)]
    status = main([*arguments, "--name", "coco", "--bundles-root", str(tmp_path / "ray")])
    assert status == 1
    assert capsys.readouterr().err.startswith("error: ")


def test_a_tuned_on_disk_ivf_index_through_the_command_line(
    text_corpus: Path, text_variant: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cluster.__main__ import main

    local_dir = _single_machine(text_corpus, text_variant, tmp_path / "local")
    status = main(
        [
            "build",
            "--variant", str(text_variant),
            "--texts", str(text_corpus),
            "--collection", "texts",
            "--name", "corpus",
            "--bundles-root", str(tmp_path / "ray"),
            "--index", "ivf-flat",
            "--nlist", "8",
            "--on-disk",
            "--target-recall", "0.9",
            "--tune-queries", "100",
            "--workers", "2",
            "--part-size", "128",
            "--providers", "cpu",
            "--no-progress",
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert status == 0, err
    version_dir = Path(out.strip())
    verify_bundle(version_dir)
    collection = load_bundle(version_dir).collections["texts"]
    assert collection.factory == "IVF8,Flat"
    assert (version_dir / "texts.ivfdata").is_file()
    tuning = collection.tuning
    assert tuning is not None
    assert (tuning.parameter, tuning.held_out_queries) == ("nprobe", 100)
    assert tuning.met
    assert tuning.recall_at_10 >= 0.9
    assert collection.search_params == {"nprobe": tuning.value}
    # Every list probed, the IVF index scores exactly what the single-machine flat index does.
    local = load_bundle(local_dir).collections["texts"]
    assert list(collection.ids) == list(local.ids)
    collection.index.nprobe = 8
    queries = np.asarray(local.vectors[[0, 17, 123, local.count - 1]])
    exact_scores, _ = local.index.search(queries, 10)
    ivf_scores, _ = collection.index.search(queries, 10)
    np.testing.assert_allclose(ivf_scores, exact_scores, atol=1e-5)


@pytest.mark.slow
def test_the_real_minilm_variant_matches_the_single_machine_build(
    minilm_variant_dir: Path, text_corpus: Path, tmp_path: Path
) -> None:
    local = ingest(
        TextTable(text_corpus),
        text_encoder=OnnxTextEncoder(minilm_variant_dir, providers="cpu"),
        image_encoder=None,
        bundles_root=tmp_path / "local",
        name="corpus",
        options=IngestOptions(collection="texts", progress=False, limit=256),
    ).version_dir
    result = distributed_build(
        TextTable(text_corpus),
        variant_dir=minilm_variant_dir,
        bundles_root=tmp_path / "ray",
        name="corpus",
        options=IngestOptions(collection="texts", progress=False, limit=256),
        cluster=ClusterOptions(providers="cpu", workers=2, part_size=128),
    )

    _assert_same_bundle(local, result.version_dir, "texts")
