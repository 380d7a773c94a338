"""The page executor (service.engine.search.page_executor): pages of a re-ranked, keyword or hybrid
search of a bundle collection under filters and exclusions equal brute force written here
independently, a re-rank by another variant's vectors, keyword searches of a live collection
through writes, crashes and compactions equal an index built afresh from the items alive; a
plain search's mask made where it runs, and plain searches of one collection run together."""

from __future__ import annotations

import dataclasses
import math
import random
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from pydantic import TypeAdapter

from formats.field_types import FieldType
from service.engine.collection import bundle_view
from service.engine.collection.bundle_view import BundleView
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.live_view import LiveFields, LiveView
from service.engine.query.filter_grammar import FieldTest, Filter
from service.engine.query.levers import ITEM_TEXT, Levers, Rerank
from service.engine.query.query import PageRequest, SearchQuery, TextSide, VectorSide
from service.engine.rank.fusion import Fusion
from service.engine.rank.lexical_index import (
    K1,
    B,
    LexicalIndex,
    LexicalIndexes,
    query_terms,
    tokens,
)
from service.engine.rank.search_params import DEFAULT_PARAMS, EffectiveParams
from service.engine.search.page_executor import PageRun, Vectors, execute
from service.engine.search.pages import SearchPage
from service.engine.search.planner import SearchPlan, VectorSpace, checked_plan
from storage.columns import build_columns, infer_fields
from storage.index_files import build_index
from storage.live.collection import LiveCollection, create_collection
from storage.live.operations import Delete, Upsert
from storage.live.segment import SegmentView
from storage.live.spec import CollectionSpec
from tests.fakes.fake_faiss import served_with

DIM = 8
WORDS = [f"t{n}" for n in range(20)]
Ranking = list[tuple[int, float]]
"""Rows and scores, best first."""


@dataclasses.dataclass(frozen=True)
class LeverInputs:
    """A lever search's vectors and keywords, as the tests below hand them over."""

    vector: np.ndarray | None
    terms: list[str] | None
    field: str | None
    other: ServedCollection | None = None
    other_vector: np.ndarray | None = None


def _query(page: PageRequest, levers: Levers) -> SearchQuery:
    return SearchQuery(None, "things", TextSide("words", "query.text"), page, levers=levers)


def bundle_page(
    served: ServedCollection,
    lexical: LexicalIndexes,
    page: PageRequest,
    levers: Levers,
    inputs: LeverInputs,
    faiss_threads: int,
    params: EffectiveParams,
) -> SearchPage:
    """The executor's page of a bundle view of ``served`` (keyword indexes ``lexical``)."""
    view = BundleView(dataclasses.replace(served, lexical=lexical), faiss_threads)
    plan = checked_plan(view, _query(page, levers), VectorSpace(None, DIM))
    plan = dataclasses.replace(plan, params=params, terms=inputs.terms, field=inputs.field)
    if inputs.other is not None:
        plan = dataclasses.replace(
            plan, rerank=(VectorSpace(None, 5), BundleView(inputs.other, faiss_threads))
        )
    return execute(plan, Vectors(inputs.vector, inputs.other_vector))


def live_page_with_levers(
    view: SegmentView,
    name: str,
    lexical: LexicalIndexes,
    page: PageRequest,
    levers: Levers,
    inputs: LeverInputs,
) -> SearchPage:
    """The executor's page of a live view of ``view``."""
    live = LiveView(view, name, LiveFields.of(name, view.fields), lexical)
    plan = checked_plan(live, _query(page, levers), VectorSpace(None, DIM))
    plan = dataclasses.replace(plan, terms=inputs.terms, field=inputs.field)
    return execute(plan, Vectors(inputs.vector, inputs.other_vector))


def _unit(values: np.ndarray) -> npt.NDArray[np.float32]:
    unit: npt.NDArray[np.float32] = (values / np.linalg.norm(values, axis=1, keepdims=True)).astype(
        np.float32
    )
    return unit


