"""The live catalog: the variants and collections one service serves, and the lookups requests
need from them (a variant by name or the default, a collection, an item's row and stored vector,
a tower).

Collections are found by name: each has a unique qualified name ``<bundle>:<collection>``
(``coco-captions:captions``), and a bare name (``captions``) finds the one served collection of
that name that can answer the request (:meth:`Catalog.locate`); when several can, the request
is ambiguous and the error lists the qualified names to choose from.

A catalog is immutable once built: a reload (:func:`service.lifecycle.loading.reload_bundles`)
builds a new one beside it and the app swaps one reference, so a request that already holds a
catalog finishes on it and each answer comes wholly from one bundle version. Each served variant
owns its encoders and their batchers; a reload keeps the variants (and so the batchers) and swaps
the collections.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from encoders.protocols import ImageEncoderProtocol, TextEncoderProtocol
from encoders.variant import Tower
from formats.field_types import with_article
from service.engine.encode.batcher import Batcher
from service.engine.rank.exact_scan import ExactScan
from service.engine.rank.lexical_index import LexicalIndexes
from service.exceptions import (
    AmbiguousNameError,
    NotFoundError,
    TowerMissingError,
    VariantMismatchError,
    quoted,
)
from storage.reader import LoadedCollection

if TYPE_CHECKING:
    from PIL.Image import Image


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


@dataclass(frozen=True)
class ServedVariant:
    """A loaded encoder variant and the facts ``/v1/variants`` reports about it."""

    name: str
    encoders: VariantEncoders
    variant_dir: Path
    is_default: bool
    text_batcher: Batcher[str] | None = None
    """Micro-batches the text tower's calls across requests (None without a text tower)."""
    image_batcher: Batcher[Image] | None = None
    """Micro-batches the image tower's calls across requests (None without an image tower)."""
    created: int = 0
    """When the variant's files were written (``variant.json``'s modification time, Unix
    seconds); 0 where unknown."""

    def batcher(self, tower: Tower) -> Batcher[Any]:
        """The batcher of ``tower``; :class:`TowerMissingError` when the variant lacks the tower
        (callers check towers first with :meth:`Catalog.require_tower`)."""
        batcher = self.text_batcher if tower == "text" else self.image_batcher
        if batcher is None:
            raise TowerMissingError(f"variant {self.name!r} has no {tower} tower")
        return batcher

    @property
    def batchers(self) -> list[Batcher[Any]]:
        """The batchers of the towers present, text first."""
        return list(self.batchers_by_tower.values())

    @property
    def batchers_by_tower(self) -> dict[Tower, Batcher[Any]]:
        """The batcher of each tower present, text first."""
        present: tuple[tuple[Tower, Batcher[Any] | None], ...] = (
            ("text", self.text_batcher),
            ("image", self.image_batcher),
        )
        return {tower: batcher for tower, batcher in present if batcher is not None}

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
    def matryoshka_dims(self) -> tuple[int, ...]:
        """Dimensions below :attr:`dim` the variant may be cut to (its towers agree on them
        through the shared ``variant.json``); empty where a cut means nothing."""
        return tuple(self.encoders.primary.matryoshka_dims)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens the text tower feeds its model for each of ``texts``;
        :class:`TowerMissingError` without a text tower."""
        if self.encoders.text is None:
            raise TowerMissingError(f"variant {self.name!r} has no text tower")
        return self.encoders.text.count_tokens(texts)

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
    scan: ExactScan | None = None
    """The onnxruntime scan that searches a CPU flat collection's stored vectors (None: numpy's
    matrix product does; see :mod:`service.engine.rank.exact_scan`)."""
    lexical: LexicalIndexes = field(default_factory=LexicalIndexes, compare=False, repr=False)
    """The collection's keyword indexes, made on first use (:mod:`service.engine.query.levers`)."""

    @property
    def name(self) -> str:
        """Collection name within its bundle, e.g. ``captions``."""
        return self.collection.name

    @property
    def qualified_name(self) -> str:
        """The name unique in the service: ``<bundle>:<collection>``."""
        return f"{self.bundle}{QUALIFIER}{self.name}"

    def described(self) -> str:
        """``coco-captions:captions (variant minilm-l6-v2)``, for error messages."""
        return f"{self.qualified_name} (variant {self.variant})"


