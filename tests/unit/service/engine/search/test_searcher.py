"""The search core (service.engine.search.searcher): every kind of query side takes one path to
ranked hits; text and image sides are searched on their batcher's worker thread, item and vector
sides on a worker thread, each with the faiss thread cap; nothing non-finite reaches faiss; stages
are timed; scores and embeddings reuse the same steps."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

from service.engine.collection.catalog import (
    Catalog,
    ServedCollection,
    ServedVariant,
    VariantEncoders,
)
from service.engine.collection.knn import SearchHit
from service.engine.query.images import ImagePayload, image_limits
from service.engine.query.levers import Levers
from service.engine.query.query import (
    ImageSide,
    ItemSide,
    PageRequest,
    QuerySide,
    SearchQuery,
    TextSide,
    VectorSide,
    normalised_query_vector,
)
from service.engine.search.searcher import Searcher
from service.exceptions import ImageRefusedError, InvalidQueryError, NotFoundError
from service.lifecycle.loading import load_catalog
from service.metrics import ServiceMetrics
from service.request_context import RequestContext
from service.settings import Settings
from tests.fakes.fake_bundles import CAPTIONS, caption_id, image_id, write_fake_bundle
from tests.fakes.fake_encoders import (
    COLOURS,
    FAKE_DIM,
    FAKE_VARIANT,
    FakeImageEncoder,
    FakeTextEncoder,
    embed_bag_of_words,
    embed_colour,
    fake_factory,
)
from tests.fakes.fake_faiss import AdversarialTieIndex
from tests.fakes.image_files import b64, solid

T = TypeVar("T")
FAISS_THREADS = 2


@dataclass
class Deployment:
    """A two-tower fake variant serving captions and images, each searched by a recording
    index, and a searcher capping faiss at :data:`FAISS_THREADS` threads."""

    catalog: Catalog
    searcher: Searcher
    metrics: ServiceMetrics
    text: FakeTextEncoder
    image: FakeImageEncoder

    @property
    def variant(self) -> ServedVariant:
        return self.catalog.resolve_variant(None)

    def collection(self, name: str) -> ServedCollection:
        return self.catalog.collection(self.variant, name)

    def index(self, name: str) -> AdversarialTieIndex:
        index = self.collection(name).collection.index
        assert isinstance(index, AdversarialTieIndex)
        return index

    def search(self, side: QuerySide, collection: str = "captions", k: int = 3) -> list[SearchHit]:
        return self.run(
            self.searcher.search(
                RequestContext("test"),
                self.catalog,
                SearchQuery(None, collection, side, PageRequest(k=k)),
            )
        ).page.hits

    @staticmethod
    def run(work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run(work)


def recorded(served: ServedCollection) -> ServedCollection:
    """``served`` searched by an exact index that records its calls' threads."""
    index = AdversarialTieIndex(served.collection.vectors)
    return dataclasses.replace(
        served, collection=dataclasses.replace(served.collection, index=index)
    )


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    write_fake_bundle(tmp_path / "bundles", images=True)
    (tmp_path / "variants" / FAKE_VARIANT).mkdir(parents=True)
    settings = Settings(
        bundles_root=tmp_path / "bundles",
        variants_root=tmp_path / "variants",
        faiss_threads=FAISS_THREADS,
        max_image_pixels=250_000,
    )
    text = FakeTextEncoder(nan_texts=frozenset({"broken"}))
    image = FakeImageEncoder(nan_colours=frozenset({"black"}))
    metrics = ServiceMetrics()
    loaded = load_catalog(settings, fake_factory(text, image=image), metrics)
    catalog = loaded.with_collections([recorded(served) for served in loaded.collections])
    searcher = Searcher(metrics, image_limits(settings), settings.faiss_threads)
    yield Deployment(catalog, searcher, metrics, text, image)
    asyncio.run(catalog.close(timeout_s=5))


def png(colour: str, where: str = "query.image", size: tuple[int, int] = (16, 12)) -> ImageSide:
    return ImageSide(ImagePayload(where, b64(solid(colour, size=size))))


# -- one path for every side ------------------------------------------------------------------