def _bundle(seed: int, count: int = 400) -> tuple[ServedCollection, list[str | None]]:
    """A served collection of ``count`` rows (Flat index) with a ``text`` (missing on some
    rows) and a ``cat`` field; some rows repeat another's vector, and some its text too (exact
    ties in both legs). Its rows' texts."""
    rng = np.random.default_rng(seed)
    vectors = _unit(rng.standard_normal((count, DIM)))
    weights = 1.0 / np.arange(1, len(WORDS) + 1)
    texts: list[str | None] = [
        None
        if rng.random() < 0.08
        else " ".join(rng.choice(WORDS, size=int(rng.integers(1, 9)), p=weights / weights.sum()))
        for _ in range(count)
    ]
    copies = rng.choice(count, size=60, replace=False)
    for source, target in zip(copies[:30], copies[30:], strict=True):
        vectors[target] = vectors[source]
        if rng.random() < 0.5:
            texts[target] = texts[source]
    cats = [str(rng.choice(["a", "b", "c"])) for _ in range(count)]
    metadata: list[Mapping[str, object]] = [
        {"cat": cat} if text is None else {"cat": cat, "text": text}
        for cat, text in zip(cats, texts, strict=True)
    ]
    plain = served_with(vectors, build_index(vectors))
    collection = dataclasses.replace(
        plain.collection,
        metadata=metadata,
        columns=build_columns(metadata, infer_fields(metadata)),
    )
    return dataclasses.replace(plain, collection=collection), texts


# -- brute force -------------------------------------------------------------------------------


def _ordered(scores: dict[int, float]) -> Ranking:
    """The tie rule: score descending, then row ascending."""
    return sorted(scores.items(), key=lambda entry: (-entry[1], entry[0]))


def _bm25(texts: list[str | None], terms: list[str]) -> dict[int, float]:
    """BM25 (Lucene's, as the module docstring gives it) of every row holding a term, with the
    statistics of every row (a row without text: a document of length 0)."""
    documents = [tokens(text) if text else [] for text in texts]
    average = sum(len(document) for document in documents) / len(documents)
    scores: dict[int, float] = {}
    for term in terms:
        df = sum(1 for document in documents if term in document)
        if df == 0:
            continue
        idf = math.log(1.0 + (len(documents) - df + 0.5) / (df + 0.5))
        for row, document in enumerate(documents):
            tf = document.count(term)
            if tf:
                norm = K1 * (1.0 - B + B * len(document) / average)
                scores[row] = scores.get(row, 0.0) + idf * tf / (tf + norm)
    return scores


def _dense(vectors: np.ndarray, query: np.ndarray, rows: list[int]) -> dict[int, float]:
    """A flat index's scores: float64 inner products rounded to float32."""
    exact = vectors[rows].astype(np.float64) @ query.astype(np.float64)
    return {row: float(np.float32(score)) for row, score in zip(rows, exact, strict=True)}


def _exact(vectors: np.ndarray, query: np.ndarray, rows: list[int]) -> dict[int, float]:
    exact = vectors[rows].astype(np.float64) @ query.astype(np.float64)
    return {row: float(score) for row, score in zip(rows, exact, strict=True)}


def _fused(dense: Ranking, lexical: Ranking, fusion: Fusion) -> Ranking:
    """The fusion of the module docstring, one row at a time (dense part first)."""
    scores: dict[int, float] = {}
    if fusion.method == "rrf":
        for leg in (dense, lexical):
            for rank, (row, _) in enumerate(leg, start=1):
                scores[row] = scores.get(row, 0.0) + 1.0 / (fusion.k + rank)
        return _ordered(scores)
    for leg, weight in ((dense, fusion.alpha), (lexical, 1.0 - fusion.alpha)):
        values = [score for _, score in leg]
        low, high = (min(values), max(values)) if values else (0.0, 0.0)
        for row, score in leg:
            normalised = 1.0 if high == low else (score - low) / (high - low)
            scores[row] = scores.get(row, 0.0) + weight * normalised
    return _ordered(scores)


def _expected(
    served: ServedCollection,
    texts: list[str | None],
    levers: Levers,
    query: np.ndarray,
    terms: list[str],
    kept: list[int],
    window: int,
) -> Ranking:
    """The whole ranking a search's pages slice, by brute force over the ``kept`` rows."""
    vectors = served.collection.vectors
    lexical = _ordered({row: s for row, s in _bm25(texts, terms).items() if row in set(kept)})
    if levers.mode == "lexical":
        return lexical
    dense = _ordered(_dense(vectors, query, kept))[:window]
    if levers.mode == "hybrid":
        return _fused(dense, lexical[:window], levers.fusion)[:window]
    assert levers.rerank == Rerank("exact")
    return _ordered(_exact(vectors, query, [row for row, _ in dense]))


