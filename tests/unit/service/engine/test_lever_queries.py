"""A bundle search with levers made ready (service.engine.lever_queries): a bulk request's texts
embedded ahead in one job per variant, distinct texts once, and a re-rank's variant resolved
or refused."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from service.engine.catalog import Catalog, ServedCollection, ServedVariant
from service.engine.images import ImagePayload
from service.engine.lever_queries import embed_lever_texts, rerank_target
from service.engine.levers import Levers, Rerank
from service.engine.query import (
    ItemSide,
    PageRequest,
    QuerySide,
    SearchQuery,
    TextSide,
    VectorSide,
)
from service.exceptions import InvalidQueryError, LeverNotApplicableError, NotFoundError
from service.request_context import RequestContext
from tests.fakes.fake_faiss import AdversarialTieIndex, served_with, tie_corpus
from tests.unit.service.engine.test_catalog import catalog_of, variant


class _Embedder:
    """Embeds a text as [len(text), 1] in every variant, recording each call; refuses a batch
    holding ``bad``."""

    def __init__(self, bad: str | None = None) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.bad = bad

    async def embed_texts(
        self, context: RequestContext, variant: ServedVariant, texts: Sequence[str]
    ) -> np.ndarray:
        del context
        self.calls.append((variant.name, list(texts)))
        if self.bad in texts:
            raise InvalidQueryError("no finite embedding")
        return np.array([[len(text), 1.0] for text in texts], dtype=np.float32)

    async def embed_images(
        self, context: RequestContext, variant: ServedVariant, payloads: Sequence[ImagePayload]
    ) -> np.ndarray:
        del context, variant, payloads
        raise AssertionError("no image is embedded ahead")

    def given_vector(self, catalog: Catalog, variant: ServedVariant, side: QuerySide) -> np.ndarray:
        del catalog, variant, side
        raise AssertionError("no vector is looked up ahead")


def _query(side: QuerySide, levers: Levers) -> SearchQuery:
    return SearchQuery(None, "captions", side, PageRequest(k=1), levers=levers)


def _context() -> RequestContext:
    return RequestContext(request_id="r")


def _both_serve_captions() -> Catalog:
    """Variants ``a`` (the default) and ``b``, each serving a ``captions`` collection."""
    vectors = tie_corpus()
    collections = [
        dataclasses.replace(served_with(vectors, AdversarialTieIndex(vectors), name), bundle=name)
        for name in "ab"
    ]
    return Catalog({name: variant(name, is_default=name == "a") for name in "ab"}, collections)


def _served(catalog: Catalog, name: str) -> ServedCollection:
    served_variant = catalog.variant_named(name)
    assert served_variant is not None
    return catalog.collection(served_variant, "captions")


def test_texts_are_embedded_once_per_variant_and_rerank_variant() -> None:
    catalog = _both_serve_captions()
    first = catalog.variant_named("a")
    assert first is not None
    served = _served(catalog, "a")
    hybrid = Levers(mode="hybrid")
    lexical = Levers(mode="lexical")
    by_b = Levers(rerank=Rerank(by="variant", variant="b"))
    searches = [
        (_query(TextSide("one", "q0"), hybrid), first, served),
        (_query(TextSide("one", "q1"), hybrid), first, served),  # the same text: once
        (_query(TextSide("three", "q2"), lexical), first, served),  # keywords only: no vector
        (_query(ItemSide("captions", "x"), hybrid), first, served),  # not a text: skipped
        (_query(TextSide("four", "q4"), by_b), first, served),  # a's first stage, b's re-rank
    ]
    embedder = _Embedder()
    embedded = asyncio.run(embed_lever_texts(embedder, _context(), catalog, searches))
    assert embedder.calls == [("a", ["one", "four"]), ("b", ["four"])]
    assert sorted(embedded) == [("a", "four"), ("a", "one"), ("b", "four")]
    assert embedded[("b", "four")].tolist() == [4.0, 1.0]


def test_a_batch_without_a_finite_embedding_is_left_to_the_searches() -> None:
    catalog = catalog_of(variant("a", is_default=True), collection_of="a")
    served = _served(catalog, "a")
    first = catalog.variant_named("a")
    assert first is not None
    searches = [
        (_query(TextSide(text, f"q{slot}"), Levers(mode="hybrid")), first, served)
        for slot, text in enumerate(["fine", "nan"])
    ]
    embedder = _Embedder(bad="nan")
    embedded = asyncio.run(embed_lever_texts(embedder, _context(), catalog, searches))
    assert embedded == {}
    assert embedder.calls == [("a", ["fine", "nan"])]


def test_a_rerank_by_another_variant_resolves_or_is_refused() -> None:
    catalog = catalog_of(variant("a", is_default=True), variant("b"), collection_of="a")
    served = _served(catalog, "a")
    text = TextSide("x", "query.text")
    assert rerank_target(catalog, Levers(), served, text) is None
    assert rerank_target(catalog, Levers(rerank=Rerank(by="exact")), served, text) is None
    with pytest.raises(NotFoundError, match="unknown variant 'nope'"):
        rerank_target(catalog, Levers(rerank=Rerank(by="variant", variant="nope")), served, text)
    by_b = Levers(rerank=Rerank(by="variant", variant="b"), where="searches.2.")
    with pytest.raises(LeverNotApplicableError, match=r"searches\.2\.rerank\.variant: a client"):
        rerank_target(catalog, by_b, served, VectorSide((1.0, 0.0), "query.vector"))
    with pytest.raises(LeverNotApplicableError, match="serves no collection 'captions'"):
        rerank_target(catalog, by_b, served, text)
