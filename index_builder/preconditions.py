"""What a build checks before it reads a record: the collections a corpus yields with the towers
at hand, each collection's name, and the encoders being towers of one variant.

The one place for these checks: the single-machine build (:func:`index_builder.ingest.ingest`),
its command line (which loads only the towers the plan needs) and the distributed build
(``cluster.build``) all call :func:`plan_collections`. Every failure is a
:class:`~index_builder.field_schema.CorpusError`: no single item is at fault, and nothing is
read, embedded or written.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

from encoders.protocols import ImageEncoderProtocol, TextEncoderProtocol
from encoders.variant import Tower
from index_builder.corpus import Corpus, KarpathyCaptions, TextTable, corpus_kind
from index_builder.field_schema import CorpusError
from storage.layout import COLLECTION_PATTERN

CAPTIONS_COLLECTION: Final = "captions"
"""The collection of Karpathy captions (ids: CxC caption keys)."""
IMAGES_COLLECTION: Final = "images"
"""The collection of the Karpathy captions' images (ids: image file names)."""


@dataclass(frozen=True)
class CollectionPlan:
    """One collection a build writes: its name and the tower that embeds it."""

    name: str
    tower: Tower


@dataclass(frozen=True)
class EncoderVariant:
    """The variant the given encoders are towers of: its name, fingerprint and those towers."""

    name: str
    fingerprint: str
    towers: tuple[Tower, ...]


def check_collection_name(name: str) -> None:
    """:class:`CorpusError` unless ``name`` can name a collection."""
    if not COLLECTION_PATTERN.match(name):
        raise CorpusError(f"collection name {name!r} does not match ^[a-z][a-z0-9_]{{0,63}}$")


def default_collection_name(bundle_name: str) -> str:
    """``My-Products.v2`` → ``my_products_v2``; :class:`CorpusError` when that is still no
    collection name (then ``--collection`` must name one)."""
    candidate = bundle_name.lower().replace("-", "_").replace(".", "_")
    if not COLLECTION_PATTERN.match(candidate):
        raise CorpusError(
            f"cannot derive a collection name from bundle name {bundle_name!r} ({candidate!r} "
            "does not match ^[a-z][a-z0-9_]{0,63}$): give --collection"
        )
    return candidate


def encoder_variant(
    text_encoder: TextEncoderProtocol | None, image_encoder: ImageEncoderProtocol | None
) -> EncoderVariant:
    """The variant of the encoders given; :class:`CorpusError` for none, or for two towers of
    different variants (name or fingerprint)."""
    given: list[tuple[Tower, TextEncoderProtocol | ImageEncoderProtocol]] = []
    if text_encoder is not None:
        given.append(("text", text_encoder))
    if image_encoder is not None:
        given.append(("image", image_encoder))
    if not given:
        raise CorpusError("nothing to embed with: give a text encoder, an image encoder or both")
    if len({(encoder.name, encoder.fingerprint) for _, encoder in given}) != 1:
        raise CorpusError("the text and image encoders are not towers of one variant")
    first = given[0][1]
    return EncoderVariant(first.name, first.fingerprint, tuple(tower for tower, _ in given))


def plan_collections(
    corpus: Corpus, towers: Collection[str], *, variant: str, collection: str
) -> list[CollectionPlan]:
    """The collections a build of ``corpus`` writes with the ``towers`` at hand, in bundle
    order; :class:`CorpusError` when the build cannot be made.

    A table of texts, a folder or a table of images gives one collection, ``collection``, and
    needs the text or the image tower. Karpathy captions give ``captions`` with a text tower and
    ``images`` with an image tower, which then needs the images folder (and an images folder
    needs an image tower); ``collection`` does not apply to them.
    """
    option = "--" + corpus_kind(corpus).replace("_", "-")
    if isinstance(corpus, KarpathyCaptions):
        return _karpathy_plan(corpus, towers, variant, option)
    check_collection_name(collection)
    tower: Tower = "text" if isinstance(corpus, TextTable) else "image"
    if tower not in towers:
        raise CorpusError(f"variant {variant} has no {tower} tower: it cannot embed {option}")
    return [CollectionPlan(collection, tower)]


def _karpathy_plan(
    corpus: KarpathyCaptions, towers: Collection[str], variant: str, option: str
) -> list[CollectionPlan]:
    plans: list[CollectionPlan] = []
    if "text" in towers:
        plans.append(CollectionPlan(CAPTIONS_COLLECTION, "text"))
    if "image" in towers:
        if corpus.images_dir is None:
            raise CorpusError(
                f"variant {variant} has an image tower: give --images-dir (the captions' image "
                "files) to build its images collection"
            )
        plans.append(CollectionPlan(IMAGES_COLLECTION, "image"))
    elif corpus.images_dir is not None:
        raise CorpusError(
            f"variant {variant} has no image tower: it cannot embed the images of --images-dir "
            "(leave it out)"
        )
    if not plans:
        raise CorpusError(f"variant {variant} has no text tower: it cannot embed {option}")
    return plans