def _all_pages(
    search: Callable[[PageRequest], SearchPage], k: int, make: Callable[[int, int], PageRequest]
) -> tuple[list[SearchPage], list[int]]:
    """Pages ``offset`` 0, k, 2k ... as long as each says a next one starts after it, and the
    offsets asked."""
    pages, offsets, offset = [], [], 0
    while True:
        page = search(make(offset, k))
        pages.append(page)
        offsets.append(offset)
        if page.next_offset is None:
            return pages, offsets
        assert page.next_offset == offset + k
        offset = page.next_offset


def _assert_pages(
    pages: list[SearchPage], offsets: list[int], k: int, expected: Ranking, ids: list[str]
) -> None:
    found = [hit for page in pages for hit in page.hits]
    assert [hit.item_id for hit in found] == [ids[row] for row, _ in expected]
    assert [hit.row for hit in found] == [row for row, _ in expected]
    assert [hit.rank for hit in found] == list(range(1, len(found) + 1))
    assert [hit.score for hit in found] == pytest.approx(
        [score for _, score in expected], rel=1e-9, abs=1e-12
    )
    for page, offset in zip(pages, offsets, strict=True):
        assert [hit.rank for hit in page.hits][:1] in ([], [offset + 1])
        assert len(page.hits) <= k
        end = offset + len(page.hits)
        assert page.next_offset == (end if end < len(expected) and len(page.hits) == k else None)