def test_every_kind_of_side_finds_the_same_caption(deployment: Deployment) -> None:
    sides: list[QuerySide] = [
        TextSide(CAPTIONS[3], "query.text"),
        VectorSide((embed_bag_of_words(CAPTIONS[3]) * 7.0).tolist(), "query.vector"),
        ItemSide("captions", caption_id(3)),
    ]
    for side in sides:
        hits = deployment.search(side, k=1)
        assert [(hit.item_id, hit.rank) for hit in hits] == [(caption_id(3), 1)]
        assert hits[0].score == pytest.approx(1.0, abs=1e-6)


def test_an_image_side_finds_images_of_its_colour_with_the_tie_rule(
    deployment: Deployment,
) -> None:
    hits = deployment.search(png("red"), collection="images", k=2)
    # Images 0 and 4 are both red: equal scores, row ascending.
    assert [hit.item_id for hit in hits] == [image_id(0), image_id(4)]
    assert deployment.image.calls == [[(16, 12)]]


def test_text_and_image_sides_are_searched_on_their_batcher_thread(
    deployment: Deployment,
) -> None:
    deployment.search(TextSide("a red bus", "query.text"))
    deployment.search(png("blue"), collection="images")
    # One of the tower's batcher threads (encode-<variant>-<tower>-<n>) searched, with the faiss
    # thread cap set on it (OpenMP keeps the count per thread).
    for collection, tower in (("captions", "text"), ("images", "image")):
        ((thread, faiss_threads),) = set(deployment.index(collection).threads)
        assert thread.startswith(f"encode-{FAKE_VARIANT}-{tower}-")
        assert faiss_threads == FAISS_THREADS


@pytest.mark.parametrize(
    "side",
    [ItemSide("images", image_id(1)), VectorSide([1.0] + [0.0] * (FAKE_DIM - 1), "query.vector")],
    ids=["item", "vector"],
)
def test_item_and_vector_sides_are_searched_off_the_event_loop(
    deployment: Deployment, side: QuerySide
) -> None:
    deployment.search(side)
    ((thread, faiss_threads),) = set(deployment.index("captions").threads)
    assert thread != threading.main_thread().name
    assert not thread.startswith("encode-")
    # OpenMP keeps the count per thread: the cap is set on the thread that searches.
    assert faiss_threads == FAISS_THREADS
    assert deployment.text.calls == []


# -- nothing non-finite reaches faiss ---------------------------------------------------------


def test_a_text_without_a_finite_vector_never_reaches_faiss(deployment: Deployment) -> None:
    with pytest.raises(InvalidQueryError, match="text #0 cannot be embedded"):
        deployment.search(TextSide("broken", "query.text"))
    assert deployment.index("captions").fetches == []


def test_an_image_without_a_finite_vector_never_reaches_faiss(deployment: Deployment) -> None:
    with pytest.raises(InvalidQueryError, match="image #0 cannot be embedded"):
        deployment.search(png("black"), collection="images")
    assert deployment.index("images").fetches == []


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([float("nan")] + [1.0] * (FAKE_DIM - 1), "query.vector: every number must be finite"),
        ([float("inf")] * FAKE_DIM, "query.vector: every number must be finite"),
        ([0.0] * FAKE_DIM, "query.vector: the vector has zero norm"),
        ([1.0] * 3, f"query.vector: 3 numbers, but .* dimension {FAKE_DIM}"),
    ],
    ids=["nan", "inf", "zero", "short"],
)
def test_a_bad_vector_never_reaches_faiss(
    deployment: Deployment, values: list[float], message: str
) -> None:
    with pytest.raises(InvalidQueryError, match=message):
        deployment.search(VectorSide(values, "query.vector"))
    assert deployment.index("captions").fetches == []


def test_normalisation_survives_extreme_magnitudes() -> None:
    tiny = normalised_query_vector([5e-324, 0.0, 0.0], 3, "v")
    assert tiny.dtype == np.float32
    assert tiny.tolist() == [1.0, 0.0, 0.0]
    huge = normalised_query_vector([1.7e308, 1.7e308], 2, "v")
    assert np.linalg.norm(huge) == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(InvalidQueryError, match="zero norm"):
        normalised_query_vector([0.0, -0.0], 2, "v")
    with pytest.raises(InvalidQueryError, match="finite"):
        normalised_query_vector([float("nan"), 1.0], 2, "v")
    with pytest.raises(InvalidQueryError, match="dimension 2"):
        normalised_query_vector([1.0], 2, "v")


