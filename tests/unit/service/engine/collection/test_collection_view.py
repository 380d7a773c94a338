"""Collections as views (service.engine.collection.collection_view): the parity of every kind.

The same items, in the same order, held as a bundle, as a live collection (half of them in a
compacted base searched through faiss, half written since), and as three shards of the bundle and of
the live collection: every lever case — dense, lexical, hybrid with RRF and with the weighted sum, a
re-rank by the exact vectors and by another variant, filters (and, or, not, in, range), exclusions,
pages, exact ties, a window smaller than the page of a lexical search — planned once
(:func:`service.engine.search.planner.checked_plan`) and run by the one executor gives the same
outcome on every view: the same hits (ids, rows, scores to the bit, ranks), the same next offset, or
the same refusal. Plain searches run together (a bulk's grouped path) equal the same searches one by
one. Seeded."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter

from formats.field_types import FieldType
from service.engine.collection.bundle_view import BundleView
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.collection_view import CollectionView
from service.engine.collection.live_view import LiveFields, LiveView
from service.engine.collection.sharded_view import ShardedView
from service.engine.query.filter_grammar import Filter
from service.engine.query.levers import Levers, Rerank
from service.engine.query.query import PageRequest, SearchQuery, TextSide
from service.engine.rank.fusion import Fusion
from service.engine.rank.lexical_index import LexicalIndexes
from service.engine.search.page_executor import Vectors, execute, run_together
from service.engine.search.planner import VectorSpace, checked_plan
from service.exceptions import DomainError
from storage.columns import build_columns
from storage.id_table import IdTable
from storage.index_files import build_index
from storage.live.collection import LiveCollection, create_collection
from storage.live.operations import Upsert
from storage.live.spec import CollectionSpec
from storage.reader import LoadedCollection

DIM = 8
COUNT = 240
WORDS = [f"w{n}" for n in range(12)]
FIELDS = {"cat": FieldType.STRING, "n": FieldType.INTEGER, "text": FieldType.STRING}
FILTER: TypeAdapter[Filter] = TypeAdapter(Filter)


@dataclasses.dataclass(frozen=True)
class Items:
    """The items every view holds, in row order."""

    ids: list[str]
    vectors: np.ndarray
    metadata: list[dict[str, Any]]
    other: np.ndarray
    """Another variant's vectors of the same items (dimension 5)."""


def _unit(values: np.ndarray) -> np.ndarray:
    return (values / np.linalg.norm(values, axis=1, keepdims=True)).astype(np.float32)


def _items(seed: int) -> Items:
    rng = np.random.default_rng(seed)
    vectors = _unit(rng.standard_normal((COUNT, DIM)))
    for row in range(0, COUNT, 17):  # exact ties, within and across halves and shards
        vectors[(row * 7 + 3) % COUNT] = vectors[row]
    metadata = []
    for row in range(COUNT):
        words = rng.choice(WORDS, size=int(rng.integers(1, 6)))
        metadata.append(
            {"cat": str(rng.choice(["a", "b", "c"])), "n": row % 50, "text": " ".join(words)}
        )
    for row in range(0, COUNT, 23):  # repeated texts: lexical ties
        metadata[(row + 5) % COUNT]["text"] = metadata[row]["text"]
    other = _unit(rng.standard_normal((COUNT, 5)))
    return Items([f"item-{row}" for row in range(COUNT)], vectors, metadata, other)


def _served(items: Items, rows: range, vectors: np.ndarray, variant: str = "v") -> ServedCollection:
    ids = [items.ids[row] for row in rows]
    chosen = np.ascontiguousarray(vectors[list(rows)])
    metadata: list[Any] = [items.metadata[row] for row in rows]
    collection = LoadedCollection(
        name="things",
        index=build_index(chosen),
        ids=IdTable(ids),
        row_of={item: row for row, item in enumerate(ids)},
        metadata=metadata,
        vectors=chosen,
        factory="Flat",
        metric="ip",
        columns=build_columns(metadata, FIELDS),
    )
    return ServedCollection(variant=variant, bundle="b", bundle_version="1", collection=collection)


