"""Placing faiss indexes for serving: the selection logic against fake faiss modules (no GPU
here), and the real faiss-cpu build of this machine."""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np
import numpy.typing as npt
import pytest

from service.engine.rank.gpu_index import GPU_MAX_K, GpuSearchIndex
from service.lifecycle.index_placement import FaissPlacementError, faiss_gpu_count, place_index
from storage.index_files import build_index
from tests.fakes.fake_faiss import FakeCpuFaiss, FakeGpuFaiss, FakeResources


def unit_vectors(n: int, d: int, seed: int = 0) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, d)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def test_this_machine_faiss_cpu_has_no_gpu_support() -> None:
    assert faiss_gpu_count() == 0
    index = build_index(unit_vectors(10, 4))
    placed = place_index(index, "auto")
    assert (placed.index, placed.device) == (index, "cpu")
    with pytest.raises(FaissPlacementError, match="faiss_device=gpu"):
        place_index(index, "gpu")


@pytest.mark.parametrize(
    ("module", "count"),
    [(FakeCpuFaiss(), 0), (FakeGpuFaiss(0), 0), (FakeGpuFaiss(2), 2)],
)
def test_gpu_count_needs_gpu_support_and_a_gpu(module: Any, count: int) -> None:
    assert faiss_gpu_count(module) == count


def test_cpu_setting_never_touches_the_gpu() -> None:
    module = FakeGpuFaiss(1)
    index = build_index(unit_vectors(10, 4))
    placed = place_index(index, "cpu", module=module)
    assert (placed.index, placed.device) == (index, "cpu")
    assert module.clones == []


@pytest.mark.parametrize(
    ("module", "reason"),
    [(FakeCpuFaiss(), "no GPU support"), (FakeGpuFaiss(0), "sees no GPU")],
)
def test_auto_stays_on_cpu_without_a_usable_gpu(module: Any, reason: str) -> None:
    index = build_index(unit_vectors(10, 4))
    placed = place_index(index, "auto", module=module)
    assert (placed.index, placed.device) == (index, "cpu")
    assert reason in placed.reason
    with pytest.raises(FaissPlacementError, match=reason):
        place_index(index, "gpu", module=module)


@pytest.mark.parametrize("factory", ["Flat", "IVF4,Flat"])
def test_auto_moves_flat_and_ivf_indexes_to_gpu_zero(factory: str) -> None:
    module = FakeGpuFaiss(1)
    vectors = unit_vectors(200, 8)
    index = build_index(vectors, factory)
    placed = place_index(index, "auto", module=module)
    assert placed.device == "gpu"
    assert isinstance(placed.index, GpuSearchIndex)
    assert placed.index.cpu is index
    ((resources, device, cloned),) = module.clones
    assert isinstance(resources, FakeResources)
    assert (device, cloned) == (0, index)
    assert placed.index.ntotal == 200


def test_all_gpu_indexes_share_one_resources_object_and_one_lock() -> None:
    module = FakeGpuFaiss(1)
    first = place_index(build_index(unit_vectors(10, 4)), "auto", module=module).index
    second = place_index(build_index(unit_vectors(12, 4)), "gpu", module=module).index
    assert module.clones[0][0] is module.clones[1][0]
    assert first.lock is second.lock


def test_search_params_are_set_on_the_gpu_clone() -> None:
    module = FakeGpuFaiss(1)
    index = build_index(unit_vectors(200, 8), "IVF4,Flat")
    placed = place_index(index, "auto", search_params={"nprobe": 3}, module=module)
    assert placed.index.gpu.params == {"nprobe": 3.0}


def test_an_index_kind_without_gpu_code_stays_on_cpu_under_auto_and_refuses_under_gpu() -> None:
    module = FakeGpuFaiss(1)
    index = build_index(unit_vectors(50, 8), "HNSW8")
    placed = place_index(index, "auto", module=module)
    assert (placed.index, placed.device) == (index, "cpu")
    assert "not implemented on GPU" in placed.reason
    with pytest.raises(FaissPlacementError, match="cannot move this index"):
        place_index(index, "gpu", module=module)


def test_gpu_search_answers_like_the_cpu_and_large_k_runs_on_the_cpu_copy() -> None:
    module = FakeGpuFaiss(1)
    vectors = unit_vectors(GPU_MAX_K + 100, 8)
    index = build_index(vectors)
    placed = place_index(index, "auto", module=module).index
    query = vectors[:1]
    for got, expected in zip(placed.search(query, 5), index.search(query, 5), strict=True):
        np.testing.assert_array_equal(got, expected)
    for k in (GPU_MAX_K, GPU_MAX_K + 1):
        scores, rows = placed.search(query, k)
        assert scores.shape == rows.shape == (1, k)
    assert placed.gpu.searches == [5, GPU_MAX_K]


@pytest.mark.gpu
@pytest.mark.parametrize(("factory", "params"), [("Flat", {}), ("IVF16,Flat", {"nprobe": 16})])
def test_a_real_gpu_index_answers_like_the_cpu_one(
    factory: str, params: dict[str, float | int | str]
) -> None:
    if faiss_gpu_count() == 0:
        pytest.skip("faiss has no GPU here (install the `gpu` extra on a GPU machine)")
    vectors = unit_vectors(3000, 32)
    index = build_index(vectors, factory)
    for key, value in params.items():
        faiss.ParameterSpace().set_index_parameter(index, key, float(value))
    placed = place_index(index, "gpu", search_params=params)
    assert placed.device == "gpu"
    queries = vectors[:20]
    for k in (10, GPU_MAX_K + 1):
        gpu_scores, gpu_rows = placed.index.search(queries, k)
        cpu_scores, cpu_rows = index.search(queries, k)
        np.testing.assert_allclose(gpu_scores, cpu_scores, atol=1e-4)
        assert (gpu_rows[:, 0] == cpu_rows[:, 0]).all()


def test_an_on_disk_index_stays_on_cpu_under_auto_and_refuses_under_gpu() -> None:
    index = faiss.index_factory(8, "IVF4,Flat", faiss.METRIC_INNER_PRODUCT)
    placed = place_index(index, "auto", on_disk=True, module=FakeGpuFaiss(1))
    assert placed.device == "cpu"
    assert placed.index is index
    assert "on disk" in placed.reason
    with pytest.raises(FaissPlacementError, match="on disk"):
        place_index(index, "gpu", on_disk=True, module=FakeGpuFaiss(1))
