"""Every search planned once (service.engine.search.planner): the target (a live collection by
name, else a bundle collection), the checks in one order for every kind of collection (the
window checked only where a ranking is cut to it), a re-rank's variant resolved or refused,
and the variant that embeds a live collection's sides."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from service.engine.collection.catalog import Catalog
from service.engine.collection.live_collections import LiveEntry
from service.engine.collection.live_view import LiveFields, LiveView
from service.engine.collection.write_path import CollectionWriter
from service.engine.query.levers import NO_LEVERS, Levers, Rerank
from service.engine.query.query import PageRequest, SearchQuery, TextSide, VectorSide
from service.engine.search.planner import (
    VectorSpace,
    checked_plan,
    live_variant,
    plan_search,
)
from service.exceptions import (
    InvalidQueryError,
    LeverNotApplicableError,
    NotFoundError,
    TowerMissingError,
    VariantMismatchError,
)
from service.metrics import ServiceMetrics
from storage.columns import build_columns, infer_fields
from storage.index_files import build_index
from storage.live.collection import LiveCollection, create_collection
from storage.live.operations import Upsert
from storage.live.spec import CollectionSpec
from tests.fakes.fake_faiss import served_with, tie_corpus
from tests.unit.service.engine.collection.test_catalog import catalog_of, variant


def _entry(tmp_path: Path, variant_name: str | None) -> LiveEntry:
    spec = CollectionSpec("c", 2, {}, variant=variant_name)
    collection = LiveCollection.open(create_collection(tmp_path, spec))
    collection.stage(Upsert(("a",), np.array([[0.6, 0.8]], dtype=np.float32), ({},), (None,)))
    collection.commit()
    writer = CollectionWriter(collection, ServiceMetrics(), max_pending=4, retry_after_s=1)
    return LiveEntry(writer, LiveFields.of("c", {}))


class _Live:
    """The live collections a planner may find: one entry."""

    def __init__(self, entry: LiveEntry) -> None:
        self.entry = entry

    def get(self, name: str) -> LiveEntry | None:
        return self.entry if name == self.entry.collection.name else None


def _query(collection: str, levers: Levers = NO_LEVERS, **page: object) -> SearchQuery:
    request = PageRequest(k=int(str(page.get("k", 3))), offset=int(str(page.get("offset", 0))))
    return SearchQuery(None, collection, TextSide("x", "query.text"), request, levers=levers)


def test_texts_of_a_live_collection_need_a_served_variant(tmp_path: Path) -> None:
    catalog = Catalog({}, [])
    client_vectors = _entry(tmp_path / "one", None)
    with pytest.raises(TowerMissingError, match="client vectors"):
        live_variant(catalog, client_vectors, "text", "query.text")
    unserved = _entry(tmp_path / "two", "gone")
    with pytest.raises(NotFoundError, match="not served"):
        live_variant(catalog, unserved, "text", "query.text")
    client_vectors.collection.close()
    unserved.collection.close()


def test_a_live_collection_is_planned_on_its_view(tmp_path: Path) -> None:
    catalog = catalog_of(variant("a", is_default=True), collection_of="a")
    entry = _entry(tmp_path, "a")
    live = _Live(entry)
    plan = plan_search(catalog, live, _query("c"))  # type: ignore[arg-type]
    assert isinstance(plan.view, LiveView)
    assert plan.view.version == "live@1"
    assert plan.space.variant is not None
    assert plan.space.variant.name == "a"
    assert (plan.bundle, plan.embedded_by, plan.depth) == ("c", "a", 3)
    other = dataclasses.replace(_query("c"), variant="b")
    with pytest.raises(VariantMismatchError, match="leave 'variant' out"):
        plan_search(catalog, live, other)  # type: ignore[arg-type]
    by_variant = Levers(rerank=Rerank(by="variant", variant="a"))
    with pytest.raises(LeverNotApplicableError, match="by: exact"):
        plan_search(catalog, live, _query("c", by_variant))  # type: ignore[arg-type]
    vector = dataclasses.replace(_query("c"), side=VectorSide((1.0, 0.0), "query.vector"))
    assert plan_search(catalog, live, vector).space.variant is None  # type: ignore[arg-type]
    entry.collection.close()


def _with_texts() -> Catalog:
    """Variant ``a`` serving a ``captions`` collection whose rows have a ``text`` field."""
    served = served_with(tie_corpus(), build_index(tie_corpus()), "a")
    metadata = [{"text": f"x {row}"} for row in range(12)]
    collection = dataclasses.replace(
        served.collection,
        metadata=metadata,
        columns=build_columns(metadata, infer_fields(metadata)),
    )
    return Catalog(
        {"a": variant("a", is_default=True)}, [dataclasses.replace(served, collection=collection)]
    )


def test_the_window_is_checked_where_a_ranking_is_cut_to_it(tmp_path: Path) -> None:
    catalog = _with_texts()
    entry = _entry(tmp_path, "a")
    live = _Live(entry)
    for collection in ("captions", "c"):  # the same rule for a bundle and a live collection
        lexical = Levers(mode="lexical", keywords="x", window=2)
        plan = plan_search(catalog, live, _query(collection, lexical, k=5))  # type: ignore[arg-type]
        assert plan.depth == 5
        for cut in (Levers(mode="hybrid", window=2), Levers(rerank=Rerank(by="exact"), window=2)):
            with pytest.raises(InvalidQueryError, match="window: 2 candidates"):
                plan_search(catalog, live, _query(collection, cut, k=5))  # type: ignore[arg-type]
        hybrid = plan_search(catalog, live, _query(collection, Levers(mode="hybrid")))  # type: ignore[arg-type]
        assert hybrid.depth == 100
        assert hybrid.terms == ["x"]
    entry.collection.close()


def test_a_rerank_by_another_variant_resolves_or_is_refused() -> None:
    catalog = catalog_of(variant("a", is_default=True), variant("b"), collection_of="a")
    assert plan_search(catalog, None, _query("captions")).rerank is None
    exact = Levers(rerank=Rerank(by="exact"))
    assert plan_search(catalog, None, _query("captions", exact)).rerank is None
    with pytest.raises(NotFoundError, match="unknown variant 'nope'"):
        plan_search(catalog, None, _query("captions", Levers(rerank=Rerank("variant", "nope"))))
    by_b = Levers(rerank=Rerank(by="variant", variant="b"), where="searches.2.")
    vector = dataclasses.replace(
        _query("captions", by_b), side=VectorSide((1.0,) * 8, "query.vector")
    )
    with pytest.raises(LeverNotApplicableError, match=r"searches\.2\.rerank\.variant: a client"):
        plan_search(catalog, None, vector)
    with pytest.raises(LeverNotApplicableError, match="serves no collection 'captions'"):
        plan_search(catalog, None, _query("captions", by_b))


def test_a_plan_on_any_view_checks_its_filter_and_parameters_first() -> None:
    catalog = catalog_of(variant("a", is_default=True), collection_of="a")
    plan = plan_search(catalog, None, _query("captions"))
    assert plan.plain
    assert plan.wants_vector
    with pytest.raises(LeverNotApplicableError, match="no field 'nope'"):
        checked_plan(
            plan.view,
            _query("captions", Levers(mode="lexical", field="nope")),
            VectorSpace(None, 8),
        )
