"""A bundle collection as a view (service.engine.collection.bundle_view): its kept rows, its
top rows under the tie rule against brute force, its grouped search equal to one by one, its
keyword texts from the metadata."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from pydantic import TypeAdapter

from service.engine.collection.bundle_view import BundleView
from service.engine.collection.catalog import ServedCollection
from service.engine.query.filter_grammar import Filter
from service.engine.rank.fusion import Leg
from service.engine.rank.search_params import DEFAULT_PARAMS, SearchOverride
from service.exceptions import SearchParamNotApplicableError
from storage.columns import build_columns, infer_fields
from storage.index_files import build_index
from tests.fakes.fake_faiss import served_with

FILTER: TypeAdapter[Filter] = TypeAdapter(Filter)


def _served(count: int = 60) -> ServedCollection:
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((count, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[7] = vectors[3]  # a tie
    plain = served_with(vectors, build_index(vectors))
    metadata = [{"even": row % 2 == 0, "text": f"w{row % 5} common"} for row in range(count)]
    collection = dataclasses.replace(
        plain.collection, metadata=metadata, columns=build_columns(metadata, infer_fields(metadata))
    )
    return dataclasses.replace(plain, collection=collection)


def test_kept_rows_are_the_filters_less_the_exclusions() -> None:
    view = BundleView(_served(), 1)
    assert view.keep(None, ()) is None
    assert view.kept_count(None) == 60
    keep = view.keep(FILTER.validate_python({"field": "even", "eq": True}), {"item-0", "nope"})
    assert keep is not None
    assert view.kept_count(keep) == 29
    assert not keep[0]
    assert not keep[1]


def test_top_rows_equal_brute_force_under_the_tie_rule() -> None:
    served = _served()
    view = BundleView(served, 1)
    vectors = served.collection.vectors
    query = vectors[3].copy()
    leg = view.top(query, 10, None, DEFAULT_PARAMS)
    scores = vectors.astype(np.float64) @ query.astype(np.float64)
    expected = sorted(range(60), key=lambda row: (-np.float32(scores[row]), row))[:10]
    assert leg.rows.tolist() == expected
    assert leg.rows[:2].tolist() == [3, 7]  # the tie, by row
    hits = view.hits(Leg(leg.rows[2:5], leg.scores[2:5]), 2)
    assert [hit.rank for hit in hits] == [3, 4, 5]
    assert [hit.item_id for hit in hits] == view.ids_of(leg.rows[2:5])


def test_grouped_pages_equal_one_by_one() -> None:
    served = _served()
    view = BundleView(served, 1)
    queries = served.collection.vectors[[0, 3]].copy()
    pages = [(5, 0, ()), (4, 2, {"item-7"})]
    together = view.top_many(queries, pages, DEFAULT_PARAMS)
    for query, (k, offset, exclude), hits in zip(queries, pages, together, strict=True):
        keep = view.keep(None, exclude)
        leg = view.top(query, offset + k, keep, DEFAULT_PARAMS)
        alone = view.hits(Leg(leg.rows[offset:], leg.scores[offset:]), offset)
        assert hits == alone
    assert view.batch_key(DEFAULT_PARAMS) == BundleView(served, 1).batch_key(DEFAULT_PARAMS)


def test_keyword_texts_and_parameters() -> None:
    view = BundleView(_served(), 1)
    assert view.field_texts("text", 0, 2) == ["w0 common", "w1 common"]
    leg, matched = view.keyword_leg("text", ["w2"], None, 5)
    assert matched == 12
    assert leg.rows.tolist() == [2, 7, 12, 17, 22]  # equal scores: by row
    with pytest.raises(SearchParamNotApplicableError, match="nprobe"):
        view.params(SearchOverride(nprobe=4), "search_params")
    assert view.params(None, "search_params") == DEFAULT_PARAMS
    assert view.version == "1"
    assert not view.live
