"""The live index store: loaded bundles and encoders, and the operations routes need from them.

One store is immutable once built: a reload (:func:`reload_bundles`) builds a new store beside it
and the app swaps one reference, so a request that already holds a store finishes on it and each
answer comes wholly from one bundle version.

Search follows the tie rule of docs/contracts.md: score descending, then row ascending. faiss
orders equal scores arbitrarily and may cut a run of equal scores at ``k``, so the store fetches
past the cut until the last fetched score is strictly below the k-th kept one (or the whole
collection is fetched) and re-sorts with that key. COCO holds many duplicate captions, so exact
ties are common, not theoretical.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import faiss
import numpy as np

from encoders.protocols import ImageEncoderProtocol, TextEncoderProtocol
from encoders.variant import Tower
from index_builder.bundle import (
    CURRENT_FILE,
    MANIFEST_FILE,
    BundleError,
    LoadedBundle,
    LoadedCollection,
    load_bundle,
    resolve_current,
)
from service.errors import ErrorCode, ServiceError, quoted
from service.index_placement import FaissPlacementError, place_index
from service.settings import Settings

if TYPE_CHECKING:
    from PIL.Image import Image

logger = logging.getLogger("crisscross.service")


class StoreLoadError(RuntimeError):
    """Bundles or encoders cannot be served together; the message says what to fix."""


@dataclass(frozen=True)
class VariantEncoders:
    """The towers of one variant folder: a text encoder, an image encoder, or both.

    Both towers of one variant embed into one space, so they must agree on the variant's name,
    dimension, precision and fingerprint; the constructor raises :class:`StoreLoadError` when
    they do not, or when there is no tower at all.
    """

    text: TextEncoderProtocol | None = None
    image: ImageEncoderProtocol | None = None

    def __post_init__(self) -> None:
        if self.text is None and self.image is None:
            raise StoreLoadError("a variant needs at least one tower (text or image)")
        if self.text is not None and self.image is not None:
            for fact in ("name", "dim", "precision", "fingerprint"):
                text_value, image_value = getattr(self.text, fact), getattr(self.image, fact)
                if text_value != image_value:
                    raise StoreLoadError(
                        f"the text and image towers of variant {self.text.name!r} disagree on "
                        f"{fact}: {text_value!r} vs {image_value!r}"
                    )

    @property
    def present(self) -> list[tuple[Tower, TextEncoderProtocol | ImageEncoderProtocol]]:
        """``(tower, encoder)`` for each tower present, text first."""
        pairs: list[tuple[Tower, TextEncoderProtocol | ImageEncoderProtocol]] = []
        if self.text is not None:
            pairs.append(("text", self.text))
        if self.image is not None:
            pairs.append(("image", self.image))
        return pairs

    @property
    def primary(self) -> TextEncoderProtocol | ImageEncoderProtocol:
        """One of the encoders (text first); the facts shared by both towers come from it."""
        return self.present[0][1]


EncoderFactory = Callable[[Path, Settings], VariantEncoders]
"""Builds the encoders of the variant folder ``<variants_root>/<name>`` under the settings: one
per tower the variant has (``service.app.onnx_encoder_factory`` reads ``variant.json``)."""


@dataclass(frozen=True)
class ServedVariant:
    """A loaded encoder variant and the facts ``/v1/variants`` reports about it."""

    name: str
    encoders: VariantEncoders
    variant_dir: Path
    is_default: bool

    @property
    def towers(self) -> list[Tower]:
        """Towers the service can run for this variant: ``text``, ``image`` or both."""
        return [tower for tower, _ in self.encoders.present]

    @property
    def dim(self) -> int:
        """Embedding dimension d shared by the variant's towers."""
        return self.encoders.primary.dim

    @property
    def precision(self) -> str:
        """Weight precision of the variant: "fp32", "fp16" or "int8"."""
        return self.encoders.primary.precision

    @property
    def fingerprint(self) -> str:
        """SHA-256 hex of the variant's files (bundles record it)."""
        return self.encoders.primary.fingerprint

    @property
    def providers_by_tower(self) -> dict[str, list[str]]:
        """onnxruntime providers in use, per tower present (priority order)."""
        return {tower: list(encoder.providers) for tower, encoder in self.encoders.present}

    @property
    def providers(self) -> list[str]:
        """Providers in use by any tower, de-duplicated, text tower's first."""
        merged = [name for names in self.providers_by_tower.values() for name in names]
        return list(dict.fromkeys(merged))

    @property
    def max_tokens(self) -> int | None:
        """The text tower's truncation length in tokens; None without a text tower."""
        return self.encoders.text.max_tokens if self.encoders.text is not None else None

    @property
    def image_input_size(self) -> tuple[int, int] | None:
        """(height, width) in pixels of the image tower's input; None without an image tower."""
        return self.encoders.image.input_size if self.encoders.image is not None else None


