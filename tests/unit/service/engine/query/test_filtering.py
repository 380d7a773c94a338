"""Filtered search against brute force: exact on a flat index, recall measured on HNSW.

The oracle evaluates each filter on each item's metadata in plain Python (row by row, the way
the service must not) and ranks the kept rows by score, then row. Vectors have small integer
components, so every inner product is exact in float32 and ties are frequent: the comparison is
of ids and order, not of scores within a tolerance.
"""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from formats.field_types import timestamp_micros
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.knn import nearest
from service.engine.query.filter_grammar import Filter
from service.engine.query.filtering import check_filter, filter_mask
from service.exceptions import InvalidQueryError
from storage.columns import build_columns, infer_fields
from storage.id_table import IdTable
from storage.reader import LoadedCollection

DIM = 8
ROWS = 300
BRANDS = ["acme", "zeta", "orbit", "nova"]
TAGS = ["red", "blue", "green", "sale", "new"]
FILTER = TypeAdapter(Filter)


def corpus(seed: int) -> tuple[np.ndarray, list[dict[str, Any]]]:
    rng = np.random.default_rng(seed)
    vectors = rng.integers(-2, 3, size=(ROWS, DIM)).astype(np.float32)
    metadata: list[dict[str, Any]] = []
    for row in range(ROWS):
        item: dict[str, Any] = {"brand": BRANDS[int(rng.integers(len(BRANDS)))]}
        if rng.random() < 0.8:
            item["price"] = int(rng.integers(0, 100))
        if rng.random() < 0.7:
            count = int(rng.integers(0, 3))
            item["tags"] = sorted({TAGS[int(t)] for t in rng.integers(len(TAGS), size=count)})
        item["at"] = f"2024-01-{1 + row % 28:02d}T00:00:00Z"
        item["flag"] = bool(rng.random() < 0.5)
        metadata.append(item)
    return vectors, metadata


def served(vectors: np.ndarray, metadata: list[dict[str, Any]], index: Any) -> ServedCollection:
    ids = [f"item-{row}" for row in range(len(vectors))]
    collection = LoadedCollection(
        name="items",
        index=index,
        ids=IdTable(ids),
        row_of={item: row for row, item in enumerate(ids)},
        metadata=metadata,
        vectors=vectors,
        factory="Flat",
        metric="ip",
        columns=build_columns(metadata, infer_fields(metadata)),
    )
    return ServedCollection(variant="v", bundle="b", bundle_version="1", collection=collection)


# -- the oracle ---------------------------------------------------------------------------------


def _value(field: str, raw: Any) -> Any:
    return timestamp_micros(raw) if field == "at" and isinstance(raw, str) else raw


def keeps(node: dict[str, Any], item: dict[str, Any]) -> bool:
    if "and" in node:
        return all(keeps(child, item) for child in node["and"])
    if "or" in node:
        return any(keeps(child, item) for child in node["or"])
    if "not" in node:
        return not keeps(node["not"], item)
    field = node["field"]
    if "exists" in node:
        return (field in item) == node["exists"]
    if field not in item:
        return False
    value = item[field]
    values = value if isinstance(value, list) else [value]
    values = [_value(field, v) for v in values]
    if "eq" in node:
        return _value(field, node["eq"]) in values
    if "in" in node:
        return any(_value(field, v) in values for v in node["in"])
    bounds = node["range"]
    (v,) = values
    return (
        ("gt" not in bounds or v > _value(field, bounds["gt"]))
        and ("gte" not in bounds or v >= _value(field, bounds["gte"]))
        and ("lt" not in bounds or v < _value(field, bounds["lt"]))
        and ("lte" not in bounds or v <= _value(field, bounds["lte"]))
    )


def brute_force(
    vectors: np.ndarray, metadata: list[dict[str, Any]], query: np.ndarray, flt: dict[str, Any]
) -> list[int]:
    rows = [row for row in range(len(vectors)) if keeps(flt, metadata[row])]
    scores = vectors[rows] @ query
    return [rows[i] for i in np.lexsort((np.array(rows), -scores))]


# -- random filters ------------------------------------------------------------------------------

