"""The parts of a distributed build, without Ray: part files, embedding a part (idempotent,
retried), every part exactly once, assembly in order, throughput."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cluster.embedding_parts import (
    EmbedConfig,
    PartEmbedder,
    PartFailure,
    PartResult,
    PartsError,
    PartSpec,
    assemble,
    attempts_per_part,
    check_parts,
    embed_part,
    embedding_span,
    failed_items,
    part_name,
    read_part_items,
    read_result,
    split_into_parts,
    throughput_by_worker,
    throughput_table,
    vectors_path,
)
from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder
from index_builder.embed import embed_texts
from index_builder.items import ImageItem, ItemOrigin, Problem, TextItem
from tests.fakes.tiny_image_variant import make_tiny_image_variant
from tests.fakes.tiny_variant import make_tiny_variant
from tests.fakes.user_corpora import truncated_png, write_image

TEXTS = ["a dog on the couch", "two cats", "the red plane in the sky", "a big ball", "blue sofa"]


@pytest.fixture(scope="module")
def text_variant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    variant_dir = tmp_path_factory.mktemp("variants") / "tiny"
    make_tiny_variant(variant_dir)
    return variant_dir


@pytest.fixture(scope="module")
def text_encoder(text_variant: Path) -> OnnxTextEncoder:
    return OnnxTextEncoder(text_variant, providers="cpu")


def _text_items(count: int) -> list[TextItem]:
    return [
        TextItem(
            item_id=f"t{index}",
            text=TEXTS[index % len(TEXTS)],
            origin=ItemOrigin("texts.jsonl", line=index + 1),
            metadata={"text": TEXTS[index % len(TEXTS)], "rank": index, "tags": ["x"]},
        )
        for index in range(count)
    ]


def _config(variant: Path, staging: Path) -> EmbedConfig:
    return EmbedConfig(variant_dir=variant, tower="text", staging=staging, providers="cpu")


def test_parts_hold_the_items_in_order(tmp_path: Path) -> None:
    items = _text_items(7)
    specs = split_into_parts(iter(items), tmp_path, 3)

    assert specs == [PartSpec(0, 3), PartSpec(1, 3), PartSpec(2, 1)]
    read = [item for spec in specs for item in read_part_items(tmp_path, spec.index)]
    assert [item.item_id for item in read] == [item.item_id for item in items]
    assert [item.payload for item in read] == [item.text for item in items]
    assert [item.metadata for item in read] == [item.metadata for item in items]
    assert [item.origin for item in read] == [item.origin for item in items]
    assert split_into_parts(iter([]), tmp_path / "none", 3) == []
    with pytest.raises(ValueError, match="part_size"):
        split_into_parts(iter(items), tmp_path, 0)
    assert part_name(7) == "part-00007"


def test_a_part_is_embedded_as_the_single_machine_build_embeds_it(
    text_variant: Path, text_encoder: OnnxTextEncoder, tmp_path: Path
) -> None:
    items = _text_items(10)
    split_into_parts(iter(items), tmp_path, 4)
    config = _config(text_variant, tmp_path)

    result = embed_part(config, 1, text_encoder=text_encoder)

    expected = embed_texts(text_encoder, [item.text for item in items[4:8]], progress=False)
    np.testing.assert_array_equal(np.load(vectors_path(tmp_path, 1)), expected)
    assert (result.part, result.count, result.embedded, result.failures) == (1, 4, 4, ())
    assert result.variant_fingerprint == text_encoder.fingerprint
    assert read_result(tmp_path, 1) == result
    assert read_result(tmp_path, 0) is None


def test_a_retried_part_rewrites_the_same_files_and_a_complete_one_is_not_redone(
    text_variant: Path, text_encoder: OnnxTextEncoder, tmp_path: Path
) -> None:
    split_into_parts(iter(_text_items(6)), tmp_path, 3)
    config = _config(text_variant, tmp_path)
    first = embed_part(config, 0, text_encoder=text_encoder)
    vectors = np.load(vectors_path(tmp_path, 0))

    assert embed_part(config, 0, text_encoder=text_encoder) == first  # complete: not redone
    assert len(attempts_per_part(tmp_path)[0]) == 1
    (tmp_path / f"{part_name(0)}.result.json").unlink()  # as if killed before its result
    again = embed_part(config, 0, text_encoder=text_encoder)

    assert again.count == first.count
    np.testing.assert_array_equal(np.load(vectors_path(tmp_path, 0)), vectors)
    assert len(attempts_per_part(tmp_path)[0]) == 2
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]  # no temp files


def test_the_actor_class_embeds_a_batch_of_parts(text_variant: Path, tmp_path: Path) -> None:
    split_into_parts(iter(_text_items(5)), tmp_path, 2)
    embedder = PartEmbedder(_config(text_variant, tmp_path))

    rows = embedder({"part": np.array([2, 0])})

    assert rows["part"] == [2, 0]
    assert rows["count"] == [1, 2]
    assert rows["failed"] == [0, 0]
    assert len(list((tmp_path / "workers").iterdir())) == 1


def test_every_part_exactly_once(
    text_variant: Path, text_encoder: OnnxTextEncoder, tmp_path: Path
) -> None:
    specs = split_into_parts(iter(_text_items(5)), tmp_path, 2)
    config = _config(text_variant, tmp_path)
    for spec in specs:
        embed_part(config, spec.index, text_encoder=text_encoder)

    assert [result.part for result in check_parts(specs, [2, 0, 1], tmp_path)] == [0, 1, 2]
    with pytest.raises(PartsError, match=r"twice \[1\]"):
        check_parts(specs, [0, 1, 1, 2], tmp_path)
    with pytest.raises(PartsError, match=r"never \[2\]"):
        check_parts(specs, [0, 1], tmp_path)
    with pytest.raises(PartsError, match="items embedded of"):
        check_parts([PartSpec(0, 3), *specs[1:]], [0, 1, 2], tmp_path)

    assembled = assemble(tmp_path, check_parts(specs, [0, 1, 2], tmp_path), text_encoder.dim)
    assert assembled.ids == [f"t{index}" for index in range(5)]
    assert [row["rank"] for row in assembled.metadata] == list(range(5))
    expected = embed_texts(text_encoder, [item.text for item in _text_items(5)], progress=False)
    np.testing.assert_allclose(assembled.vectors, expected, atol=1e-6)


def test_failed_images_are_left_out_and_reported(tmp_path: Path) -> None:
    variant = tmp_path / "tiny-image"
    make_tiny_image_variant(variant)
    encoder = OnnxImageEncoder(variant, providers="cpu")
    files = [write_image(tmp_path / f"{index}.png", "red", "PNG") for index in range(5)]
    files[2].write_bytes(truncated_png())
    items = [
        ImageItem(file.name, file, ItemOrigin(str(tmp_path), path=file.name), {"path": file.name})
        for file in files
    ]
    staging = tmp_path / "staging"
    staging.mkdir()
    specs = split_into_parts(iter(items), staging, 5)
    config = EmbedConfig(
        variant_dir=variant,
        tower="image",
        staging=staging,
        providers="cpu",
        stop_at_failure=False,
        image_batch_size=2,
    )

    result = embed_part(config, 0, image_encoder=encoder)

    assert result.embedded == 4
    assert [failure.position for failure in result.failures] == [2]
    assert result.kept_positions() == [0, 1, 3, 4]
    bad = failed_items(staging, [result])
    assert [(item.item_id, item.problem) for item in bad] == [("2.png", Problem.UNREADABLE_IMAGE)]
    assembled = assemble(staging, check_parts(specs, [0], staging), encoder.dim)
    assert assembled.ids == ["0.png", "1.png", "3.png", "4.png"]
    assert assembled.payloads[2] == str(files[3])


def test_kept_positions_after_a_stop() -> None:
    result = PartResult(
        part=0,
        count=10,
        embedded=3,
        seconds=1.0,
        worker="w",
        providers=("CPUExecutionProvider",),
        variant_name="v",
        variant_fingerprint="f",
        failures=(PartFailure(1, Problem.UNREADABLE_IMAGE, "bad"),),
        stopped=True,
    )
    assert result.kept_positions() == [0, 2, 3]
    assert PartResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def _result(part: int, worker: str, count: int, seconds: float) -> PartResult:
    started = 1000.0 + part
    return PartResult(
        part,
        count,
        count,
        seconds,
        worker,
        ("CPU",),
        "v",
        "f",
        (),
        False,
        started,
        started + seconds,
    )


def test_throughput_per_worker_and_total() -> None:
    results = [_result(0, "b-2", 100, 1.0), _result(1, "a-1", 50, 0.5), _result(2, "b-2", 100, 1.0)]

    workers = throughput_by_worker(results)

    assert [(w.worker, w.parts, w.items) for w in workers] == [("a-1", 1, 50), ("b-2", 2, 200)]
    assert workers[1].items_per_s == pytest.approx(100.0)
    assert workers[1].to_json()["items_per_s"] == 100.0
    assert embedding_span(results) == pytest.approx(3.0)  # 1000.0 → 1003.0
    table = throughput_table(workers, 250, 2.0).splitlines()
    assert table[0].split() == ["worker", "parts", "items", "busy", "s", "items/s"]
    assert table[-1].split() == ["total", "3", "250", "2.00", "125.0"]