@dataclass(frozen=True)
class ServedCollection:
    """One searchable collection: the bundle it came from and the variant that embedded it."""

    variant: str
    bundle: str
    bundle_version: str
    collection: LoadedCollection
    index_device: str = "cpu"
    """Where faiss searches this collection: ``"cpu"`` or ``"gpu"`` (see ``faiss_device``)."""

    @property
    def name(self) -> str:
        """Collection name, e.g. ``captions``."""
        return self.collection.name


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result: ``rank`` is 1-based, ``score`` the inner product (cosine)."""

    rank: int
    row: int
    item_id: str
    score: float
    metadata: Mapping[str, object]


class LiveIndexStore:
    """Loaded variants and collections, keyed by ``(variant, collection)``."""

    def __init__(
        self,
        variants: Mapping[str, ServedVariant],
        collections: Iterable[ServedCollection],
    ) -> None:
        self._variants = dict(variants)
        self._collections: dict[tuple[str, str], ServedCollection] = {}
        for served in collections:
            key = (served.variant, served.name)
            if key in self._collections:
                other = self._collections[key]
                raise StoreLoadError(
                    f"collection {served.name!r} of variant {served.variant!r} is in two bundles: "
                    f"{other.bundle}@{other.bundle_version} and {served.bundle}@"
                    f"{served.bundle_version}; serve only one of them (CRISSCROSS_BUNDLES)"
                )
            if served.variant not in self._variants:
                raise StoreLoadError(f"{served.name!r} needs unloaded variant {served.variant!r}")
            self._collections[key] = served
        defaults = [variant.name for variant in self._variants.values() if variant.is_default]
        if len(defaults) > 1:
            raise StoreLoadError(f"several default variants: {defaults}")
        self._default_variant = defaults[0] if defaults else None

    # -- what is loaded -------------------------------------------------------------------------

    @property
    def variants(self) -> list[ServedVariant]:
        """Loaded variants, sorted by name."""
        return [self._variants[name] for name in sorted(self._variants)]

    @property
    def collections(self) -> list[ServedCollection]:
        """Served collections, sorted by (variant, collection)."""
        return [self._collections[key] for key in sorted(self._collections)]

    @property
    def bundle_versions(self) -> dict[str, str]:
        """Served bundle name → the version being served, sorted by name."""
        versions = {served.bundle: served.bundle_version for served in self._collections.values()}
        return dict(sorted(versions.items()))

    def bundle_versions_of(self, variant: str) -> dict[str, str]:
        """Bundle name → served version, for the bundles embedded by ``variant``, by name."""
        versions = {
            served.bundle: served.bundle_version
            for served in self._collections.values()
            if served.variant == variant
        }
        return dict(sorted(versions.items()))

    def with_collections(self, collections: Iterable[ServedCollection]) -> LiveIndexStore:
        """A new store with the same variants serving ``collections`` (this one is unchanged).

        Raises :class:`StoreLoadError` as the constructor does.
        """
        return LiveIndexStore(self._variants, collections)

    def variant_named(self, name: str) -> ServedVariant | None:
        """The loaded variant called ``name``, or None."""
        return self._variants.get(name)

    def resolve_variant(self, name: str | None) -> ServedVariant:
        """The variant a request names, or the default one when it names none.

        Raises ``ServiceError`` not_found for an unknown name, invalid_input when no name is given
        and several variants are loaded without a default.
        """
        if name is None:
            if self._default_variant is None:
                raise ServiceError(
                    ErrorCode.INVALID_INPUT,
                    "several variants are loaded and none is the default: name one in 'variant' "
                    f"({', '.join(sorted(self._variants))})",
                )
            return self._variants[self._default_variant]
        variant = self._variants.get(name)
        if variant is None:
            raise ServiceError(
                ErrorCode.NOT_FOUND,
                f"unknown variant {quoted(name)}; loaded: {', '.join(sorted(self._variants))}",
            )
        return variant

    def collection(self, variant: ServedVariant, name: str) -> ServedCollection:
        """The collection ``name`` embedded by ``variant``; ``ServiceError`` not_found if none."""
        served = self._collections.get((variant.name, name))
        if served is None:
            known = sorted(c for v, c in self._collections if v == variant.name)
            raise ServiceError(
                ErrorCode.NOT_FOUND,
                f"unknown collection {quoted(name)} for variant {variant.name!r}; "
                f"served: {', '.join(known)}",
            )
        return served

    def require_tower(self, variant: ServedVariant, tower: Tower, where: str) -> None:
        """Raise ``ServiceError`` invalid_input naming ``tower`` when ``variant`` lacks it (a text
        side needs a text tower, an image side an image tower); the message names the loaded
        variants that have it. ``where`` locates the side in the request (``query.image``)."""
        if tower in variant.towers:
            return
        having = [other.name for other in self.variants if tower in other.towers]
        options = (
            f"variants with one: {', '.join(having)}"
            if having
            else f"no loaded variant has a {tower} tower"
        )
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{where}: variant {variant.name!r} has no {tower} tower (its towers: "
            f"{', '.join(variant.towers)}); {options}",
        )

    def row_of(self, served: ServedCollection, item_id: str) -> int:
        """Row number of ``item_id`` in ``served``; ``ServiceError`` not_found if absent."""
        row = served.collection.row_of.get(item_id)
        if row is None:
            raise ServiceError(
                ErrorCode.NOT_FOUND,
                f"unknown item {quoted(item_id)} in collection {served.name!r}",
            )
        return row

    # -- the work ---------------------------------------------------------------------------------

    @staticmethod
    def encode_texts(variant: ServedVariant, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in one encoder call: float32 ``[len(texts), dim]``, L2-normalised rows.

        Blocking (runs the ONNX session); call it off the event loop. A text whose embedding is
        not finite (an encoder cannot pool zero tokens, say) is refused as invalid_input so that
        it never reaches faiss or the JSON encoder. Raises invalid_input when the variant has no
        text tower.
        """
        encoder = variant.encoders.text
        if encoder is None:
            raise ServiceError(
                ErrorCode.INVALID_INPUT, f"variant {variant.name!r} has no text tower"
            )
        return checked_embeddings(
            variant.name, "text", encoder.encode_texts(texts), len(texts), encoder.dim
        )

    @staticmethod
    def encode_images(variant: ServedVariant, images: Sequence[Image]) -> np.ndarray:
        """Embed decoded RGB ``images`` in one encoder call: float32 ``[len(images), dim]``,
        L2-normalised rows.

        Blocking (preprocesses pixels and runs the ONNX session); call it off the event loop.
        A non-finite embedding is refused as invalid_input, like a text's. Raises invalid_input
        when the variant has no image tower.
        """
        encoder = variant.encoders.image
        if encoder is None:
            raise ServiceError(
                ErrorCode.INVALID_INPUT, f"variant {variant.name!r} has no image tower"
            )
        return checked_embeddings(
            variant.name, "image", encoder.encode_images(images), len(images), encoder.dim
        )

    @staticmethod
    def stored_vector(served: ServedCollection, row: int) -> np.ndarray:
        """The bundle's stored embedding of ``row``: float32 ``[dim]`` (a read-only view)."""
        vector: np.ndarray = served.collection.vectors[row]
        return vector

    @staticmethod
    def search(
        served: ServedCollection,
        query: np.ndarray,
        k: int,
        exclude: Collection[str] = (),
    ) -> list[SearchHit]:
        """The ``k`` best rows of ``served`` for ``query`` (float32 ``[dim]``), ids in
        ``exclude`` left out (unknown ids are ignored).

        ``k`` larger than what the collection holds (after exclusion) is clamped: the result then
        has every remaining row. Ordered by score descending, then row ascending. Blocking (runs
        faiss); call it off the event loop.
        """
        collection = served.collection
        vector = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        if vector.shape[1] != collection.dim:
            raise RuntimeError(
                f"query has dimension {vector.shape[1]}, collection {collection.name!r} "
                f"has {collection.dim}"
            )
        # faiss answers NaN queries with garbage rows rather than an error.
        if not np.isfinite(vector).all():
            raise ServiceError(ErrorCode.INVALID_INPUT, "the query vector is not finite")
        excluded_rows = np.array(
            sorted({collection.row_of[item] for item in exclude if item in collection.row_of}),
            dtype=np.int64,
        )
        wanted = min(k, collection.count - len(excluded_rows))
        if wanted <= 0:
            return []
        # One row beyond the cut shows whether the last kept score ties with an unfetched row.
        fetch = min(collection.count, wanted + len(excluded_rows) + 1)
        while True:
            scores, rows = collection.index.search(vector, fetch)
            valid = rows[0] >= 0
            scores_found = scores[0][valid]
            rows_found = rows[0][valid].astype(np.int64)
            keep = ~np.isin(rows_found, excluded_rows)
            kept_scores, kept_rows = scores_found[keep], rows_found[keep]
            order = np.lexsort((kept_rows, -kept_scores))[:wanted]
            kept_scores, kept_rows = kept_scores[order], kept_rows[order]
            exhausted = fetch >= collection.count or len(rows_found) < fetch
            if exhausted or (len(kept_rows) == wanted and scores_found.min() < kept_scores[-1]):
                break
            # A run of equal scores may cross the cut: rows with a lower number may be unfetched.
            fetch = min(collection.count, fetch * 2)
        ids, metadata = collection.ids, collection.metadata
        return [
            SearchHit(rank=rank, row=row, item_id=ids[row], score=score, metadata=metadata[row])
            for rank, (score, row) in enumerate(
                zip(kept_scores.tolist(), kept_rows.tolist(), strict=True), start=1
            )
        ]