leaves = st.one_of(
    st.builds(lambda b: {"field": "brand", "eq": b}, st.sampled_from([*BRANDS, "nobody"])),
    st.builds(
        lambda bs: {"field": "tags", "in": bs},
        st.lists(st.sampled_from(TAGS), min_size=1, max_size=3),
    ),
    st.builds(
        lambda lo, width: {"field": "price", "range": {"gte": lo, "lt": lo + width}},
        st.integers(0, 99),
        st.integers(1, 100),
    ),
    st.builds(
        lambda day: {"field": "at", "range": {"lte": f"2024-01-{day:02d}T00:00:00Z"}},
        st.integers(1, 28),
    ),
    st.builds(lambda e: {"field": "price", "exists": e}, st.booleans()),
    st.builds(lambda f: {"field": "flag", "eq": f}, st.booleans()),
    st.builds(lambda p: {"field": "price", "eq": p}, st.integers(0, 99)),
)
filters = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.builds(lambda cs: {"and": cs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda cs: {"or": cs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda c: {"not": c}, inner),
    ),
    max_leaves=6,
)

VECTORS, METADATA = corpus(0)
FLAT = faiss.IndexFlatIP(DIM)
FLAT.add(VECTORS)
SERVED = served(VECTORS, METADATA, FLAT)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    flt=filters,
    k=st.integers(1, 40),
    offset=st.integers(0, 30),
    query_row=st.integers(0, ROWS - 1),
)
def test_filtered_flat_search_is_the_brute_force_filtered_ranking(
    flt: dict[str, Any], k: int, offset: int, query_row: int
) -> None:
    query = VECTORS[query_row]
    expected = brute_force(VECTORS, METADATA, query, flt)[offset : offset + k]
    mask = filter_mask(FILTER.validate_python(flt), SERVED.collection)
    hits = nearest(SERVED, query, k, offset=offset, allowed=mask)
    assert [hit.row for hit in hits] == expected
    assert [hit.rank for hit in hits] == list(range(offset + 1, offset + 1 + len(hits)))


@pytest.mark.parametrize("keep", [ROWS, ROWS // 2, ROWS // 10, 7, 1])
def test_every_selectivity_down_to_a_single_match(keep: int) -> None:
    rng = np.random.default_rng(keep)
    chosen = sorted(rng.choice(ROWS, size=keep, replace=False).tolist())
    metadata = [dict(item, sku=f"s{row}") for row, item in enumerate(METADATA)]
    collection = served(VECTORS, metadata, FLAT)
    flt = {"field": "sku", "in": [f"s{row}" for row in chosen]}
    mask = filter_mask(FILTER.validate_python(flt), collection.collection)
    for query_row in range(0, ROWS, 37):
        query = VECTORS[query_row]
        expected = brute_force(VECTORS, metadata, query, flt)[:10]
        assert [hit.row for hit in nearest(collection, query, 10, allowed=mask)] == expected


def test_hnsw_recall_against_exact_filtered_search_is_measured() -> None:
    """An ANN index with a selector is not exact; its recall@10 against the exact filtered
    top-10 is measured at several selectivities (printed with ``-s``) and must stay useful."""
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((4000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    metadata = [{"bucket": int(b)} for b in rng.integers(0, 100, size=len(vectors))]
    hnsw = faiss.IndexHNSWFlat(32, 16, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efSearch = 64
    hnsw.add(vectors)
    ann = served(vectors, metadata, hnsw)
    flat = faiss.IndexFlatIP(32)
    flat.add(vectors)
    exact = served(vectors, metadata, flat)
    queries = rng.standard_normal((50, 32)).astype(np.float32)
    recalls: dict[int, float] = {}
    for below in (100, 50, 10, 2):
        flt = FILTER.validate_python({"field": "bucket", "range": {"lt": below}})
        mask = filter_mask(flt, exact.collection)
        found = 0
        for query in queries:
            truth = {hit.row for hit in nearest(exact, query, 10, allowed=mask)}
            found += len(truth & {hit.row for hit in nearest(ann, query, 10, allowed=mask)})
        recalls[below] = found / (10 * len(queries))
    print(f"HNSW16 efSearch=64 filtered recall@10 by selectivity %: {recalls}")
    # Measured here: {100: 0.984, 50: 0.99, 10: 0.914, 2: 0.726}. A graph search through a
    # sparse selector loses recall: that is the price of an ANN index, reported, not hidden.
    assert recalls[100] >= 0.9, recalls
    assert recalls[10] >= 0.8, recalls
    assert recalls[2] >= 0.5, recalls


def test_a_filter_on_a_collection_without_fields_names_none() -> None:
    bare = served(VECTORS, [{} for _ in range(ROWS)], FLAT)
    with pytest.raises(InvalidQueryError, match=r"unknown field 'brand' .*\(its fields: none\)"):
        check_filter(FILTER.validate_python({"field": "brand", "eq": "x"}), bare.collection)