# -- targets ----------------------------------------------------------------------------------


def test_the_target_names_the_variant_collection_and_tower(deployment: Deployment) -> None:
    catalog = deployment.catalog
    variant, served = Searcher.target(catalog, None, "images", "text", "query.text")
    assert (variant.name, served.name) == (FAKE_VARIANT, "images")
    with pytest.raises(NotFoundError, match="unknown variant 'nope'"):
        Searcher.target(catalog, "nope", "images", VectorSide([1.0], "v"), "query.vector")
    with pytest.raises(NotFoundError, match="unknown collection 'songs'"):
        Searcher.target(catalog, None, "songs", VectorSide([1.0], "v"), "query.vector")
    text_only = dataclasses.replace(
        deployment.variant,
        encoders=VariantEncoders(text=deployment.text),
        image_batcher=None,
    )
    without_images = Catalog({FAKE_VARIANT: text_only}, catalog.collections)
    message = rf"query\.image: variant '{FAKE_VARIANT}' has no image tower"
    with pytest.raises(InvalidQueryError, match=message):
        Searcher.target(without_images, None, "images", "image", "query.image")
    # An item or a vector needs no tower.
    Searcher.target(without_images, None, "images", VectorSide([1.0], "v"), "query.vector")


# -- timings ----------------------------------------------------------------------------------


def test_a_text_search_times_queue_encode_and_search(deployment: Deployment) -> None:
    context = RequestContext("timed")
    deployment.run(
        deployment.searcher.search(
            context,
            deployment.catalog,
            SearchQuery(None, "captions", TextSide("a dog", "query.text"), PageRequest(k=3)),
        )
    )
    assert context.queue_ms is not None
    assert context.encode_ms is not None
    assert context.search_ms is not None
    assert context.search_ms > 0
    assert context.decode_ms is None
    labels = {"variant": FAKE_VARIANT, "collection": "captions"}
    count = deployment.metrics.registry.get_sample_value(
        "crisscross_search_duration_seconds_count", labels
    )
    assert count == 1


def test_an_item_search_has_no_queue_or_encode_time(deployment: Deployment) -> None:
    context = RequestContext("timed")
    hits = deployment.run(
        deployment.searcher.search(
            context,
            deployment.catalog,
            SearchQuery(
                None,
                "captions",
                ItemSide("captions", caption_id(0)),
                PageRequest(k=2, exclude={caption_id(0)}),
            ),
        )
    ).page.hits
    assert caption_id(0) not in [hit.item_id for hit in hits]
    assert (context.queue_ms, context.encode_ms, context.decode_ms) == (None, None, None)
    assert context.search_ms is not None


# -- scores and embeddings ---------------------------------------------------------------------


def test_vectors_embeds_each_distinct_input_once_and_names_the_stored_versions(
    deployment: Deployment,
) -> None:
    sides: list[QuerySide] = [
        TextSide("a red bus", "pairs.0.left.text"),
        png("red", "pairs.0.right.image"),
        TextSide("a red bus", "pairs.1.left.text"),
        png("red", "pairs.1.right.image"),
        ItemSide("images", image_id(1)),
        VectorSide([2.0] + [0.0] * (FAKE_DIM - 1), "pairs.2.right.vector"),
    ]
    vectors, versions = deployment.run(
        deployment.searcher.vectors(
            RequestContext("score"), deployment.catalog, deployment.variant, sides
        )
    )
    assert vectors.shape == (6, FAKE_DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[0], embed_bag_of_words("a red bus"), atol=1e-6)
    np.testing.assert_allclose(vectors[1], embed_colour(COLOURS["red"]), atol=1e-6)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_array_equal(vectors[1], vectors[3])
    np.testing.assert_allclose(vectors[4], embed_colour(COLOURS["blue"]), atol=1e-6)
    assert vectors[5].tolist() == [1.0] + [0.0] * (FAKE_DIM - 1)
    assert versions == {"20260101T000000Z"}
    assert deployment.text.calls == [["a red bus"]]
    assert deployment.image.calls == [[(16, 12)]]