def checked_embeddings(
    variant: str, kind: str, output: np.ndarray, count: int, dim: int
) -> np.ndarray:
    """An encoder's output as float32 ``[count, dim]``; RuntimeError on a wrong shape (a bug),
    ServiceError invalid_input naming the first input (``text #i``, ``image #i``) whose row is
    not finite."""
    vectors = np.ascontiguousarray(output, dtype=np.float32)
    if vectors.shape != (count, dim):
        raise RuntimeError(
            f"encoder {variant!r} returned shape {vectors.shape} for {count} {kind}s, "
            f"expected ({count}, {dim})"
        )
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{kind} #{bad} cannot be embedded: variant {variant!r} gives no finite vector",
        )
    return vectors


def normalised_query_vector(values: Sequence[float], dim: int, where: str) -> np.ndarray:
    """A client's own embedding as a float32 ``[dim]`` unit vector.

    Raises ``ServiceError`` invalid_input when it has not exactly ``dim`` numbers, holds NaN or
    an infinity, or has zero norm (nothing to compare by angle). The norm is taken after
    scaling by the largest magnitude, so huge (1e300) or tiny (1e-320) values neither overflow
    nor underflow.
    """
    if len(values) != dim:
        raise ServiceError(
            ErrorCode.INVALID_INPUT,
            f"{where}: {len(values)} numbers, but the variant's embeddings have dimension {dim}",
        )
    vector = np.asarray(values, dtype=np.float64)
    if not np.isfinite(vector).all():
        raise ServiceError(ErrorCode.INVALID_INPUT, f"{where}: every number must be finite")
    scale = float(np.abs(vector).max(initial=0.0))
    if scale == 0.0:
        raise ServiceError(
            ErrorCode.INVALID_INPUT, f"{where}: the vector has zero norm; it has no direction"
        )
    scaled = vector / scale
    unit: np.ndarray = (scaled / np.linalg.norm(scaled)).astype(np.float32)
    return unit