QUALIFIER = ":"
"""Separates the bundle from the collection in a qualified collection name."""

Fits = Callable[[ServedVariant], bool]
"""Whether a variant can answer a request (has the tower its query needs, say)."""


class Catalog:
    """Loaded variants and collections, keyed by qualified collection name."""

    def __init__(
        self,
        variants: Mapping[str, ServedVariant],
        collections: Iterable[ServedCollection],
    ) -> None:
        self._variants = dict(variants)
        self._collections: dict[str, ServedCollection] = {}
        for served in collections:
            key = served.qualified_name
            if key in self._collections:
                raise StoreLoadError(f"collection {key!r} is loaded twice")
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
        """Served collections, sorted by qualified name."""
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

    def with_collections(self, collections: Iterable[ServedCollection]) -> Catalog:
        """A new store with the same variants serving ``collections`` (this one is unchanged).

        Raises :class:`StoreLoadError` as the constructor does.
        """
        return Catalog(self._variants, collections)

    def variant_named(self, name: str) -> ServedVariant | None:
        """The loaded variant called ``name``, or None."""
        return self._variants.get(name)

    def resolve_variant(self, name: str | None) -> ServedVariant:
        """The variant a request names, or the default one when it names none.

        Raises :class:`NotFoundError` for an unknown name, :class:`AmbiguousNameError` when no
        name is given and several variants are loaded without a default.
        """
        if name is None:
            if self._default_variant is None:
                raise AmbiguousNameError(
                    "several variants are loaded and none is the default: name one in 'variant' "
                    f"({', '.join(sorted(self._variants))})",
                    param="variant",
                )
            return self._variants[self._default_variant]
        variant = self._variants.get(name)
        if variant is None:
            raise NotFoundError(
                f"unknown variant {quoted(name)}; loaded: {', '.join(sorted(self._variants))}",
                param="variant",
            )
        return variant

    def resolve_variant_for(self, name: str | None, fits: Fits) -> ServedVariant:
        """:meth:`resolve_variant`, except that a request naming no variant, where there is no
        default, gets the one loaded variant that ``fits`` it (the only one with the tower its
        inputs need, say); when several or none fit, the refusal of :meth:`resolve_variant`."""
        if name is None and self._default_variant is None:
            fitting = [variant for variant in self.variants if fits(variant)]
            if len(fitting) == 1:
                return fitting[0]
        return self.resolve_variant(name)

    def collection_named(
        self, qualified_name: str, *, param: str | None = None
    ) -> ServedCollection:
        """The served collection ``<bundle>:<collection>``; :class:`NotFoundError` for none
        (``param`` names the request field that gave the name)."""
        served = self._collections.get(qualified_name)
        if served is None:
            known = ", ".join(c.qualified_name for c in self.collections) or "none"
            raise NotFoundError(
                f"unknown bundle collection {quoted(qualified_name)}; served: {known}",
                param=param,
            )
        return served

    def collection(
        self, variant: ServedVariant, name: str, *, param: str = "collection"
    ) -> ServedCollection:
        """The collection ``name`` (qualified or bare) embedded by ``variant``; ``param`` names
        the request field that gave the name (the refusals' ``param``).

        Raises :class:`NotFoundError` when ``variant`` serves none of that name,
        :class:`VariantMismatchError` when a qualified name is another variant's collection,
        :class:`AmbiguousNameError` when a bare name matches several of its collections."""
        served = self._collections.get(name)
        if served is not None:
            if served.variant != variant.name:
                raise VariantMismatchError(
                    f"collection {quoted(name)} is embedded by variant {served.variant!r}, not "
                    f"{variant.name!r}: leave 'variant' out or name {served.variant!r}",
                    param="variant",
                )
            return served
        matches = [c for c in self._named(name) if c.variant == variant.name]
        if not matches:
            known = [c.qualified_name for c in self.collections if c.variant == variant.name]
            raise NotFoundError(
                f"unknown collection {quoted(name)} for variant {variant.name!r}; "
                f"served: {', '.join(known)}",
                param=param,
            )
        if len(matches) > 1:
            raise _ambiguous(name, matches, param)
        return matches[0]

    def locate(
        self, variant_name: str | None, name: str, fits: Fits
    ) -> tuple[ServedVariant, ServedCollection]:
        """The variant and collection a request names.

        With ``variant_name`` this is :meth:`collection` of that variant. Without one, a
        qualified ``name`` is that collection and its variant; a bare ``name`` is the one served
        collection of that name whose variant ``fits`` the request, or — when several fit —
        the default variant's one. Raises :class:`NotFoundError` for an unknown name,
        :class:`AmbiguousNameError` when several collections fit (the message lists their
        qualified names). When none fits, the first candidate is returned: the caller's own
        check then says why it does not fit.
        """
        if variant_name is not None:
            variant = self.resolve_variant(variant_name)
            return variant, self.collection(variant, name)
        served = self._collections.get(name)
        if served is not None:
            return self._variants[served.variant], served
        candidates = self._named(name)
        if not candidates:
            raise NotFoundError(
                f"unknown collection {quoted(name)}; served: "
                f"{', '.join(c.qualified_name for c in self.collections)}",
                param="collection",
            )
        fitting = [c for c in candidates if fits(self._variants[c.variant])]
        if len(fitting) > 1:
            preferred = [c for c in fitting if c.variant == self._default_variant]
            fitting = preferred if len(preferred) == 1 else fitting
        if len(fitting) > 1:
            raise _ambiguous(name, fitting, "collection")
        chosen = fitting[0] if fitting else candidates[0]
        return self._variants[chosen.variant], chosen

    def _named(self, bare: str) -> list[ServedCollection]:
        return [served for served in self.collections if served.name == bare]

    def require_tower(self, variant: ServedVariant, tower: Tower, where: str) -> None:
        """Raise :class:`TowerMissingError` naming ``tower`` when ``variant`` lacks it (a text
        side needs a text tower, an image side an image tower); the message names the loaded
        variants that have it. ``where`` locates the side in the request (``query.image``)."""
        if tower in variant.towers:
            return
        having = [other.name for other in self.variants if tower in other.towers]
        options = (
            f"variants with one: {', '.join(having)}"
            if having
            else f"no loaded variant has {with_article(tower)} tower"
        )
        raise TowerMissingError(
            f"{where}: variant {variant.name!r} has no {tower} tower (its towers: "
            f"{', '.join(variant.towers)}); {options}",
            param=where,
        )

    def row_of(self, served: ServedCollection, item_id: str, *, param: str = "id") -> int:
        """Row number of ``item_id`` in ``served``; :class:`NotFoundError` if absent (``param``
        names the request field that gave the id)."""
        row = served.collection.row_of.get(item_id)
        if row is None:
            raise NotFoundError(
                f"unknown item {quoted(item_id)} in collection {served.name!r}",
                param=param,
            )
        return row

    @staticmethod
    def stored_vector(served: ServedCollection, row: int) -> np.ndarray:
        """The bundle's stored embedding of ``row``: float32 ``[dim]`` (a read-only view)."""
        vector: np.ndarray = served.collection.vectors[row]
        return vector

    async def close(self, timeout_s: float) -> None:
        """Drain and stop every variant's batchers, sharing ``timeout_s`` seconds among them."""
        deadline = time.perf_counter() + timeout_s
        for variant in self.variants:
            for batcher in variant.batchers:
                await batcher.close(max(0.0, deadline - time.perf_counter()))


def _ambiguous(name: str, matches: Iterable[ServedCollection], param: str) -> AmbiguousNameError:
    choices = ", ".join(served.described() for served in matches)
    return AmbiguousNameError(
        f"collection {quoted(name)} is ambiguous: several served collections can answer "
        f"({choices}); name one of them by its qualified name in 'collection', or give 'variant'",
        param=param,
    )