MODES = {
    "rerank exact": Levers(rerank=Rerank("exact")),
    "lexical": Levers(mode="lexical"),
    "rrf 60": Levers(mode="hybrid", fusion=Fusion("rrf", k=60)),
    "rrf 2": Levers(mode="hybrid", fusion=Fusion("rrf", k=2)),
    "weighted 0.3": Levers(mode="hybrid", fusion=Fusion("weighted", alpha=0.3)),
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(("window", "k"), [(30, 6), (None, 20)])
def test_bundle_pages_equal_brute_force(mode: str, window: int | None, k: int) -> None:
    served, texts = _bundle(seed=len(mode))
    collection = served.collection
    levers = dataclasses.replace(MODES[mode], window=window)
    lexical = LexicalIndexes()
    rng = np.random.default_rng(7)
    for search in range(8):
        if search % 2:
            query = collection.vectors[int(rng.integers(collection.count))].copy()  # ties on top
        else:
            query = _unit(rng.standard_normal((1, DIM)))[0]
        terms = query_terms(" ".join(rng.choice(WORDS[:12], size=int(rng.integers(1, 4)))))
        cat = [None, "a", "b"][search % 3]
        exclude = frozenset(
            [f"item-{row}" for row in rng.choice(collection.count, size=15)] + ["unknown"]
        )
        kept = [
            row
            for row in range(collection.count)
            if (cat is None or collection.metadata[row]["cat"] == cat)
            and collection.ids[row] not in exclude
        ]
        depth = window if window is not None else 100
        expected = _expected(served, texts, levers, query, terms, kept, depth)
        inputs = LeverInputs(
            vector=None if levers.mode == "lexical" else query,
            terms=None if levers.mode == "dense" else terms,
            field=None if levers.mode == "dense" else "text",
        )

        def make(
            offset: int, size: int, cat: str | None = cat, exclude: frozenset[str] = exclude
        ) -> PageRequest:
            return PageRequest(
                k=size,
                offset=offset,
                exclude=exclude,
                filter=None if cat is None else FieldTest(field="cat", eq=cat),
            )

        def page(request: PageRequest, inputs: LeverInputs = inputs) -> SearchPage:
            found = bundle_page(served, lexical, request, levers, inputs, 1, DEFAULT_PARAMS)
            assert found.mode == levers.mode
            return found

        pages, offsets = _all_pages(page, k, make)
        if levers.mode != "lexical":
            assert len(expected) <= depth
            assert offsets[-1] + k <= depth  # the pages end at the window
        _assert_pages(pages, offsets, k, expected, list(collection.ids))
    # One index of the field, grown once, served every search.
    assert list(lexical.by_field) == ([] if levers.mode == "dense" else ["text"])


def test_a_lexical_search_counts_every_match_and_a_window_cuts_a_hybrid_one() -> None:
    served, texts = _bundle(seed=5)
    terms = ["t0"]  # the commonest word: more matches than a window
    matches = sum(1 for text in texts if text and "t0" in tokens(text))
    assert matches > 40
    inputs = LeverInputs(vector=None, terms=terms, field="text")
    lexical = LexicalIndexes()
    page = bundle_page(
        served, lexical, PageRequest(k=10), Levers(mode="lexical"), inputs, 1, DEFAULT_PARAMS
    )
    assert len(page.hits) == 10
    assert page.next_offset == 10
    last = bundle_page(
        served,
        lexical,
        PageRequest(k=10, offset=matches - 3),
        Levers(mode="lexical"),
        inputs,
        1,
        DEFAULT_PARAMS,
    )
    assert len(last.hits) == 3
    assert last.next_offset is None
    hybrid = Levers(mode="hybrid", window=20)
    query = served.collection.vectors[0]
    both = LeverInputs(vector=query, terms=terms, field="text")
    end = bundle_page(
        served, lexical, PageRequest(k=10, offset=10), hybrid, both, 1, DEFAULT_PARAMS
    )
    assert [hit.rank for hit in end.hits] == list(range(11, 21))
    assert end.next_offset is None  # the fused ranking ends at the window


# -- a re-rank by another variant --------------------------------------------------------------


def _variant(served: ServedCollection, seed: int) -> ServedCollection:
    """Another variant's collection of 80% of ``served``'s items, in another order, with
    vectors of another dimension."""
    rng = np.random.default_rng(seed)
    ids = list(served.collection.ids)
    ids = [ids[n] for n in rng.permutation(len(ids))[: int(0.8 * len(ids))]]
    vectors = _unit(rng.standard_normal((len(ids), 5)))
    vectors[1] = vectors[0]  # a tie
    plain = served_with(vectors, build_index(vectors), variant="other")
    collection = dataclasses.replace(
        plain.collection,
        ids=ids,
        row_of={item: row for row, item in enumerate(ids)},
        metadata=[{} for _ in ids],
    )
    return dataclasses.replace(plain, collection=collection)


VARIANT_FIRST_STAGES = {
    "dense": Levers(),
    "lexical": Levers(mode="lexical"),
    "hybrid": Levers(mode="hybrid"),
}


@pytest.mark.parametrize("mode", list(VARIANT_FIRST_STAGES))
def test_a_rerank_by_another_variant_orders_the_window_by_its_vectors(mode: str) -> None:
    served, texts = _bundle(seed=11)
    other = _variant(served, seed=12)
    collection, theirs = served.collection, other.collection
    rng = np.random.default_rng(13)
    window, k = 40, 8
    levers = dataclasses.replace(
        VARIANT_FIRST_STAGES[mode], window=window, rerank=Rerank("variant", "other")
    )
    lexical = LexicalIndexes()
    for _ in range(4):
        query = _unit(rng.standard_normal((1, DIM)))[0]
        other_query = theirs.vectors[int(rng.integers(theirs.count))].copy()
        terms = query_terms(" ".join(rng.choice(WORDS[:6], size=2)))
        kept = list(range(collection.count))
        if mode == "dense":
            first = _ordered(_dense(collection.vectors, query, kept))[:window]
        else:
            stage = VARIANT_FIRST_STAGES[mode]
            first = _expected(served, texts, stage, query, terms, kept, window)[:window]
        present = [row for row, _ in first if collection.ids[row] in theirs.row_of]
        assert len(present) < len(first)  # some items the other variant lacks drop out
        scores = {
            row: float(
                theirs.vectors[theirs.row_of[collection.ids[row]]].astype(np.float64)
                @ other_query.astype(np.float64)
            )
            for row in present
        }
        expected = _ordered(scores)
        inputs = LeverInputs(
            vector=None if mode == "lexical" else query,
            terms=None if mode == "dense" else terms,
            field=None if mode == "dense" else "text",
            other=other,
            other_vector=other_query,
        )

        def make(offset: int, size: int) -> PageRequest:
            return PageRequest(k=size, offset=offset)

        def page(request: PageRequest, inputs: LeverInputs = inputs) -> SearchPage:
            return bundle_page(served, lexical, request, levers, inputs, 1, DEFAULT_PARAMS)

        pages, offsets = _all_pages(page, k, make)
        _assert_pages(pages, offsets, k, expected, list(collection.ids))
        assert pages[0].hits[0].metadata == collection.metadata[expected[0][0]]


# -- a live collection ---------------------------------------------------------------------------


LIVE_WORDS = ["red", "green", "Blue", "cat", "dog", "sun", "moon", "tree", "über", "café"]
VOCABULARY = sorted({word.lower() for word in LIVE_WORDS})
LiveModel = dict[str, tuple[str | None, str]]
"""Id → (the text a keyword search reads, cat) of the items alive."""


def _fresh_scores(model: LiveModel, terms: list[str]) -> dict[str, float]:
    """Scores of an index built afresh over the model's items."""
    ids = sorted(model)
    index = LexicalIndex()
    with index.lock:
        index.append(model[item][0] for item in ids)
        hits = index.score(terms, np.ones(len(ids), dtype=np.bool_))
    return {
        ids[row]: score for row, score in zip(hits.rows.tolist(), hits.scores.tolist(), strict=True)
    }


def _assert_live_search(
    view: SegmentView,
    lexical: LexicalIndexes,
    model: LiveModel,
    terms: list[str],
    cat: str | None = None,
    exclude: frozenset[str] = frozenset(),
) -> None:
    page = PageRequest(
        k=1000, exclude=exclude, filter=None if cat is None else FieldTest(field="cat", eq=cat)
    )
    inputs = LeverInputs(vector=None, terms=terms, field=ITEM_TEXT)
    found = live_page_with_levers(view, "things", lexical, page, Levers(mode="lexical"), inputs)
    fresh = _fresh_scores(model, terms)
    expected = {
        item
        for item, (text, item_cat) in model.items()
        if text is not None
        and set(terms) & set(tokens(text))
        and (cat is None or item_cat == cat)
        and item not in exclude
    }
    assert {hit.item_id for hit in found.hits} == expected
    assert len(found.hits) == len(expected)
    assert found.next_offset is None
    for hit in found.hits:
        assert hit.row == view.row_of(hit.item_id)
        assert hit.score == pytest.approx(fresh[hit.item_id], rel=1e-12)
    order = [(-hit.score, hit.row) for hit in found.hits]
    assert order == sorted(order)
    assert [hit.rank for hit in found.hits] == list(range(1, len(found.hits) + 1))


def _assert_every_word(view: SegmentView, lexical: LexicalIndexes, model: LiveModel) -> None:
    for word in VOCABULARY:
        _assert_live_search(view, lexical, model, [word])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_live_keyword_search_follows_writes_crashes_and_compactions(
    tmp_path: Path, seed: int
) -> None:
    rng, numbers = random.Random(seed), np.random.default_rng(seed)
    spec = CollectionSpec(
        name="things", dim=4, fields={"cat": FieldType.STRING, "text": FieldType.STRING}
    )
    folder = create_collection(tmp_path, spec)
    collection = LiveCollection.open(folder)
    lexical = LexicalIndexes()  # a live entry's: lives across compactions, not reopens
    model: LiveModel = {}
    universe = [f"id{n}" for n in range(40)]
    before: tuple[SegmentView, LiveModel] | None = None
    compactions = crashes = 0

    def text() -> str:
        return " ".join(rng.choice(LIVE_WORDS) for _ in range(rng.randint(1, 5)))

    for _step in range(60):
        if rng.random() < 0.65 or not model:
            ids = rng.sample(universe, rng.randint(1, 4))
            texts: list[str | None] = []
            metadata: list[dict[str, object]] = []
            for item in ids:
                cat, roll = rng.choice("ab"), rng.random()
                if roll < 0.6:  # the text the item was embedded from wins over a text field
                    texts.append(text())
                    metadata.append({"cat": cat, "text": "ignored words"})
                elif roll < 0.85:  # a client's vector: its text field is read
                    texts.append(None)
                    metadata.append({"cat": cat, "text": text()})
                else:  # no text at all
                    texts.append(None)
                    metadata.append({"cat": cat})
                field = metadata[-1].get("text")
                model[item] = (texts[-1] or (field if isinstance(field, str) else None), cat)
            vectors = _unit(numbers.standard_normal((len(ids), 4)))
            collection.stage(Upsert(tuple(ids), vectors, tuple(metadata), tuple(texts)))
        else:
            ids = [*rng.sample(sorted(model), min(len(model), rng.randint(1, 3))), "nobody"]
            collection.stage(Delete(tuple(ids)))
            for item in ids:
                model.pop(item, None)
        collection.commit()
        if rng.random() < 0.1 or not model:  # an emptied collection compacts too
            collection.compact()
            compactions += 1
        if rng.random() < 0.08:
            # A crash: the object is dropped unclosed and the folder opened again, by a new
            # process with new live entries.
            collection = LiveCollection.open(folder)
            lexical = LexicalIndexes()
            crashes += 1
        view = collection.view()
        _assert_every_word(view, lexical, model)
        _assert_live_search(view, lexical, model, ["ignored"])  # the text field passed over
        words = rng.sample(VOCABULARY, 2)
        exclude = frozenset(rng.sample(universe, 5))
        _assert_live_search(view, lexical, model, words, rng.choice("ab"), exclude)
        if before is not None:  # a search still holding the view before this step's writes
            _assert_live_search(before[0], lexical, before[1], [rng.choice(VOCABULARY)])
        before = (view, dict(model))
    assert compactions
    assert crashes
    collection.close()


# -- plain searches: the mask made where the search runs, grouped runs ---------------------------

FILTER: TypeAdapter[Filter] = TypeAdapter(Filter)


def _served_evens(n: int = 12) -> ServedCollection:
    rows = np.random.default_rng(0).standard_normal((n, 8)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    plain = served_with(rows, build_index(rows))
    metadata = [{"even": row % 2 == 0} for row in range(n)]
    collection = dataclasses.replace(
        plain.collection, metadata=metadata, columns=build_columns(metadata, infer_fields(metadata))
    )
    return dataclasses.replace(plain, collection=collection)


def _plain_plan(collection: ServedCollection, request: PageRequest) -> SearchPlan:
    side = VectorSide((1.0,) * 8, "query.vector")
    query = SearchQuery(None, collection.name, side, request)
    return checked_plan(BundleView(collection, 1), query, VectorSpace(None, 8))


def test_a_filtered_page_builds_its_mask_once_on_the_thread_that_searches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collection = _served_evens()
    masks: list[str] = []
    real = bundle_view.filter_mask

    def counting(node: Filter, loaded: object) -> np.ndarray:
        masks.append(threading.current_thread().name)
        return real(node, loaded)  # type: ignore[arg-type]

    monkeypatch.setattr(bundle_view, "filter_mask", counting)
    request = PageRequest(k=4, filter=FILTER.validate_python({"field": "even", "eq": True}))
    search = PageRun(_plain_plan(collection, request))
    assert search.group is None  # a filtered search runs alone
    worker = threading.Thread(
        target=lambda: found.append(search(collection.collection.vectors[:1])), name="worker"
    )
    found: list[SearchPage] = []
    worker.start()
    worker.join()
    assert masks == ["worker"]
    rows = [h.row for h in found[0].hits]
    assert rows
    assert all(row % 2 == 0 for row in rows)
    assert found[0].next_offset == 4  # 6 even rows kept, 4 shown


def test_unfiltered_searches_run_together_with_the_same_pages_as_alone() -> None:
    collection = _served_evens()
    requests = [PageRequest(k=3), PageRequest(k=2, offset=1, exclude={"item-0", "nope"})]
    searches = [PageRun(_plain_plan(collection, r)) for r in requests]
    assert searches[0].group == searches[1].group
    queries = [collection.collection.vectors[i : i + 1] for i in (0, 5)]
    together = searches[0].run_together(searches, queries)
    alone = [search(query) for search, query in zip(searches, queries, strict=True)]
    assert together == alone
    assert [p.next_offset for p in alone] == [3, 3]
