"""variant.json: schema validation, round trip, fingerprint and file verification."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from encoders.variant import (
    MANIFEST_FILENAME,
    ImageTower,
    ParityReport,
    SourceModel,
    TextTower,
    VariantError,
    VariantManifest,
    load_variant_manifest,
    verify_variant_files,
    write_variant_manifest,
)
from formats.hashing import sha256_files

ONNX_BYTES = b"pretend onnx graph"
TOKENIZER_BYTES = b'{"pretend": "tokenizer"}'


def manifest_fields(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "name": "demo-variant",
        "towers": ["text"],
        "dim": 384,
        "normalised": True,
        "precision": "fp32",
        "text": {"max_tokens": 256},
        "files": {
            "text.onnx": hashlib.sha256(ONNX_BYTES).hexdigest(),
            "tokenizer.json": hashlib.sha256(TOKENIZER_BYTES).hexdigest(),
        },
        "source_model": {"base_model": "org/model", "package": "pkg", "package_version": "1.0"},
        "created_at": "2026-11-22T10:15:00Z",
    }
    return fields | overrides


@pytest.fixture
def variant_dir(tmp_path: Path) -> Path:
    """A folder with the two files and a manifest whose hashes match them."""
    (tmp_path / "text.onnx").write_bytes(ONNX_BYTES)
    (tmp_path / "tokenizer.json").write_bytes(TOKENIZER_BYTES)
    write_variant_manifest(tmp_path, VariantManifest.model_validate(manifest_fields()))
    return tmp_path


def test_round_trip_preserves_every_field(tmp_path: Path) -> None:
    manifest = VariantManifest(
        name="minilm-l6-v2",
        towers=["text"],
        dim=384,
        normalised=True,
        precision="fp16",
        text=TextTower(max_tokens=256),
        files={"text.onnx": "a" * 64, "tokenizer.json": "b" * 64},
        source_model=SourceModel(base_model="org/model", exporter="torch"),
        parity=ParityReport(
            reference="ref",
            inputs=118,
            min_cosine=0.9995,
            mean_cosine=0.9999,
            max_abs_diff=1e-4,
            threshold=0.999,
            worst_input="'x'",
        ),
        created_at=datetime(2026, 11, 22, 10, 15, tzinfo=UTC),
    )
    path = write_variant_manifest(tmp_path, manifest)
    assert path == tmp_path / MANIFEST_FILENAME
    assert load_variant_manifest(tmp_path) == manifest
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw["text"] == {
        "onnx_file": "text.onnx",
        "tokenizer_file": "tokenizer.json",
        "max_tokens": 256,
        "truncation": "longest_first, right",
        "padding": "dynamic",
    }
    assert raw["image"] is None
    assert raw["schema_version"] == 1
    assert "fingerprint" not in raw  # derived, never stored
    assert path.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_FILENAME]  # no temp file left


def test_image_section_is_optional_and_shaped_for_preprocessing() -> None:
    image = {
        "height": 224,
        "width": 224,
        "resize": "shorter_side",
        "resize_to": 224,
        "mean": [0.48, 0.46, 0.41],
        "std": [0.27, 0.26, 0.28],
    }
    files = manifest_fields()["files"] | {"image.onnx": "c" * 64}
    manifest = VariantManifest.model_validate(
        manifest_fields(towers=["text", "image"], image=image, files=files)
    )
    assert manifest.image == ImageTower.model_validate(image)
    assert manifest.image is not None
    assert manifest.image.crop == "center"
    assert manifest.referenced_files() == ["text.onnx", "tokenizer.json", "image.onnx"]


def test_fingerprint_is_sha256_of_sorted_name_hash_lines() -> None:
    manifest = VariantManifest.model_validate(manifest_fields())
    lines = "".join(f"{name}:{digest}\n" for name, digest in sorted(manifest.files.items()))
    assert manifest.fingerprint == hashlib.sha256(lines.encode()).hexdigest()


def test_fingerprint_ignores_order_and_metadata_but_not_contents() -> None:
    base = VariantManifest.model_validate(manifest_fields())
    reordered = VariantManifest.model_validate(
        manifest_fields(files=dict(reversed(list(base.files.items()))), name="renamed")
    )
    assert reordered.fingerprint == base.fingerprint
    changed = VariantManifest.model_validate(
        manifest_fields(files=base.files | {"text.onnx": "0" * 64})
    )
    assert changed.fingerprint != base.fingerprint


def test_verify_accepts_matching_files(variant_dir: Path) -> None:
    verify_variant_files(variant_dir)


def test_verify_names_a_missing_file(variant_dir: Path) -> None:
    (variant_dir / "tokenizer.json").unlink()
    with pytest.raises(VariantError, match=r"tokenizer\.json: missing"):
        verify_variant_files(variant_dir)


def test_verify_names_an_altered_file(variant_dir: Path) -> None:
    (variant_dir / "text.onnx").write_bytes(ONNX_BYTES + b"!")
    with pytest.raises(VariantError, match=r"text\.onnx: sha256 .* but the manifest records"):
        verify_variant_files(variant_dir)


def test_verify_reports_every_problem_at_once(variant_dir: Path) -> None:
    (variant_dir / "text.onnx").write_bytes(b"other")
    (variant_dir / "tokenizer.json").unlink()
    with pytest.raises(VariantError, match=r"text\.onnx: sha256.*; tokenizer\.json: missing"):
        verify_variant_files(variant_dir)


def test_verify_against_a_given_manifest(variant_dir: Path) -> None:
    other = VariantManifest.model_validate(
        manifest_fields(files=sha256_files(variant_dir, ["text.onnx", "tokenizer.json"]))
    )
    verify_variant_files(variant_dir, other)


def test_loading_a_folder_without_manifest_is_a_variant_error(tmp_path: Path) -> None:
    with pytest.raises(VariantError, match="not a variant"):
        load_variant_manifest(tmp_path)


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        json.dumps(manifest_fields(surprise=1)),
        json.dumps(manifest_fields(schema_version=2)),
        json.dumps({"name": "only-a-name"}),
    ],
)
def test_loading_a_malformed_manifest_is_a_variant_error(tmp_path: Path, content: str) -> None:
    (tmp_path / MANIFEST_FILENAME).write_text(content, encoding="utf-8")
    with pytest.raises(VariantError, match="invalid"):
        load_variant_manifest(tmp_path)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"text": None}, "iff its section is present"),
        ({"towers": ["text", "text"]}, "must not repeat"),
        ({"towers": []}, "at least 1"),
        ({"files": {"text.onnx": "a" * 64}}, "no hash in 'files'"),
        ({"files": {"text.onnx": "A" * 64, "tokenizer.json": "b" * 64}}, "pattern"),
        ({"files": {"../text.onnx": "a" * 64}}, "pattern"),
        ({"files": manifest_fields()["files"] | {"variant.json": "a" * 64}}, "own hash"),
        ({"dim": 0}, "greater than 0"),
        ({"precision": "fp8"}, "fp32"),
        ({"name": "has space"}, "pattern"),
        ({"created_at": "2026-11-22T10:15:00"}, "timezone"),
        ({"text": {"max_tokens": 256, "padding": "fixed"}}, "dynamic"),
    ],
)
def test_inconsistent_manifests_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        VariantManifest.model_validate(manifest_fields(**overrides))


def test_manifest_is_frozen() -> None:
    manifest = VariantManifest.model_validate(manifest_fields())
    with pytest.raises(ValidationError):
        manifest.dim = 3


def test_matryoshka_dims_are_written_only_where_declared(variant_dir: Path) -> None:
    manifest = load_variant_manifest(variant_dir)
    assert manifest.matryoshka_dims is None
    write_variant_manifest(variant_dir, manifest)
    assert "matryoshka_dims" not in json.loads((variant_dir / "variant.json").read_text())
    cut = manifest.model_copy(update={"matryoshka_dims": [2]})
    write_variant_manifest(variant_dir, cut)
    assert load_variant_manifest(variant_dir).matryoshka_dims == [2]


@pytest.mark.parametrize("cuts", [[4], [8], [2, 2]], ids=["the dim", "over the dim", "twice"])
def test_matryoshka_dims_must_be_distinct_and_below_dim(cuts: list[int]) -> None:
    with pytest.raises(ValidationError, match="matryoshka_dims"):
        VariantManifest.model_validate(manifest_fields(dim=4, matryoshka_dims=cuts))
