"""The onnxruntime scan of flat collections (service.engine.rank.exact_scan.ExactScan): numpy's
candidates and scores for vectors stored either way, its refusals, the committed graphs, and the
same answers through service.engine.collection.knn with and without it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import faiss
import numpy as np
import numpy.typing as npt
import pytest

from service.engine.collection.knn import nearest, nearest_many
from service.engine.rank.exact_scan import GRAPHS, ExactScan
from tests.fakes.fake_faiss import served_with

ROOT = Path(__file__).resolve().parents[5]


def _unit_rows(rng: np.random.Generator, rows: int, dim: int) -> npt.NDArray[np.float32]:
    vectors = rng.standard_normal((rows, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


@pytest.fixture(scope="module")
def scan() -> ExactScan:
    return ExactScan(threads=1)


@pytest.mark.parametrize("layout", ["rows", "columns"])
@pytest.mark.parametrize(("queries", "fetch"), [(1, 1), (3, 10), (16, 27), (5, 999), (2, 1000)])
def test_the_scan_finds_numpy_s_candidates(
    scan: ExactScan, layout: str, queries: int, fetch: int
) -> None:
    rng = np.random.default_rng(queries * 1000 + fetch)
    rows = _unit_rows(rng, 1000, 48)
    vectors = rows if layout == "rows" else np.asfortranarray(rows)
    query = _unit_rows(rng, queries, 48)
    scores, found = scan.top(query, vectors, fetch)
    assert scores.shape == found.shape == (queries, fetch)
    assert found.dtype == np.int64
    assert scores.dtype == np.float32
    products = query.astype(np.float64) @ rows.T.astype(np.float64)
    expected = np.argsort(-products, axis=1, kind="stable")[:, :fetch]
    # Seeded random rows: no two products tie, so the sets are exact.
    assert np.array_equal(np.sort(found, axis=1), np.sort(expected, axis=1))
    np.testing.assert_allclose(scores, np.take_along_axis(products, found, axis=1), atol=1e-5)


def test_the_scan_reads_a_memory_mapped_file(tmp_path: Path, scan: ExactScan) -> None:
    rng = np.random.default_rng(3)
    rows = _unit_rows(rng, 500, 16)
    np.save(tmp_path / "v.npy", rows)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    assert scan.can_scan(mapped)
    query = rows[:4]
    _, found = scan.top(query, mapped, 1)
    assert found[:, 0].tolist() == [0, 1, 2, 3]


def test_the_scan_refuses_what_it_cannot_read(scan: ExactScan) -> None:
    rows = _unit_rows(np.random.default_rng(4), 50, 8)
    query = rows[:2]
    for fetch in (0, 51):
        with pytest.raises(ValueError, match=r"fetch must lie in 1\.\.50"):
            scan.top(query, rows, fetch)
    with pytest.raises(ValueError, match="do not fit"):
        scan.top(rows[:2, :4], rows, 3)
    with pytest.raises(ValueError, match="float32"):
        scan.top(query, rows.astype(np.float64), 3)
    strided = rows[::2]
    assert not scan.can_scan(strided)
    with pytest.raises(ValueError, match="row-major or column-major"):
        scan.top(query, strided, 3)
    with pytest.raises(ValueError, match="threads must be >= 0"):
        ExactScan(threads=-1)


@pytest.mark.parametrize("layout", ["rows", "columns"])
def test_search_answers_alike_with_and_without_the_scan(scan: ExactScan, layout: str) -> None:
    """Duplicate rows everywhere (runs of exact ties cross every cut): the scan's candidates,
    rescored and ranked by the tie rule, give numpy's answers, page by page."""
    rng = np.random.default_rng(11)
    distinct = _unit_rows(rng, 40, 32)
    stored = distinct[rng.integers(0, len(distinct), size=400)]
    vectors = stored if layout == "rows" else np.asfortranarray(stored)
    index = faiss.IndexFlatIP(32)
    index.add(np.ascontiguousarray(stored))
    with_scan = served_with(vectors, index, scan=scan)
    without = served_with(vectors, index)
    queries = stored[rng.integers(0, len(stored), size=24)]
    pages = [
        (int(rng.integers(1, 30)), int(rng.integers(0, 5)), {f"item-{int(r)}" for r in row})
        for row in rng.integers(0, 400, size=(24, 3))
    ]
    both = [nearest_many(served, queries, pages) for served in (with_scan, without)]
    assert [[(h.rank, h.row, h.score) for h in hits] for hits in both[0]] == [
        [(h.rank, h.row, h.score) for h in hits] for hits in both[1]
    ]
    for query, (k, offset, exclude) in zip(queries, pages, strict=True):
        alone = [
            [(h.rank, h.row) for h in nearest(s, query, k, exclude, offset=offset)]
            for s in (with_scan, without)
        ]
        assert alone[0] == alone[1]


def test_the_committed_graphs_are_what_the_script_writes() -> None:
    if importlib.util.find_spec("onnx") is None:
        pytest.skip("the onnx package (export extra) writes the graphs")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_scan_graphs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    for layout in ("rows", "columns"):
        committed = (GRAPHS / f"scan_{layout}.onnx").read_bytes()
        assert make_scan_graphs.scan_graph(layout) == committed
