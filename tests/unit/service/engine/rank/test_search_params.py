"""Search parameters (service.engine.rank.search_params): index kinds, the defaults in force, a
request's override checked against the index, and faiss's per-search parameters."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import faiss
import pytest

from service.engine.rank.search_params import (
    EffectiveParams,
    SearchOverride,
    default_params,
    faiss_parameters,
    index_kind,
    on_disk,
    resolve,
)
from service.exceptions import SearchParamNotApplicableError
from service.lifecycle.index_placement import place_index
from tests.fakes.clustered import built_index, clustered_vectors, served_index
from tests.fakes.fake_faiss import AdversarialTieIndex, FakeGpuFaiss

VECTORS = clustered_vectors(count=600, dim=8, clusters=12)


def _served(factory: str, **params: int) -> Any:
    index = built_index(VECTORS, factory)
    for key, value in params.items():
        faiss.ParameterSpace().set_index_parameter(index, key, float(value))
    return served_index(VECTORS, index, factory).collection


@pytest.mark.parametrize(
    ("factory", "kind"),
    [
        ("Flat", "flat"),
        ("HNSW8", "hnsw"),
        ("IVF8,Flat", "ivf_flat"),
        ("IVF8,PQ4x4np", "ivf_pq"),
        ("IVF8,SQ8", "other"),
        ("PCA4,IVF8,Flat", "other"),
    ],
)
def test_the_index_kind_comes_from_the_faiss_type(factory: str, kind: str) -> None:
    assert index_kind(_served(factory)) == kind


@pytest.mark.parametrize(
    ("factory", "kind"),
    [("Flat", "flat"), ("HNSW32", "hnsw"), ("IVF64,Flat", "ivf_flat"), ("IVF8,PQ8", "ivf_pq")],
)
def test_an_index_that_is_not_faiss_s_own_is_described_by_its_factory(
    factory: str, kind: str
) -> None:
    collection = served_index(VECTORS, AdversarialTieIndex(VECTORS), factory).collection
    assert index_kind(collection) == kind
    assert default_params(collection) == EffectiveParams()


def test_a_gpu_placed_index_is_described_by_its_cpu_original() -> None:
    index = built_index(VECTORS, "IVF8,Flat")
    index.nprobe = 3
    placed = place_index(index, "auto", search_params={"nprobe": 3}, module=FakeGpuFaiss(1))
    assert placed.device == "gpu"
    collection = served_index(VECTORS, placed.index, "IVF8,Flat").collection
    assert index_kind(collection) == "ivf_flat"
    assert default_params(collection).as_dict() == {"nprobe": 3}


def test_the_defaults_are_the_index_s_own_values() -> None:
    assert default_params(_served("Flat")).as_dict() == {}
    assert default_params(_served("IVF8,Flat", nprobe=5)).as_dict() == {"nprobe": 5}
    assert default_params(_served("HNSW8", efSearch=48)).as_dict() == {"ef_search": 48}
    assert default_params(_served("PCA4,IVF8,Flat", nprobe=2)).as_dict() == {"nprobe": 2}


def test_no_override_is_the_defaults_and_passes_nothing_to_faiss() -> None:
    collection = _served("IVF8,Flat", nprobe=5)
    params = resolve(collection, None, "search_params")
    assert params == EffectiveParams(nprobe=5, overridden=False)
    assert faiss_parameters(collection.index, params, None) is None
    # The defaults given explicitly are no override either.
    assert not resolve(collection, SearchOverride(nprobe=5), "search_params").overridden


@pytest.mark.parametrize(
    ("factory", "override", "message"),
    [
        ("Flat", SearchOverride(nprobe=4), r"search_params\.nprobe: .* flat \(Flat\).* IVF"),
        ("HNSW8", SearchOverride(nprobe=4), r"search_params\.nprobe: .* hnsw .* IVF indexes"),
        ("Flat", SearchOverride(ef_search=4), r"search_params\.ef_search: .* flat .* HNSW"),
        ("IVF8,Flat", SearchOverride(ef_search=4), r"ef_search: .* ivf_flat .* HNSW indexes"),
        ("IVF8,Flat", SearchOverride(nprobe=9), r"nprobe: 9 is more than the index's nlist=8"),
    ],
)
def test_a_parameter_the_index_does_not_take_is_refused(
    factory: str, override: SearchOverride, message: str
) -> None:
    with pytest.raises(SearchParamNotApplicableError, match=message):
        resolve(_served(factory), override, "search_params")


def test_nprobe_up_to_nlist_and_exact_on_any_index_are_taken() -> None:
    ivf = _served("IVF8,Flat")
    assert resolve(ivf, SearchOverride(nprobe=8), "p").as_dict() == {"nprobe": 8}
    hnsw = _served("HNSW8")
    assert resolve(hnsw, SearchOverride(ef_search=200), "p").as_dict() == {"ef_search": 200}
    for collection in (ivf, hnsw, _served("Flat")):
        exact = resolve(collection, SearchOverride(exact=True), "p")
        assert exact.exact
        assert exact.as_dict() == {"exact": True}


def test_faiss_parameters_carry_the_override_and_the_selector() -> None:
    ivf = _served("IVF8,Flat", nprobe=2)
    params = faiss_parameters(ivf.index, resolve(ivf, SearchOverride(nprobe=6), "p"), None)
    assert isinstance(params, faiss.SearchParametersIVF)
    assert (params.nprobe, params.sel) == (6, None)
    hnsw = _served("HNSW8", efSearch=16)
    selector = faiss.IDSelectorRange(0, 10)
    params = faiss_parameters(hnsw.index, resolve(hnsw, None, "p"), selector)
    assert isinstance(params, faiss.SearchParametersHNSW)
    assert params.efSearch == 16  # a selector search keeps the index's own value
    wrapped = _served("PCA4,IVF8,Flat", nprobe=2)
    params = faiss_parameters(wrapped.index, resolve(wrapped, SearchOverride(nprobe=7), "p"), None)
    assert isinstance(params, faiss.SearchParametersPreTransform)
    # The wrapped index answers with the inner nprobe: all 8 lists scanned finds the exact top.
    _, rows = wrapped.index.search(VECTORS[:1], 5, params=params)
    assert int(rows[0][0]) >= 0


def test_an_override_never_touches_the_shared_index() -> None:
    collection = _served("IVF8,Flat", nprobe=2)
    seen: list[int] = []

    def search() -> None:
        params = resolve(collection, SearchOverride(nprobe=8), "p")
        faiss_params = faiss_parameters(collection.index, params, None)
        collection.index.search(VECTORS[:4], 5, params=faiss_params)
        seen.append(int(collection.index.nprobe))

    threads = [threading.Thread(target=search) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [2, 2, 2, 2]
    assert int(collection.index.nprobe) == 2


def test_on_disk_inverted_lists_are_reported(tmp_path: Path) -> None:
    assert not on_disk(_served("IVF8,Flat"))
    assert not on_disk(_served("HNSW8"))
    index = faiss.index_factory(8, "IVF8,Flat", faiss.METRIC_INNER_PRODUCT)
    index.train(VECTORS)
    lists = faiss.OnDiskInvertedLists(index.nlist, index.code_size, str(tmp_path / "lists"))
    index.replace_invlists(lists, True)
    lists.this.disown()
    index.add(VECTORS)
    assert on_disk(served_index(VECTORS, index, "IVF8,Flat").collection)
