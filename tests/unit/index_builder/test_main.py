"""``python -m index_builder build|verify``: a tiny build, verification, and clean refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formats.field_types import FieldType
from formats.layout import captions_path, images_dir
from index_builder.__main__ import main
from storage.reader import load_bundle
from tests.fakes.tiny_image_variant import make_tiny_image_variant
from tests.fakes.tiny_variant import make_tiny_variant
from tests.fakes.user_corpora import write_csv, write_image, write_jsonl, write_parquet


def test_build_then_verify(
    tiny_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tiny_variant(tmp_path / "tiny")
    argv = [
        "build", "--variant", str(tmp_path / "tiny"),
        "--captions", str(captions_path(tiny_corpus, "val")),
        "--bundles-root", str(tmp_path / "bundles"), "--name", "tiny-captions",
        "--version", "v1", "--limit", "4", "--providers", "cpu", "--intra-op-threads", "1",
        "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    version_dir = tmp_path / "bundles" / "tiny-captions" / "v1"
    captured = capsys.readouterr()
    assert captured.out.strip() == str(version_dir)
    assert "captions: read 4, indexed 4, skipped 0" in captured.err  # reported like every kind
    report = json.loads((version_dir / "build_report.json").read_text(encoding="utf-8"))
    assert report["kind"] == "captions"
    assert report["collections"]["captions"]["counts"] == {"read": 4, "indexed": 4, "skipped": 0}
    assert main(["verify", str(version_dir.parent)]) == 0
    output = capsys.readouterr().out
    assert output.startswith(f"ok {version_dir}")
    assert "captions=4" in output


def test_a_malformed_captions_file_fails_with_file_and_line(
    tiny_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tiny_variant(tmp_path / "tiny")
    bad = tmp_path / "bad.csv"
    header = captions_path(tiny_corpus, "val").read_text(encoding="utf-8").splitlines()[0]
    bad.write_text(f"{header}\nx,k:1,1,a.png,0,0,t,t\n", encoding="utf-8")
    argv = ["build", "--variant", str(tmp_path / "tiny"), "--captions", str(bad)]
    argv += ["--bundles-root", str(tmp_path / "bundles"), "--name", "x", "--no-progress"]
    assert main(argv) == 1
    assert f"error: {bad}:2: column sentid" in capsys.readouterr().err


def test_captions_with_their_images_through_the_pipeline(
    tiny_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tiny_image_variant(tmp_path / "tiny-image")
    make_tiny_variant(tmp_path / "tiny")
    folder = images_dir(tiny_corpus, "val")
    (folder / "img_000000000001.png").unlink()
    argv = [
        "build", "--captions", str(captions_path(tiny_corpus, "val")),
        "--bundles-root", str(tmp_path / "bundles"), "--name", "scenes", "--providers", "cpu",
        "--no-progress",
    ]  # fmt: skip
    image_variant = ["--variant", str(tmp_path / "tiny-image")]
    assert main([*argv, *image_variant]) == 1
    assert "has an image tower: give --images-dir" in capsys.readouterr().err
    assert main([*argv, "--variant", str(tmp_path / "tiny"), "--images-dir", str(folder)]) == 1
    assert "has no image tower: it cannot embed the images" in capsys.readouterr().err

    with_images = [*argv, *image_variant, "--images-dir", str(folder)]
    assert main(with_images) == 1
    err = capsys.readouterr().err
    assert "error: refused: 1 of 3 records are bad" in err
    assert f"  {folder}/img_000000000001.png: no such image file" in err
    assert not (tmp_path / "bundles" / "scenes").exists()

    assert main([*with_images, "--on-error", "skip", "--version", "v1"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(tmp_path / "bundles" / "scenes" / "v1")
    assert "images: read 3, indexed 2, skipped 1" in captured.err
    assert "skipped: missing_image 1 (listed in build_report.json)" in captured.err
    bundle = load_bundle(tmp_path / "bundles" / "scenes" / "v1")
    assert list(bundle.collections) == ["images"]  # an image-only variant: no captions
    assert bundle.collections["images"].ids == ["img_000000000000.png", "img_000000000002.png"]


@pytest.mark.parametrize(
    "argv",
    [[], ["build"], ["verify"], ["scenes", "--out", "x"], ["build", "--variant", "v"]],
)
def test_bad_command_lines_exit_with_usage(argv: list[str]) -> None:
    # The scenes corpus is its own program now: `python -m scenes`.
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


# --- user corpora: one build per input kind, refusals, option checks ------------------------


def _ingest_argv(variant: Path, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "build", "--variant", str(variant), "--bundles-root", str(tmp_path / "bundles"),
        "--name", "My-Shop", "--version", "v1", "--providers", "cpu", "--no-progress", *extra,
    ]  # fmt: skip


def test_build_a_jsonl_table_of_texts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_tiny_variant(tmp_path / "tiny")
    table = write_jsonl(
        tmp_path / "items.jsonl",
        [{"id": "a", "text": "a dog on a couch", "price": 3}, {"id": "b", "text": "a red plane"},
         {"id": "c", "text": ""}],
    )  # fmt: skip
    argv = _ingest_argv(tmp_path / "tiny", tmp_path, "--texts", str(table))
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "error: refused: 1 of 3 records are bad" in err
    assert f"  {table}:3: empty text (column 'text' is blank) (id 'c')" in err
    assert not (tmp_path / "bundles" / "My-Shop").exists()

    assert main([*argv, "--on-error", "skip", "--field", "price:float"]) == 0
    captured = capsys.readouterr()
    version_dir = tmp_path / "bundles" / "My-Shop" / "v1"
    assert captured.out.strip() == str(version_dir)
    assert "my_shop: read 3, indexed 2, skipped 1" in captured.err
    assert "skipped: empty_text 1 (listed in build_report.json)" in captured.err
    bundle = load_bundle(version_dir)
    assert bundle.manifest.collections["my_shop"].fields == {
        "text": FieldType.STRING, "price": FieldType.FLOAT,
    }  # fmt: skip
    assert bundle.collections["my_shop"].metadata[0] == {"text": "a dog on a couch", "price": 3.0}


def test_build_a_csv_and_a_parquet_table_of_texts(tmp_path: Path) -> None:
    make_tiny_variant(tmp_path / "tiny")
    csv_table = write_csv(tmp_path / "t.csv", ["key", "body"], [["1", "a dog"], ["2", "a cat"]])
    argv = _ingest_argv(tmp_path / "tiny", tmp_path, "--texts", str(csv_table))
    assert main([*argv, "--id-column", "key", "--text-column", "body", "--collection", "pets"]) == 0
    parquet = write_parquet(tmp_path / "t.parquet", {"id": ["x"], "text": ["the sky"]})
    argv = _ingest_argv(tmp_path / "tiny", tmp_path, "--texts", str(parquet))
    argv[argv.index("v1")] = "v2"
    assert main(argv) == 0
    pets = load_bundle(tmp_path / "bundles" / "My-Shop" / "v1").collections["pets"]
    assert pets.ids == ["1", "2"]
    assert load_bundle(tmp_path / "bundles" / "My-Shop" / "v2").collections["my_shop"].ids == ["x"]


def test_build_an_image_folder_and_an_image_table(tmp_path: Path) -> None:
    make_tiny_image_variant(tmp_path / "tiny-image")
    folder = tmp_path / "photos"
    write_image(folder / "shoes" / "red.jpg", "red", "JPEG")
    write_image(folder / "blue.webp", "blue", "WEBP")
    (folder / "bad.gif").write_bytes(b"GIF89a broken")
    sidecar = write_csv(tmp_path / "meta.csv", ["path", "colour"], [["shoes/red.jpg", "red"]])
    argv = _ingest_argv(tmp_path / "tiny-image", tmp_path, "--images", str(folder))
    argv += ["--metadata", str(sidecar), "--on-error", "skip", "--max-image-pixels", "1000000"]
    assert main(argv) == 0
    images = load_bundle(tmp_path / "bundles" / "My-Shop" / "v1").collections["my_shop"]
    assert images.ids == ["blue.webp", "shoes/red.jpg"]
    assert images.metadata[1] == {"path": "shoes/red.jpg", "colour": "red"}

    table = write_jsonl(tmp_path / "images.jsonl", [{"file": "photos/blue.webp", "sku": "B"}])
    argv = _ingest_argv(tmp_path / "tiny-image", tmp_path, "--image-table", str(table))
    argv[argv.index("v1")] = "v2"
    assert main([*argv, "--path-column", "file", "--id-column", "sku"]) == 0
    table_images = load_bundle(tmp_path / "bundles" / "My-Shop" / "v2").collections["my_shop"]
    assert table_images.ids == ["B"]
    assert table_images.metadata == [{"path": "photos/blue.webp"}]


def test_a_corpus_the_variant_cannot_embed_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tiny_variant(tmp_path / "tiny")
    (tmp_path / "photos").mkdir()
    assert (
        main(_ingest_argv(tmp_path / "tiny", tmp_path, "--images", str(tmp_path / "photos"))) == 1
    )
    assert "has no image tower" in capsys.readouterr().err


def test_a_name_that_makes_no_collection_asks_for_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tiny_variant(tmp_path / "tiny")
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "text": "a dog"}])
    argv = _ingest_argv(tmp_path / "tiny", tmp_path, "--texts", str(table))
    argv[argv.index("My-Shop")] = "2024"
    assert main(argv) == 1
    assert "give --collection" in capsys.readouterr().err
    assert main([*argv, "--collection", "shop"]) == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--texts", "t.jsonl", "--images", "p"], "not allowed with argument"),
        (["--texts", "t.jsonl", "--metadata", "m.csv"], "--metadata goes with --images"),
        (["--images", "p", "--text-column", "body"], "--text-column goes with --texts"),
        (["--captions", "c.csv", "--collection", "x"], "--collection goes with --texts"),
        (["--captions", "c.csv", "--field", "n:integer"], "--field goes with"),
        (["--captions", "c.csv", "--metadata", "m.csv"], "--metadata goes with --images"),
        (["--texts", "t.jsonl", "--images-dir", "d"], "--images-dir goes with --captions"),
        (["--texts", "t.jsonl", "--field", "price"], "'price' is not NAME:TYPE"),
        (["--texts", "t.jsonl", "--field", "price:money"], "unknown field type 'money'"),
        (["--images", "p", "--max-image-bytes", "0"], "0 is not positive"),
        (["--texts", "t.jsonl", "--path-column", "f"], "--path-column goes with --image-table"),
    ],
)
def test_options_that_do_not_fit_are_usage_errors(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["build", "--variant", "v", "--name", "n", *extra])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_an_input_that_cannot_be_read_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tiny_variant(tmp_path / "tiny")
    missing = tmp_path / "missing.jsonl"
    assert main(_ingest_argv(tmp_path / "tiny", tmp_path, "--texts", str(missing))) == 1
    assert f"error: [Errno 2] No such file or directory: '{missing}'" in capsys.readouterr().err
    sheet = tmp_path / "items.xlsx"
    sheet.write_bytes(b"x")
    assert main(_ingest_argv(tmp_path / "tiny", tmp_path, "--texts", str(sheet))) == 1
    assert f"error: {sheet}: unknown table format" in capsys.readouterr().err


# --- --index: planned, tuned indexes ----------------------------------------------------------


def test_index_flat_leaves_the_collection_entry_as_without_it(
    tiny_corpus: Path, tmp_path: Path
) -> None:
    make_tiny_variant(tmp_path / "tiny")
    argv = [
        "build", "--variant", str(tmp_path / "tiny"),
        "--captions", str(captions_path(tiny_corpus, "val")),
        "--bundles-root", str(tmp_path / "bundles"), "--name", "tiny", "--providers", "cpu",
        "--no-progress",
    ]  # fmt: skip
    assert main([*argv, "--version", "v1"]) == 0
    assert main([*argv, "--version", "v2", "--index", "flat"]) == 0
    entries = [
        json.loads((tmp_path / "bundles" / "tiny" / v / "manifest.json").read_text())["collections"]
        for v in ("v1", "v2")
    ]
    assert json.dumps(entries[0], sort_keys=True) == json.dumps(entries[1], sort_keys=True)


def test_a_tuned_text_build_reports_and_verify_shows_its_recall(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    make_tiny_variant(tmp_path / "tiny")
    words = ["dog", "cat", "plane", "red", "blue", "sky", "couch", "harbour", "tree", "car"]
    rows = [
        {"id": f"t{i}", "text": f"a {words[i % 10]} {words[(i // 10) % 10]} {words[(i * 7) % 10]}"}
        for i in range(400)
    ]
    table = write_jsonl(tmp_path / "items.jsonl", rows)
    argv = _ingest_argv(tmp_path / "tiny", tmp_path, "--texts", str(table))
    argv += ["--index", "ivf-flat", "--target-recall", "0.9", "--tune-queries", "100"]
    with caplog.at_level("INFO"):
        assert main(argv) == 0
    assert "ivf-flat index IVF8,Flat — ivf-flat: requested" in caplog.text
    assert "gives recall@10" in caplog.text
    version_dir = tmp_path / "bundles" / "My-Shop" / "v1"
    capsys.readouterr()
    assert main(["verify", str(version_dir)]) == 0
    output = capsys.readouterr().out
    assert "my_shop: ivf-flat IVF8,Flat, nprobe=" in output
    assert "on 100 held-out queries (target 0.9, met)" in output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--index", "hnsw", "--factory", "Flat"], "not allowed with argument"),
        (["--on-disk"], "--on-disk goes with --index"),
        (["--target-recall", "0.9"], "--target-recall goes with --index"),
        (["--index", "hnsw", "--on-disk"], "on-disk inverted lists need an IVF index"),
        (["--index", "auto", "--on-disk"], "on-disk inverted lists need an IVF index"),
        (["--index", "hnsw", "--pq-m", "8"], "--pq-m goes with --index ivf-pq or auto"),
        (["--index", "flat", "--nlist", "8"], "nlist applies to IVF indexes"),
        (["--index", "auto", "--memory-budget", "lots"], "is not a size"),
        (["--index", "auto", "--target-recall", "1.5"], "1.5 is not in (0, 1]"),
    ],
)
def test_index_options_that_do_not_fit_are_usage_errors(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["build", "--variant", "v", "--name", "n", "--texts", "t.jsonl", *extra])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_an_index_too_big_for_the_corpus_is_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tiny_variant(tmp_path / "tiny")
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": str(i), "text": f"t {i}"} for i in range(50)])
    argv = _ingest_argv(tmp_path / "tiny", tmp_path, "--texts", str(table))
    assert main([*argv, "--index", "ivf-flat", "--nlist", "4"]) == 1
    assert "error: nlist=4 needs at least 39·4 = 156 rows to train" in capsys.readouterr().err
    assert not (tmp_path / "bundles" / "My-Shop" / "v1").exists()


def test_a_negative_thread_count_is_refused_before_anything_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "build", "--variant", str(tmp_path / "absent"), "--captions", str(tmp_path / "absent.csv"),
        "--name", "tiny", "--intra-op-threads", "-1",
    ]  # fmt: skip
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert "--intra-op-threads: -1 is negative" in capsys.readouterr().err