# -- loading --------------------------------------------------------------------------------------


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


def _placed(served: ServedCollection, settings: Settings) -> ServedCollection:
    """``served`` with its index placed for serving by the ``faiss_device`` setting (a GPU
    clone where faiss can make one). Call after :func:`_apply_search_params`.

    Raises :class:`StoreLoadError` when ``faiss_device=gpu`` and the index cannot go there.
    """
    collection = served.collection
    try:
        placement = place_index(
            collection.index, settings.faiss_device, search_params=collection.search_params
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
    )


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


def load_store(settings: Settings, encoder_factory: EncoderFactory) -> LiveIndexStore:
    """Load every bundle the settings name, their variants' encoders, and check they agree.

    Blocking (reads files, hashes them, builds ONNX sessions). Raises ``SettingsError`` for
    missing paths, ``BundleError`` for a bad bundle, ``StoreLoadError`` when bundles and encoders
    do not fit together (fingerprint or dimension mismatch, unknown default variant, a collection
    served twice) — nothing is served in any of those cases.
    """
    started = time.perf_counter()
    bundles: list[tuple[str, LoadedBundle]] = []
    for bundle_dir in settings.bundle_dirs():
        version_dir = resolve_current(bundle_dir)
        bundle = load_bundle(version_dir, verify=settings.verify_bundle_hashes)
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
        variant = ServedVariant(
            name=variant_name,
            encoders=encoders,
            variant_dir=variant_dir,
            is_default=variant_name == default_name,
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
    store = LiveIndexStore(variants, [_placed(one, settings) for one in served])
    logger.info("store ready in %.0f ms", (time.perf_counter() - started) * 1000.0)
    return store


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


def _rejected(bundle: str, version: str, reason: str) -> ServiceError:
    return ServiceError(
        ErrorCode.BUNDLE_REJECTED,
        f"bundle {bundle}@{version} refused, the served version keeps serving: {reason}",
    )


def _reload_target(settings: Settings, bundle: str, version: str | None) -> Path:
    """The version folder a reload of ``bundle`` loads: ``version``, or what CURRENT names."""
    bundle_dir = settings.bundles_root / bundle
    if version is not None:
        version_dir = bundle_dir / version
        if not (version_dir / MANIFEST_FILE).is_file():
            raise ServiceError(
                ErrorCode.NOT_FOUND,
                f"bundle {bundle!r} has no version {quoted(version)} under the bundles root",
            )
        return version_dir
    try:
        return resolve_current(bundle_dir)
    except BundleError as error:
        raise _rejected(bundle, CURRENT_FILE, str(error)) from error


def _load_replacement(
    store: LiveIndexStore, settings: Settings, bundle_name: str, version_dir: Path
) -> LoadedBundle:
    """Load and check one new bundle version against the store's loaded encoders."""
    version = version_dir.name
    try:
        bundle = load_bundle(version_dir, verify=settings.verify_bundle_hashes)
    except BundleError as error:
        raise _rejected(bundle_name, version, str(error)) from error
    if bundle.name != bundle_name:
        raise _rejected(bundle_name, version, f"its manifest names bundle {bundle.name!r}")
    variant = store.variant_named(bundle.variant_name)
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
    store: LiveIndexStore,
    settings: Settings,
    *,
    bundle: str | None = None,
    version: str | None = None,
) -> tuple[LiveIndexStore, list[BundleChange]]:
    """A store serving new bundle versions, and what changed; ``store`` itself is untouched.

    Without ``bundle`` every served bundle's ``CURRENT`` is read again; with it only that one's,
    or its ``version`` when given (which need not be CURRENT). Versions already served are not
    reloaded; when nothing changes ``store`` itself is returned. Each new version is verified
    (hashes, unless ``verify_bundle_hashes`` is off), must name its bundle, and must have been
    embedded by an encoder this store has loaded (same fingerprint and dimension).

    All or nothing: raises ``ServiceError`` not_found (unknown bundle or version) or
    bundle_rejected (a corrupt, mismatched or unloadable version) and loads nothing then.
    Blocking (reads and hashes files); call it off the event loop.
    """
    served = store.bundle_versions
    if bundle is not None and bundle not in served:
        raise ServiceError(
            ErrorCode.NOT_FOUND,
            f"bundle {quoted(bundle)} is not served; served: {', '.join(served)}",
        )
    names = [bundle] if bundle is not None else list(served)
    targets = {name: _reload_target(settings, name, version) for name in names}
    changes = [BundleChange(name, served[name], path.name) for name, path in targets.items()]
    loaded = {
        change.bundle: _load_replacement(store, settings, change.bundle, targets[change.bundle])
        for change in changes
        if change.changed
    }
    if not loaded:
        return store, changes
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
        placed = [_placed(one, settings) for one in fresh]
        kept = [served for served in store.collections if served.bundle not in loaded]
        reloaded = store.with_collections(kept + placed)
    except StoreLoadError as error:
        first = next(iter(loaded.values()))
        raise _rejected(first.name, first.version, str(error)) from error
    for name, new in loaded.items():
        logger.info("reloaded bundle %s: %s -> %s", name, served[name], new.version)
    return reloaded, changes


__all__ = [
    "BundleChange",
    "BundleError",
    "EncoderFactory",
    "LiveIndexStore",
    "SearchHit",
    "ServedCollection",
    "ServedVariant",
    "StoreLoadError",
    "VariantEncoders",
    "load_store",
    "normalised_query_vector",
    "reload_bundles",
]
