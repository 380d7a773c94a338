"""Creating a live collection from plain values: empty (a served variant's dimension and build,
or the client's dimension), restored from a snapshot, or started from a served bundle
collection; what it starts from verified, and every refusal a domain error."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from formats.field_types import FieldType
from service.engine.collection.catalog import (
    Catalog,
    ServedCollection,
    ServedVariant,
    VariantEncoders,
)
from service.engine.collection.live_collections import LiveCollections
from service.engine.writes.collection_creation import (
    NewCollection,
    SnapshotSource,
    create_live_collection,
    served_names,
)
from service.exceptions import (
    BundleRejectedError,
    CollectionExistsError,
    InvalidQueryError,
    NotFoundError,
    VariantMismatchError,
    WritesUnavailableError,
)
from service.metrics import ServiceMetrics
from service.settings import Settings
from storage.live.operations import Upsert
from tests.fakes.fake_bundles import CAPTIONS, write_fake_bundle
from tests.fakes.fake_encoders import FAKE_DIM, FAKE_FINGERPRINT, FAKE_VARIANT, FakeTextEncoder
from tests.fakes.fake_faiss import served_with

BUNDLE, VERSION = "coco-captions", "20260101T000000Z"


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    return Settings(  # type: ignore[arg-type]
        collections_dir=tmp_path / "collections", bundles_root=tmp_path / "bundles", **overrides
    )


def _served_bundle(tmp_path: Path) -> ServedCollection:
    """The fake captions bundle, written under ``bundles`` (once) and served as
    ``coco-captions``."""
    if not (tmp_path / "bundles" / BUNDLE / VERSION).exists():
        write_fake_bundle(tmp_path / "bundles", BUNDLE, version=VERSION)
    vectors = np.eye(len(CAPTIONS), FAKE_DIM, dtype=np.float32)
    served = served_with(vectors, None, variant=FAKE_VARIANT)
    return dataclasses.replace(served, bundle=BUNDLE, bundle_version=VERSION)


def _catalog(tmp_path: Path, fingerprint: str = FAKE_FINGERPRINT) -> Catalog:
    """The fake variant (of build ``fingerprint``) serving the captions bundle."""
    encoders = VariantEncoders(text=FakeTextEncoder(fingerprint=fingerprint))
    variant = ServedVariant(FAKE_VARIANT, encoders, Path("."), is_default=True)
    return Catalog({FAKE_VARIANT: variant}, [_served_bundle(tmp_path)])


def _create(
    tmp_path: Path, *news: NewCollection, catalog: Catalog | None = None, **settings: object
) -> list[tuple[str, int, str | None, str | None, dict[str, FieldType], int]]:
    """Create ``news`` in order, in a fresh registry; each one's (name, dim, variant,
    fingerprint, fields, count)."""
    config = _settings(tmp_path, **settings)
    live = LiveCollections(config, ServiceMetrics())
    served = catalog or _catalog(tmp_path)

    async def run() -> list[tuple[str, int, str | None, str | None, dict[str, FieldType], int]]:
        try:
            made = []
            for new in news:
                entry = await create_live_collection(new, live, served, config)
                spec = entry.collection.spec
                made.append(
                    (
                        spec.name,
                        spec.dim,
                        spec.variant,
                        spec.variant_fingerprint,
                        dict(spec.fields),
                        entry.collection.view().count,
                    )
                )
                assert spec.created.endswith("Z")
            return made
        finally:
            await live.close()

    return asyncio.run(run())


def test_an_empty_collection_of_client_vectors_or_of_a_served_variant(tmp_path: Path) -> None:
    fields = {"n": FieldType.INTEGER}
    made = _create(
        tmp_path,
        NewCollection("vectors", dim=4, fields=fields),
        NewCollection("notes", variant=FAKE_VARIANT, fields=fields, index="IVF4,Flat"),
    )
    assert made == [
        ("vectors", 4, None, None, fields, 0),
        ("notes", FAKE_DIM, FAKE_VARIANT, FAKE_FINGERPRINT, fields, 0),
    ]
    reopened = LiveCollections(_settings(tmp_path), ServiceMetrics())
    assert reopened.open_all() == ["notes", "vectors"]
    assert reopened.require("notes").collection.spec.index == "IVF4,Flat"
    asyncio.run(reopened.close())


def test_a_served_collection_name_is_taken_bare_and_qualified(tmp_path: Path) -> None:
    assert served_names(_catalog(tmp_path)) == {"captions", f"{BUNDLE}:captions"}
    with pytest.raises(CollectionExistsError, match="'captions'"):
        _create(tmp_path, NewCollection("captions", dim=4))


def test_an_unknown_variant_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="unknown variant 'nope'"):
        _create(tmp_path, NewCollection("a", variant="nope"))


def test_more_fields_than_max_collection_fields_are_refused(tmp_path: Path) -> None:
    fields = {"a": FieldType.STRING, "b": FieldType.STRING}
    with pytest.raises(
        InvalidQueryError, match="fields: 2 fields, more than max_collection_fields=1"
    ):
        _create(tmp_path, NewCollection("a", dim=4, fields=fields), max_collection_fields=1)
    assert _create(tmp_path, NewCollection("a", dim=4, fields=fields), max_collection_fields=2)


@pytest.mark.parametrize(
    ("new", "problem"),
    [
        (NewCollection("a"), "exactly one of 'variant' and 'dim'"),
        (NewCollection("a", variant=FAKE_VARIANT, dim=4), "exactly one of 'variant' and 'dim'"),
        (
            NewCollection("a", from_snapshot=SnapshotSource("b", "v"), from_bundle="x:captions"),
            "at most one of",
        ),
        (NewCollection("a", dim=4, from_bundle=f"{BUNDLE}:captions"), "leave 'variant'"),
        (NewCollection("a", fields={"n": FieldType.INTEGER}, from_bundle="x:y"), "leave"),
        (NewCollection("a b", dim=4), "collection name 'a b' must be"),
        (NewCollection("a", dim=4, fields={"id": FieldType.STRING}), "id"),
    ],
)
def test_values_that_make_no_collection_are_refused(
    tmp_path: Path, new: NewCollection, problem: str
) -> None:
    with pytest.raises(InvalidQueryError, match=problem):
        _create(tmp_path, new)


def test_a_snapshot_restores_into_a_new_collection(tmp_path: Path) -> None:
    config = _settings(tmp_path)
    live = LiveCollections(config, ServiceMetrics())
    catalog = _catalog(tmp_path)
    fields = {"cat": FieldType.STRING}

    async def run() -> None:
        entry = await create_live_collection(
            NewCollection("things", dim=4, fields=fields), live, catalog, config
        )
        vectors = np.eye(4, dtype=np.float32)[:3]
        metadata = ({"cat": "a"}, {"cat": "b"}, {})
        entry.collection.stage(Upsert(("x", "y", "z"), vectors, metadata, (None, "t", None)))
        entry.collection.commit()
        snapshot = await live.snapshot("things")
        restored = await create_live_collection(
            NewCollection("restored", from_snapshot=SnapshotSource("things", snapshot.version)),
            live,
            catalog,
            config,
        )
        spec, view = restored.collection.spec, restored.collection.view()
        assert (spec.dim, spec.variant, dict(spec.fields)) == (4, None, fields)
        assert view.count == 3
        assert view.text(view.row_of("y") or 0) == "t"
        assert dict(view.metadata(view.row_of("x") or 0)) == {"cat": "a"}
        with pytest.raises(NotFoundError, match="no snapshot '20260101T000000000000Z'"):
            await create_live_collection(
                NewCollection(
                    "nope", from_snapshot=SnapshotSource("things", "20260101T000000000000Z")
                ),
                live,
                catalog,
                config,
            )
        await live.close()

    asyncio.run(run())


def test_a_served_bundle_collection_becomes_the_base(tmp_path: Path) -> None:
    made = _create(tmp_path, NewCollection("captions-live", from_bundle=f"{BUNDLE}:captions"))
    name, dim, variant, fingerprint, fields, count = made[0]
    assert (name, dim, variant, fingerprint, count) == (
        "captions-live",
        FAKE_DIM,
        FAKE_VARIANT,
        FAKE_FINGERPRINT,
        len(CAPTIONS),
    )
    assert fields == {
        "text": FieldType.STRING,
        "image_id": FieldType.INTEGER,
        "filename": FieldType.STRING,
        "sentid": FieldType.INTEGER,
    }


def test_an_unknown_bundle_collection_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="unknown bundle collection 'nope:captions'"):
        _create(tmp_path, NewCollection("a", from_bundle="nope:captions"))


def test_a_bundle_of_another_build_of_the_variant_is_refused(tmp_path: Path) -> None:
    other_build = _catalog(tmp_path, fingerprint="cd" * 32)
    with pytest.raises(VariantMismatchError, match="another build of variant 'fake-bow'"):
        _create(tmp_path, NewCollection("a", from_bundle=f"{BUNDLE}:captions"), catalog=other_build)


def test_a_bundle_whose_files_do_not_verify_is_rejected(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    version_dir = tmp_path / "bundles" / BUNDLE / VERSION
    data = next(path for path in sorted(version_dir.rglob("*")) if path.suffix == ".npy")
    data.write_bytes(data.read_bytes() + b"\0")
    with pytest.raises(BundleRejectedError, match="not a live collection's snapshot"):
        _create(tmp_path, NewCollection("a", from_bundle=f"{BUNDLE}:captions"), catalog=catalog)


def test_without_a_collections_folder_no_snapshot_is_found() -> None:
    settings = Settings()
    live = LiveCollections(settings, ServiceMetrics())
    catalog = Catalog({}, [])
    new = NewCollection("a", from_snapshot=SnapshotSource("b", "v"))
    with pytest.raises(WritesUnavailableError):
        asyncio.run(create_live_collection(new, live, catalog, settings))
