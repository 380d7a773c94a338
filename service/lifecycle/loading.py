"""Loading the catalog at start-up and reloading bundles while serving.

:func:`load_catalog` reads every bundle the settings name, builds their variants' encoders and
batchers, checks that they fit together and places each index (CPU or GPU);
:func:`reload_bundles` builds a new catalog serving new bundle versions beside the served one,
all or nothing. Both are blocking (they read and hash files, build ONNX sessions): run them off
the event loop.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import faiss

from encoders.variant import Tower
from service.engine.collection.catalog import (
    Catalog,
    ServedCollection,
    ServedVariant,
    StoreLoadError,
    VariantEncoders,
)
from service.engine.encode.batcher import Batcher, EncodeFunction, Input
from service.engine.rank.exact_scan import ExactScan
from service.engine.rank.search_params import on_disk
from service.exceptions import BundleRejectedError, NotFoundError, quoted
from service.lifecycle.batch_defaults import batch_limits
from service.lifecycle.index_placement import FaissPlacementError, place_index
from service.metrics import ServiceMetrics
from service.process_layout import ProcessLayout
from service.settings import Settings
from storage.layout import CURRENT_FILE, MANIFEST_FILE
from storage.manifest import BundleError
from storage.private_copies import PrivateCopies, PrivateCopyError
from storage.reader import LoadedBundle, load_bundle, resolve_current

logger = logging.getLogger("crisscross.service")

EncoderFactory = Callable[[Path, Settings], VariantEncoders]
"""Builds the encoders of the variant folder ``<variants_root>/<name>`` under the settings: one
per tower the variant has (``service.http.app.onnx_encoder_factory`` reads ``variant.json``)."""


def _served_variant(
    name: str,
    encoders: VariantEncoders,
    variant_dir: Path,
    is_default: bool,
    settings: Settings,
    metrics: ServiceMetrics,
) -> ServedVariant:
    """A variant with one batcher per tower present, each with the limits that suit where its
    encoder runs (:mod:`service.lifecycle.batch_defaults`)."""
    text, image = encoders.text, encoders.image

    def batcher(
        encode: EncodeFunction[Input], providers: Sequence[str], tower: Tower
    ) -> Batcher[Input]:
        limits = batch_limits(settings, providers)
        return Batcher(encode, limits, metrics, variant=name, tower=tower)

    return ServedVariant(
        name=name,
        encoders=encoders,
        variant_dir=variant_dir,
        is_default=is_default,
        created=_written_at(variant_dir),
        text_batcher=None if text is None else batcher(text.encode_texts, text.providers, "text"),
        image_batcher=(
            None if image is None else batcher(image.encode_images, image.providers, "image")
        ),
    )


def _written_at(variant_dir: Path) -> int:
    """``variant.json``'s modification time (Unix seconds); 0 where it cannot be read."""
    try:
        return int((variant_dir / "variant.json").stat().st_mtime)
    except OSError:
        return 0


def _apply_search_params(served: ServedCollection) -> None:
    """Set the manifest's faiss search parameters (``nprobe``, ``efSearch``) on the index."""
    params = served.collection.search_params
    if not params:
        return
    space = faiss.ParameterSpace()
    for key, value in sorted(params.items()):
        try:
            if isinstance(value, str):
                raise RuntimeError("only numeric parameters can be set")
            space.set_index_parameter(served.collection.index, key, float(value))
        except RuntimeError as exc:
            raise StoreLoadError(
                f"bundle {served.bundle}@{served.bundle_version}: collection {served.name!r} "
                f"search parameter {key}={value!r} does not apply to its index: {exc}"
            ) from exc


def _placed(
    served: ServedCollection, settings: Settings, scan: ExactScan | None
) -> ServedCollection:
    """``served`` with its index placed for serving by the ``faiss_device`` setting (a GPU
    clone where faiss can make one), and ``scan`` to scan its stored vectors on the CPU. Call
    after :func:`_apply_search_params`.

    Raises :class:`StoreLoadError` when ``faiss_device=gpu`` and the index cannot go there.
    """
    collection = served.collection
    try:
        placement = place_index(
            collection.index,
            settings.faiss_device,
            search_params=collection.search_params,
            on_disk=on_disk(collection),
        )
    except FaissPlacementError as exc:
        raise StoreLoadError(
            f"bundle {served.bundle}@{served.bundle_version}: collection {served.name!r}: {exc}"
        ) from exc
    logger.info(
        "collection %s of %s@%s (%s) searches on %s: %s",
        served.name,
        served.bundle,
        served.bundle_version,
        collection.factory,
        placement.device,
        placement.reason,
    )
    return dataclasses.replace(
        served,
        collection=dataclasses.replace(collection, index=placement.index),
        index_device=placement.device,
        scan=scan if placement.device == "cpu" else None,
    )