def _live(items: Items, rows: range, folder: Path) -> LiveView:
    """A live collection of ``rows``: the first half compacted into a base, the rest written
    since."""
    collection = LiveCollection.open(
        create_collection(folder, CollectionSpec("things", DIM, FIELDS))
    )
    half = rows.start + len(rows) // 2
    for part in (range(rows.start, half), range(half, rows.stop)):
        collection.stage(
            Upsert(
                tuple(items.ids[row] for row in part),
                np.ascontiguousarray(items.vectors[list(part)]),
                tuple(items.metadata[row] for row in part),
                (None,) * len(part),
            )
        )
        collection.commit()
        if part.start == rows.start:
            collection.compact()
    view = collection.view()
    assert view.base_rows == half - rows.start
    return LiveView(view, "things", LiveFields.of("things", FIELDS), LexicalIndexes())


SHARDS = [range(70), range(70, 160), range(160, COUNT)]


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CollectionView]:
    items = _items(seed=3)
    folder = tmp_path_factory.mktemp("live")
    whole = range(COUNT)
    return {
        "bundle": BundleView(_served(items, whole, items.vectors), 1),
        "live": _live(items, whole, folder / "whole"),
        "sharded bundle": ShardedView(
            "things", [BundleView(_served(items, part, items.vectors), 1) for part in SHARDS]
        ),
        "sharded live": ShardedView(
            "things", [_live(items, part, folder / f"shard{n}") for n, part in enumerate(SHARDS)]
        ),
        "other": BundleView(_served(items, whole, items.other, variant="o"), 1),
    }


KINDS = ["bundle", "live", "sharded bundle", "sharded live"]

CASES: dict[str, tuple[Levers, dict[str, Any]]] = {
    "dense": (Levers(), {}),
    "dense page 2": (Levers(), {"offset": 10, "k": 7}),
    "dense deep": (Levers(), {"k": 200}),
    "dense past the end": (Levers(), {"offset": 238, "k": 10}),
    "dense filter and": (
        Levers(),
        {
            "filter": {
                "and": [{"field": "cat", "eq": "a"}, {"field": "n", "range": {"gte": 10, "lt": 40}}]
            }
        },
    ),
    "dense filter or/not/in": (
        Levers(),
        {
            "filter": {
                "or": [{"not": {"field": "cat", "in": ["a", "b"]}}, {"field": "n", "in": [1, 2, 3]}]
            }
        },
    ),
    "dense exclusions": (Levers(), {"exclude": True}),
    "lexical": (Levers(mode="lexical", keywords="w1 w2"), {"k": 15}),
    "lexical page 3": (Levers(mode="lexical", keywords="w3"), {"k": 5, "offset": 10}),
    "lexical window under the page": (
        Levers(mode="lexical", keywords="w4", window=3),
        {"k": 5, "offset": 2},
    ),
    "lexical filter": (
        Levers(mode="lexical", keywords="w0 w5"),
        {"filter": {"field": "cat", "eq": "b"}},
    ),
    "hybrid rrf": (
        Levers(mode="hybrid", keywords="w1", fusion=Fusion(method="rrf", k=60), window=40),
        {"k": 12},
    ),
    "hybrid weighted": (
        Levers(mode="hybrid", keywords="w2 w6", fusion=Fusion(method="weighted", alpha=0.3)),
        {"k": 10, "offset": 5},
    ),
    "hybrid exclusions": (
        Levers(mode="hybrid", keywords="w7", window=30),
        {"exclude": True, "k": 9},
    ),
    "hybrid window under the page": (Levers(mode="hybrid", keywords="w7", window=4), {"k": 5}),
    "rerank exact": (Levers(rerank=Rerank(by="exact"), window=25), {"k": 10, "offset": 3}),
    "rerank exact of lexical": (
        Levers(mode="lexical", keywords="w8", rerank=Rerank(by="exact")),
        {"k": 8},
    ),
    "rerank by another variant": (
        Levers(rerank=Rerank(by="variant", variant="o"), window=30),
        {"k": 10},
    ),
    "rerank by another variant of hybrid": (
        Levers(mode="hybrid", keywords="w9", rerank=Rerank(by="variant", variant="o"), window=30),
        {"k": 6, "offset": 2},
    ),
}

