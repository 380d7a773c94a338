"""The distributed build's driver with the parts embedded in this process (no Ray job): it plans,
reads, checks, refuses and writes as the single-machine build does — the same report, the same
bundle — around its own embedding stage; Karpathy captions build their captions collection."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cluster.embedding_parts import EmbedConfig, PartEmbedder, PartSpec
from encoders.text_encoder import OnnxTextEncoder
from formats.karpathy import CaptionRecord, read_captions, write_captions
from index_builder.bad_item_policy import BuildRefusedError, OnError
from index_builder.corpus import ImageFolderCorpus, KarpathyCaptions
from index_builder.field_schema import CorpusError
from index_builder.ingest import IngestOptions
from storage.manifest import verify_bundle
from storage.reader import load_bundle
from tests.fakes.tiny_image_variant import make_tiny_image_variant
from tests.fakes.tiny_variant import make_tiny_variant
from tests.fakes.user_corpora import truncated_png, write_image
from tests.unit.index_builder.captions_bundle import build_captions_bundle

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def text_variant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    variant_dir = tmp_path_factory.mktemp("variants") / "tiny"
    make_tiny_variant(variant_dir)
    return variant_dir


@pytest.fixture(autouse=True)
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts embedded here, one after another, by one :class:`PartEmbedder`."""
    import cluster.build as build

    def run_here(specs: Sequence[PartSpec], config: EmbedConfig, *_: object) -> list[int]:
        embedder = PartEmbedder(config)
        done = [embedder({"part": [spec.index]})["part"] for spec in specs]
        return [int(str(part)) for parts in done for part in parts]

    monkeypatch.setattr(build, "_actors", lambda _: build._Actors(2, 1.0, 0.0, 1))
    monkeypatch.setattr(build, "_run_parts", run_here)


def test_an_image_that_fails_while_embedding_refuses_the_build(tmp_path: Path) -> None:
    from cluster.build import ClusterOptions, distributed_build

    variant = tmp_path / "tiny-image"
    make_tiny_image_variant(variant)
    for index in range(6):
        write_image(tmp_path / "photos" / f"{index}.png", "blue", "PNG")
    (tmp_path / "photos" / "4.png").write_bytes(truncated_png())

    def build(on_error: OnError) -> Path:
        return distributed_build(
            ImageFolderCorpus(tmp_path / "photos"),
            variant_dir=variant,
            bundles_root=tmp_path / "bundles",
            name="photos",
            options=IngestOptions(collection="photos", on_error=on_error, progress=False),
            cluster=ClusterOptions(part_size=4, providers="cpu"),
        ).version_dir

    with pytest.raises(BuildRefusedError, match="could not be decoded while embedding") as refused:
        build(OnError.REFUSE)
    assert [item.item_id for item in refused.value.bad] == ["4.png"]
    assert not list((tmp_path / "bundles" / "photos").iterdir())  # nothing written, no staging

    version_dir = build(OnError.SKIP)
    report = json.loads((version_dir / "build_report.json").read_text())
    photos = report["collections"]["photos"]
    assert photos["counts"] == {"read": 6, "indexed": 5, "skipped": 1}
    assert photos["skipped"][0]["problem"] == "unreadable_image"
    assert set(photos["timings_s"]) == {"read", "embed"}
    assert report["notes"]["ray"]["parts"] == 2


def test_a_variant_without_the_tower_is_refused(text_variant: Path, tmp_path: Path) -> None:
    from cluster.build import ClusterOptions, distributed_build

    with pytest.raises(CorpusError, match="has no image tower: it cannot embed --images"):
        distributed_build(
            ImageFolderCorpus(tmp_path),
            variant_dir=text_variant,
            bundles_root=tmp_path / "bundles",
            name="photos",
            options=IngestOptions(collection="photos", progress=False),
            cluster=ClusterOptions(providers="cpu"),
        )
    with pytest.raises(CorpusError, match="workers must be at least 1"):
        ClusterOptions(workers=0)


def _captions(path: Path, count: int) -> Path:
    words = ["a dog", "two cats", "the red plane", "a big ball", "a blue sofa"]
    write_captions(
        path,
        (
            CaptionRecord(
                sentid=index, key=f"test:sentid:{index}", image_id=index // 2,
                filename=f"img_{index // 2:012d}.png", image_index=index // 2,
                caption_index=index % 2, text=words[index % 5], raw=words[index % 5], row=index,
            )
            for index in range(count)
        ),
    )  # fmt: skip
    return path


def test_karpathy_captions_build_their_captions_collection(
    text_variant: Path, tmp_path: Path
) -> None:
    from cluster.build import ClusterOptions, distributed_build

    source = _captions(tmp_path / "captions_test.csv", 10)
    corpus = KarpathyCaptions(read_captions(source), source)
    options = IngestOptions(collection="captions", progress=False)
    result = distributed_build(
        corpus,
        variant_dir=text_variant,
        bundles_root=tmp_path / "ray",
        name="coco",
        options=options,
        cluster=ClusterOptions(part_size=4, providers="cpu"),
    )
    local_dir = build_captions_bundle(
        OnnxTextEncoder(text_variant, providers="cpu"),
        corpus.records,
        source=source,
        bundles_root=tmp_path / "local",
        name="coco",
    )
    local = load_bundle(local_dir).collections["captions"]
    remote = load_bundle(result.version_dir).collections["captions"]
    assert list(remote.ids) == list(local.ids)
    assert remote.metadata == local.metadata
    assert remote.fields == local.fields
    np.testing.assert_allclose(remote.vectors, local.vectors, atol=1e-6)
    assert result.report.kind == "captions"
    assert result.report.collection("captions").indexed == 10
    local_report = json.loads((local_dir / "build_report.json").read_text())
    ray_report = json.loads((result.version_dir / "build_report.json").read_text())
    for key in ("kind", "inputs", "counts"):
        assert ray_report[key] == local_report[key]
    assert (
        ray_report["collections"]["captions"]["fields"]
        == (local_report["collections"]["captions"]["fields"])
    )
    info = verify_bundle(result.version_dir).build_info
    assert (info["mode"], info["kind"]) == ("ray", "captions")

    with pytest.raises(CorpusError, match="captions collection only: leave out the images"):
        distributed_build(
            replace(corpus, images_dir=tmp_path / "images"),
            variant_dir=text_variant,
            bundles_root=tmp_path / "ray",
            name="coco",
            options=options,
            cluster=ClusterOptions(providers="cpu"),
        )