def _flat_scan(settings: Settings) -> ExactScan | None:
    """The scan of flat collections' stored vectors the ``flat_scan`` setting asks for (None:
    numpy's matrix product), on ``blas_threads`` threads."""
    if settings.flat_scan == "numpy":
        return None
    return ExactScan(threads=settings.blas_threads)


def _check_encoders_fit(
    variant_name: str, encoders: VariantEncoders, bundles: Sequence[tuple[str, LoadedBundle]]
) -> None:
    # VariantEncoders already holds both towers to one name, dim and fingerprint.
    encoder = encoders.primary
    if encoder.name != variant_name:
        raise StoreLoadError(
            f"the variant folder for {variant_name!r} holds variant {encoder.name!r}; "
            "bundles name variants by the name in their variant.json"
        )
    for bundle_name, bundle in bundles:
        if bundle.variant_fingerprint != encoder.fingerprint:
            raise StoreLoadError(
                f"bundle {bundle_name}@{bundle.version} was embedded with variant "
                f"{variant_name!r} fingerprint {bundle.variant_fingerprint}, but the variant "
                f"loaded from disk has fingerprint {encoder.fingerprint}: its files changed "
                "since the bundle was built; rebuild the bundle or restore the variant"
            )
        for collection in bundle.collections.values():
            if collection.dim != encoder.dim:
                raise StoreLoadError(
                    f"bundle {bundle_name}@{bundle.version} collection {collection.name!r} has "
                    f"dimension {collection.dim}, variant {variant_name!r} embeds {encoder.dim}"
                )


def with_fresh_batchers(catalog: Catalog, settings: Settings, metrics: ServiceMetrics) -> Catalog:
    """``catalog`` serving the same collections with new batchers for every variant (for an app
    whose previous lifespan closed the old ones; the encoders are reused)."""
    variants = {
        variant.name: _served_variant(
            variant.name,
            variant.encoders,
            variant.variant_dir,
            variant.is_default,
            settings,
            metrics,
        )
        for variant in catalog.variants
    }
    return Catalog(variants, catalog.collections)


def private_copies(settings: Settings, layout: ProcessLayout) -> PrivateCopies | None:
    """Where this process copies the bundle versions it maps (``bundle_mapping``
    ``private-copy``): ``private_copies_dir``, else the workers' run folder, else a fresh
    temporary folder of its own; None when it maps the bundles in place."""
    if settings.bundle_mapping == "in-place":
        return None
    if settings.private_copies_dir is not None:
        return PrivateCopies(settings.private_copies_dir)
    if layout.run_dir is not None:
        return PrivateCopies(layout.run_dir / "copies")
    return PrivateCopies.temporary()


def _load_version(
    version_dir: Path, settings: Settings, copies: PrivateCopies | None
) -> LoadedBundle:
    """Load one version folder: from its private copy when ``copies`` is given (the hashes are
    then verified on the copy, the very bytes mapped), else in place."""
    if copies is not None:
        try:
            version_dir = copies.adopt(version_dir)
        except PrivateCopyError as error:
            raise BundleError(str(error)) from error
    return load_bundle(version_dir, verify=settings.verify_bundle_hashes)


def served_sources(catalog: Catalog, settings: Settings) -> set[Path]:
    """The version folders under the bundles root that ``catalog`` serves."""
    return {
        settings.bundles_root / bundle / version
        for bundle, version in catalog.bundle_versions.items()
    }