Outcome = tuple[str, Any]


def _outcome(run: Callable[[], Any]) -> Outcome:
    try:
        page = run()
    except DomainError as error:
        return ("refused", (type(error).__name__, str(error)))
    hits = [(hit.rank, hit.row, hit.item_id, hit.score, dict(hit.metadata)) for hit in page.hits]
    return ("page", (hits, page.next_offset, page.mode, page.params))


def _run(
    views: dict[str, CollectionView],
    kind: str,
    case: str,
    query_vector: np.ndarray,
    other_vector: np.ndarray,
    exclude: frozenset[str],
) -> Outcome:
    levers, shape = CASES[case]
    node = None if "filter" not in shape else FILTER.validate_python(shape["filter"])
    page = PageRequest(
        k=shape.get("k", 10),
        offset=shape.get("offset", 0),
        exclude=exclude if shape.get("exclude") else (),
        filter=node,
    )
    view = views[kind]
    query = SearchQuery(None, "things", TextSide("words", "query.text"), page, levers=levers)

    def run() -> Any:
        plan = checked_plan(view, query, VectorSpace(None, DIM))
        rerank = levers.rerank
        if rerank is not None and rerank.by == "variant":
            if view.live:
                raise AssertionError("the planner refuses a live re-rank by variant")
            plan = dataclasses.replace(plan, rerank=(VectorSpace(None, 5), views["other"]))
        vectors = Vectors(query_vector if plan.wants_vector else None, other_vector)
        return execute(plan, vectors)

    return _outcome(run)


@pytest.mark.parametrize("case", list(CASES))
def test_every_view_gives_the_same_answer(views: dict[str, CollectionView], case: str) -> None:
    bundle = views["bundle"]
    assert isinstance(bundle, BundleView)
    stored = bundle.served.collection.vectors
    other = views["other"]
    assert isinstance(other, BundleView)
    rng = np.random.default_rng(len(case))
    for trial in range(4):
        row = int(rng.integers(COUNT))
        # A stored vector (exact ties on top) or a random one.
        query = stored[row].copy() if trial % 2 else _unit(rng.standard_normal((1, DIM)))[0]
        other_query = other.served.collection.vectors[row].copy()
        exclude = frozenset([f"item-{n}" for n in rng.choice(COUNT, size=20)] + ["unknown"])
        by_variant = CASES[case][0].rerank is not None and CASES[case][0].rerank.by == "variant"
        kinds = [kind for kind in KINDS if not (by_variant and "live" in kind)]
        outcomes = {kind: _run(views, kind, case, query, other_query, exclude) for kind in kinds}
        first = outcomes["bundle"]
        for kind, outcome in outcomes.items():
            assert outcome == first, f"{case}, trial {trial}: {kind} differs from the bundle"
    if "window under the page" in case:
        assert first[0] == ("refused" if "hybrid" in case else "page")


def test_plain_searches_run_together_equal_one_by_one(views: dict[str, CollectionView]) -> None:
    bundle = views["bundle"]
    assert isinstance(bundle, BundleView)
    stored = bundle.served.collection.vectors
    requests = [
        PageRequest(k=5),
        PageRequest(k=3, offset=4, exclude={"item-1", "item-40", "nope"}),
        PageRequest(k=20),
    ]
    queries = [stored[0].copy(), stored[17].copy(), _unit(np.ones((1, DIM)))[0]]
    plans = [
        checked_plan(
            bundle, SearchQuery(None, "things", TextSide("x", "q"), r), VectorSpace(None, DIM)
        )
        for r in requests
    ]
    together = run_together(plans, queries)
    for kind in KINDS:
        alone = [
            execute(
                checked_plan(
                    views[kind],
                    SearchQuery(None, "things", TextSide("x", "q"), r),
                    VectorSpace(None, DIM),
                ),
                Vectors(q),
            )
            for r, q in zip(requests, queries, strict=True)
        ]
        assert together == alone, kind
