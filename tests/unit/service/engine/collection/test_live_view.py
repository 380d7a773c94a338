"""A live collection's view (service.engine.collection.live_view), searched by the page executor:
exact search over a live segment, brute force's answer under the tie rule (score descending, then
write order), with filters, exclusions and pages; dead rows never come back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from formats.field_types import FieldType
from service.engine.collection.live_view import LiveFields, LiveView
from service.engine.query.filter_grammar import FieldTest
from service.engine.query.query import PageRequest, SearchQuery, VectorSide
from service.engine.rank.lexical_index import LexicalIndexes
from service.engine.search.page_executor import Vectors, execute
from service.engine.search.pages import SearchPage
from service.engine.search.planner import VectorSpace, checked_plan
from storage.live.collection import LiveCollection, create_collection
from storage.live.operations import Delete, Upsert
from storage.live.segment import MutableSegment, SegmentView
from storage.live.spec import CollectionSpec

DIM = 6


def live_page(view: SegmentView, name: str, query: np.ndarray, page: PageRequest) -> SearchPage:
    """The page of a plain dense search of ``view`` for ``query``."""
    live = LiveView(view, name, LiveFields.of(name, view.fields), LexicalIndexes())
    side = VectorSide(tuple(query.tolist()), "query.vector")
    plan = checked_plan(live, SearchQuery(None, name, side, page), VectorSpace(None, view.dim))
    return execute(plan, Vectors(query))


def _segment(seed: int) -> tuple[SegmentView, dict[str, tuple[np.ndarray, str, int]]]:
    rng = np.random.default_rng(seed)
    segment = MutableSegment(DIM, {"cat": FieldType.STRING}, capacity=4)
    model: dict[str, tuple[np.ndarray, str, int]] = {}
    seq, row = 0, 0
    for _ in range(30):
        seq += 1
        if rng.random() < 0.7:
            ids = [f"i{n}" for n in rng.choice(25, size=3, replace=False)]
            vectors = rng.standard_normal((3, DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            if rng.random() < 0.3:
                vectors[1] = vectors[0]  # exact ties
            cats = [str(rng.choice(["a", "b"])) for _ in ids]
            segment.apply(
                seq,
                Upsert(tuple(ids), vectors, tuple({"cat": c} for c in cats), (None,) * 3),
            )
            for n, item in enumerate(ids):
                model[item] = (vectors[n], cats[n], row)
                row += 1
        else:
            ids = [f"i{n}" for n in rng.choice(25, size=2, replace=False)]
            segment.apply(seq, Delete(tuple(ids)))
            for item in ids:
                model.pop(item, None)
    return segment.view(seq), model


def _expected(
    model: dict[str, tuple[np.ndarray, str, int]],
    query: np.ndarray,
    page: PageRequest,
    cat: str | None,
) -> list[str]:
    scored = [
        (float(np.float32(v.astype(np.float64) @ query.astype(np.float64))), row, item)
        for item, (v, c, row) in model.items()
        if (cat is None or c == cat) and item not in page.exclude
    ]
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    return [item for _, _, item in scored[page.offset : page.offset + page.k]]


@pytest.mark.parametrize("seed", range(5))
def test_pages_equal_brute_force(seed: int) -> None:
    view, model = _segment(seed)
    rng = np.random.default_rng(100 + seed)
    for _ in range(10):
        query = rng.standard_normal(DIM).astype(np.float32)
        query /= np.linalg.norm(query)
        cat = [None, "a", "b"][int(rng.integers(3))]
        page = PageRequest(
            k=int(rng.integers(1, 8)),
            offset=int(rng.choice([0, 2, 5])),
            exclude=frozenset(f"i{n}" for n in rng.choice(25, size=3)),
            filter=None if cat is None else FieldTest(field="cat", eq=cat),
        )
        found = live_page(view, "things", query, page)
        assert [hit.item_id for hit in found.hits] == _expected(model, query, page, cat)
        assert [hit.rank for hit in found.hits] == list(
            range(page.offset + 1, page.offset + 1 + len(found.hits))
        )


def test_an_empty_segment_gives_an_empty_page() -> None:
    view = MutableSegment(DIM, {}).view(0)
    page = live_page(view, "x", np.ones(DIM, dtype=np.float32), PageRequest(k=3))
    assert page.hits == []
    assert page.next_offset is None


def test_fields_are_typed_columns_without_rows() -> None:
    fields = LiveFields.of("x", {"n": FieldType.INTEGER})
    assert fields.columns["n"].type == FieldType.INTEGER
    assert fields.columns["n"].count == 0


def _with_base(
    tmp_path: Path, seed: int, index: str
) -> tuple[LiveCollection, dict[str, tuple[np.ndarray, str, int]]]:
    """A collection of 600 items compacted into a base of ``index``, then replacements,
    deletes (of base items and of newer ones) and new items written after it; its model (row:
    write order, which compaction keeps)."""
    rng = np.random.default_rng(seed)
    spec = CollectionSpec(name="things", dim=DIM, fields={"cat": FieldType.STRING}, index=index)
    collection = LiveCollection.open(create_collection(tmp_path, spec))
    model: dict[str, tuple[np.ndarray, str, int]] = {}
    order = iter(range(10**6))

    def upsert(ids: list[str]) -> None:
        vectors = rng.standard_normal((len(ids), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors[1] = vectors[0]  # exact ties
        cats = [str(rng.choice(["a", "b"])) for _ in ids]
        metadata = tuple({"cat": c} for c in cats)
        collection.stage(Upsert(tuple(ids), vectors, metadata, (None,) * len(ids)))
        collection.commit()
        for n, item in enumerate(ids):
            model[item] = (vectors[n], cats[n], next(order))

    for start in range(0, 600, 100):
        upsert([f"i{n}" for n in range(start, start + 100)])
    collection.compact()
    upsert([f"i{n}" for n in rng.choice(700, size=80, replace=False)])
    gone = [f"i{n}" for n in rng.choice(700, size=120, replace=False)]
    collection.stage(Delete(tuple(gone)))
    collection.commit()
    for item in gone:
        model.pop(item, None)
    return collection, model


@pytest.mark.parametrize("seed", range(3))
def test_pages_over_a_flat_base_equal_brute_force(tmp_path: Path, seed: int) -> None:
    collection, model = _with_base(tmp_path, seed, "Flat")
    view = collection.view()
    assert view.base_rows == 600
    assert view.rows > 600
    rng = np.random.default_rng(100 + seed)
    for _ in range(20):
        query = rng.standard_normal(DIM).astype(np.float32)
        query /= np.linalg.norm(query)
        cat = [None, "a", "b"][int(rng.integers(3))]
        page = PageRequest(
            k=int(rng.integers(1, 30)),
            offset=int(rng.choice([0, 7, 40])),
            exclude=frozenset(f"i{n}" for n in rng.choice(700, size=20)),
            filter=None if cat is None else FieldTest(field="cat", eq=cat),
        )
        found = live_page(view, "things", query, page)
        assert [hit.item_id for hit in found.hits] == _expected(model, query, page, cat)


def test_an_ivf_base_finds_what_brute_force_finds(tmp_path: Path) -> None:
    collection, model = _with_base(tmp_path, 9, "IVF8,Flat")
    base = collection.base
    assert base is not None
    assert base.items.factory == "IVF8,Flat"
    view = collection.view()
    rng = np.random.default_rng(5)
    hits = total = 0
    for _ in range(50):
        query = rng.standard_normal(DIM).astype(np.float32)
        query /= np.linalg.norm(query)
        page = PageRequest(k=10)
        found = [hit.item_id for hit in live_page(view, "things", query, page).hits]
        expected = _expected(model, query, page, None)
        assert len(found) == 10
        assert not set(found) - set(model)
        hits += len(set(found) & set(expected))
        total += len(expected)
    recall = hits / total
    print(f"IVF8,Flat base + exact own rows: recall@10 {recall:.3f} over 50 queries")
    assert recall >= 0.9