def load_catalog(
    settings: Settings,
    encoder_factory: EncoderFactory,
    metrics: ServiceMetrics,
    copies: PrivateCopies | None = None,
    needed_variants: Mapping[str, str] | None = None,
    *,
    bundles_too: bool = True,
) -> Catalog:
    """Load every bundle the settings name, their variants' encoders (each with its batchers,
    counted in ``metrics``), and check they agree. ``needed_variants`` (name → fingerprint)
    are loaded too, bundle or not: the variants of collections whose rows other processes hold
    (a sharded collection's), which must have those fingerprints. Without ``bundles_too`` no
    bundle is read (the front door of sharded collections serves them alone).

    With ``copies``, every bundle version is read from its private copy (:func:`private_copies`).
    Blocking (reads files, hashes them, builds ONNX sessions). Raises ``SettingsError`` for
    missing paths, ``BundleError`` for a bad bundle, ``StoreLoadError`` when bundles and encoders
    do not fit together (fingerprint or dimension mismatch, unknown default variant, a collection
    served twice) — nothing is served in any of those cases.
    """
    started = time.perf_counter()
    bundles: list[tuple[str, LoadedBundle]] = []
    for bundle_dir in settings.bundle_dirs() if bundles_too else []:
        version_dir = resolve_current(bundle_dir)
        bundle = _load_version(version_dir, settings, copies)
        bundles.append((bundle_dir.name, bundle))
        logger.info(
            "loaded bundle %s version %s (variant %s, collections %s)",
            bundle_dir.name,
            bundle.version,
            bundle.variant_name,
            ", ".join(f"{c.name}={c.count}" for c in bundle.collections.values()),
        )

    by_variant: dict[str, list[tuple[str, LoadedBundle]]] = {}
    for bundle_name, bundle in bundles:
        by_variant.setdefault(bundle.variant_name, []).append((bundle_name, bundle))
    needed = dict(needed_variants or {})
    for variant_name in needed:
        by_variant.setdefault(variant_name, [])
    default_name = settings.default_variant
    if default_name is None and len(by_variant) == 1:
        default_name = next(iter(by_variant))
    if default_name is not None and default_name not in by_variant:
        raise StoreLoadError(
            f"default_variant {default_name!r} is used by no served bundle "
            f"(bundles use: {', '.join(sorted(by_variant))})"
        )

    variants: dict[str, ServedVariant] = {}
    for variant_name, variant_bundles in sorted(by_variant.items()):
        variant_dir = settings.variants_root / variant_name
        if not variant_dir.is_dir():
            raise StoreLoadError(
                f"bundles {[name for name, _ in variant_bundles]} need variant {variant_name!r} "
                f"but {str(variant_dir)!r} is not a folder (check CRISSCROSS_VARIANTS_ROOT)"
            )
        encoders = encoder_factory(variant_dir, settings)
        _check_encoders_fit(variant_name, encoders, variant_bundles)
        wanted = needed.get(variant_name)
        if wanted is not None and encoders.primary.fingerprint != wanted:
            raise StoreLoadError(
                f"the sharded collections were embedded with variant {variant_name!r} "
                f"fingerprint {wanted}, but the variant loaded from disk has fingerprint "
                f"{encoders.primary.fingerprint}"
            )
        variant = _served_variant(
            variant_name,
            encoders,
            variant_dir,
            variant_name == default_name,
            settings,
            metrics,
        )
        variants[variant_name] = variant
        logger.info(
            "loaded variant %s (towers %s, dim %d, precision %s, providers %s)",
            variant_name,
            ",".join(variant.towers),
            variant.dim,
            variant.precision,
            "; ".join(f"{t}={','.join(p)}" for t, p in variant.providers_by_tower.items()),
        )

    served = [
        ServedCollection(
            variant=bundle.variant_name,
            bundle=bundle_name,
            bundle_version=bundle.version,
            collection=collection,
        )
        for bundle_name, bundle in bundles
        for collection in bundle.collections.values()
    ]
    for one in served:
        _apply_search_params(one)
    scan = _flat_scan(settings)
    catalog = Catalog(variants, [_placed(one, settings, scan) for one in served])
    logger.info("catalog ready in %.0f ms", (time.perf_counter() - started) * 1000.0)
    return catalog


# -- reloading ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BundleChange:
    """What a reload did to one served bundle: the version before and after."""

    bundle: str
    previous_version: str
    version: str

    @property
    def changed(self) -> bool:
        """Whether another version serves now."""
        return self.version != self.previous_version


def _rejected(bundle: str, version: str, reason: str) -> BundleRejectedError:
    return BundleRejectedError(
        f"bundle {bundle}@{version} refused, the served version keeps serving: {reason}",
    )