def test_vectors_refuses_an_unknown_item_before_encoding_anything(
    deployment: Deployment,
) -> None:
    sides: list[QuerySide] = [TextSide("a red bus", "t"), ItemSide("images", "nope")]
    with pytest.raises(NotFoundError, match="unknown item 'nope' in collection 'images'"):
        deployment.run(
            deployment.searcher.vectors(
                RequestContext("score"), deployment.catalog, deployment.variant, sides
            )
        )
    assert deployment.text.calls == []


def test_embedding_nothing_calls_no_encoder(deployment: Deployment) -> None:
    context = RequestContext("embed")
    texts = deployment.run(deployment.searcher.embed_texts(context, deployment.variant, []))
    images = deployment.run(deployment.searcher.embed_images(context, deployment.variant, []))
    assert texts.shape == images.shape == (0, FAKE_DIM)
    assert deployment.text.calls == []
    assert deployment.image.calls == []


def test_bad_base64_anywhere_is_refused_before_any_image_is_decoded(
    deployment: Deployment,
) -> None:
    payloads = [ImagePayload("images.0", b64(solid("red"))), ImagePayload("images.1", "not b64!")]
    context = RequestContext("embed")
    with pytest.raises(ImageRefusedError, match=r"images\.1: not valid base64") as refused:
        deployment.run(deployment.searcher.embed_images(context, deployment.variant, payloads))
    assert refused.value.reason == "invalid_base64"
    assert deployment.image.calls == []
    assert context.decode_ms is not None
    refusals = deployment.metrics.registry.get_sample_value(
        "crisscross_images_refused_total", {"reason": "invalid_base64"}
    )
    assert refusals == 1


def test_huge_images_are_embedded_in_groups_of_bounded_pixels(deployment: Deployment) -> None:
    # 400 x 400 = 160,000 pixels each, max_image_pixels = 250,000: a group closes once it holds
    # at least that many.
    payloads = [
        ImagePayload(f"images.{n}", b64(solid(colour, size=(400, 400))))
        for n, colour in enumerate(["red", "blue", "green"])
    ]
    rows = deployment.run(
        deployment.searcher.embed_images(RequestContext("embed"), deployment.variant, payloads)
    )
    assert rows.shape == (3, FAKE_DIM)
    assert deployment.image.calls == [[(400, 400)] * 2, [(400, 400)]]


def test_a_bulk_embeds_its_texts_once_per_variant(deployment: Deployment) -> None:
    deployment.text.calls.clear()
    texts = ["a dog on a couch", "a man riding a wave", "a dog on a couch"]
    queries = [
        SearchQuery(None, "captions", TextSide(text, f"searches.{n}.query.text"), PageRequest(k=2))
        for n, text in enumerate(texts)
    ]
    lexical = SearchQuery(
        None,
        "captions",
        TextSide("only keywords", "searches.3.query.text"),
        PageRequest(k=2),
        levers=Levers(mode="lexical"),
    )
    answers = deployment.run(
        deployment.searcher.search_many(
            RequestContext("bulk"), deployment.catalog, [*queries, lexical]
        )
    )
    assert deployment.text.calls == [texts[:2]]  # distinct texts, one job; keywords need none
    alone = [deployment.search(query.side, k=2) for query in queries]
    for answer, hits in zip(answers, alone, strict=False):
        assert not isinstance(answer, Exception)
        assert [hit.item_id for hit in answer.page.hits] == [hit.item_id for hit in hits]


def test_a_bulk_text_without_a_finite_embedding_fails_alone(deployment: Deployment) -> None:
    queries = [
        SearchQuery(None, "captions", TextSide(text, f"searches.{n}.query.text"), PageRequest(k=2))
        for n, text in enumerate(["a dog", "broken"])
    ]
    answers = deployment.run(
        deployment.searcher.search_many(RequestContext("bulk"), deployment.catalog, queries)
    )
    assert not isinstance(answers[0], Exception)
    assert isinstance(answers[1], InvalidQueryError)