def _reload_target(settings: Settings, bundle: str, version: str | None) -> Path:
    """The version folder a reload of ``bundle`` loads: ``version``, or what CURRENT names."""
    bundle_dir = settings.bundles_root / bundle
    if version is not None:
        version_dir = bundle_dir / version
        if not (version_dir / MANIFEST_FILE).is_file():
            raise NotFoundError(
                f"bundle {bundle!r} has no version {quoted(version)} under the bundles root",
            )
        return version_dir
    try:
        return resolve_current(bundle_dir)
    except BundleError as error:
        raise _rejected(bundle, CURRENT_FILE, str(error)) from error


def _load_replacement(
    catalog: Catalog,
    settings: Settings,
    bundle_name: str,
    version_dir: Path,
    copies: PrivateCopies | None,
) -> LoadedBundle:
    """Load and check one new bundle version against the catalog's loaded encoders."""
    version = version_dir.name
    try:
        bundle = _load_version(version_dir, settings, copies)
    except BundleError as error:
        raise _rejected(bundle_name, version, str(error)) from error
    if bundle.name != bundle_name:
        raise _rejected(bundle_name, version, f"its manifest names bundle {bundle.name!r}")
    variant = catalog.variant_named(bundle.variant_name)
    if variant is None:
        raise _rejected(
            bundle_name,
            version,
            f"it was embedded with variant {bundle.variant_name!r}, which this server has not "
            "loaded; restart the service to serve a new variant",
        )
    try:
        _check_encoders_fit(variant.name, variant.encoders, [(bundle_name, bundle)])
    except StoreLoadError as error:
        raise _rejected(bundle_name, version, str(error)) from error
    return bundle


def reload_bundles(
    catalog: Catalog,
    settings: Settings,
    *,
    bundle: str | None = None,
    version: str | None = None,
    copies: PrivateCopies | None = None,
) -> tuple[Catalog, list[BundleChange]]:
    """A catalog serving new bundle versions, and what changed; ``catalog`` itself is untouched.

    Without ``bundle`` every served bundle's ``CURRENT`` is read again; with it only that one's,
    or its ``version`` when given (which need not be CURRENT). Versions already served are not
    reloaded; when nothing changes ``catalog`` itself is returned. Each new version is verified
    (hashes, unless ``verify_bundle_hashes`` is off), must name its bundle, and must have been
    embedded by an encoder this catalog has loaded (same fingerprint and dimension). With
    ``copies``, new versions are read from their private copies; the caller releases those no
    longer served once it has swapped (:func:`served_sources`).

    All or nothing: raises :class:`NotFoundError` (unknown bundle or version) or
    :class:`BundleRejectedError` (a corrupt, mismatched or unloadable version) and loads nothing
    then.
    Blocking (reads and hashes files); call it off the event loop.
    """
    served = catalog.bundle_versions
    if bundle is not None and bundle not in served:
        raise NotFoundError(
            f"bundle {quoted(bundle)} is not served; served: {', '.join(served)}",
        )
    names = [bundle] if bundle is not None else list(served)
    targets = {name: _reload_target(settings, name, version) for name in names}
    changes = [BundleChange(name, served[name], path.name) for name, path in targets.items()]
    loaded = {
        change.bundle: _load_replacement(
            catalog, settings, change.bundle, targets[change.bundle], copies
        )
        for change in changes
        if change.changed
    }
    if not loaded:
        return catalog, changes
    fresh = [
        ServedCollection(
            variant=new.variant_name,
            bundle=name,
            bundle_version=new.version,
            collection=collection,
        )
        for name, new in loaded.items()
        for collection in new.collections.values()
    ]
    try:
        for one in fresh:
            _apply_search_params(one)
        scan = _flat_scan(settings)
        placed = [_placed(one, settings, scan) for one in fresh]
        kept = [served for served in catalog.collections if served.bundle not in loaded]
        reloaded = catalog.with_collections(kept + placed)
    except StoreLoadError as error:
        first = next(iter(loaded.values()))
        raise _rejected(first.name, first.version, str(error)) from error
    for name, new in loaded.items():
        logger.info("reloaded bundle %s: %s -> %s", name, served[name], new.version)
    return reloaded, changes
