"""plan_index: the auto rule, nlist, budgets, overrides and refusals; plan_factory: a factory
string taken as given (a live collection's base), under the same rules."""

from __future__ import annotations

import pytest

from storage.index_plan import (
    FLAT_MAX_ROWS,
    HNSW_MAX_ROWS,
    MIN_POINTS_PER_CENTROID,
    IndexPlanError,
    IndexSpec,
    default_nlist,
    hnsw_bytes,
    ivf_flat_bytes,
    ivf_lists,
    ivf_pq_bytes,
    parse_byte_size,
    plan_factory,
    plan_index,
)

GIB = 2**30


def test_auto_keeps_flat_for_small_collections() -> None:
    plan = plan_index(50_000, 512, IndexSpec())
    assert (plan.kind, plan.factory, plan.parameter, plan.candidates) == ("flat", "Flat", None, ())
    assert "50000 rows < 100000" in plan.reason


def test_auto_chooses_hnsw_then_ivf_flat_then_ivf_pq_as_the_budget_shrinks() -> None:
    n, d = 1_000_000, 512
    nlist = default_nlist(n)
    assert plan_index(n, d, IndexSpec()).factory == "HNSW32,Flat"
    roomy = hnsw_bytes(n, d, 32)
    assert plan_index(n, d, IndexSpec(memory_budget_bytes=roomy)).kind == "hnsw"
    ivf = plan_index(n, d, IndexSpec(memory_budget_bytes=roomy - 1))
    assert (ivf.kind, ivf.factory, ivf.parameter) == ("ivf-flat", f"IVF{nlist},Flat", "nprobe")
    assert ivf.candidates == tuple(1 << i for i in range(nlist.bit_length()))
    assert "HNSW" in ivf.reason
    assert "does not" in ivf.reason
    budget = ivf_pq_bytes(n, d, nlist, 64)
    pq = plan_index(n, d, IndexSpec(memory_budget_bytes=budget))
    assert (pq.kind, pq.m, pq.factory) == ("ivf-pq", 64, f"IVF{nlist},PQ64x8")
    assert pq.memory_bytes <= budget
    assert ivf_flat_bytes(n, d, nlist) > budget


def test_auto_leaves_hnsw_above_its_row_limit() -> None:
    plan = plan_index(HNSW_MAX_ROWS + 1, 64, IndexSpec())
    assert plan.kind == "ivf-flat"
    assert "over the HNSW row limit" in plan.reason


def test_auto_goes_past_flat_when_the_budget_cannot_hold_it() -> None:
    n, d = 50_000, 64
    plan = plan_index(n, d, IndexSpec(memory_budget_bytes=n * 4 * d // 2))
    assert plan.kind == "ivf-pq"
    assert plan.memory_bytes <= n * 4 * d // 2
    assert n < FLAT_MAX_ROWS


def test_a_budget_below_the_smallest_code_is_refused() -> None:
    with pytest.raises(IndexPlanError, match="below even IVF-PQ"):
        plan_index(1_000_000, 512, IndexSpec(memory_budget_bytes=1_000_000))


def test_an_explicit_kind_over_the_budget_is_refused() -> None:
    with pytest.raises(IndexPlanError, match="over the memory budget"):
        plan_index(200_000, 128, IndexSpec(kind="hnsw", memory_budget_bytes=GIB // 16))


@pytest.mark.parametrize(
    ("count", "expected"), [(100, 2), (1000, 16), (10_000, 256), (1_000_000, 4096)]
)
def test_nlist_is_near_4_sqrt_n_and_trains_on_39_points_a_list(count: int, expected: int) -> None:
    nlist = default_nlist(count)
    assert nlist == expected
    assert nlist * MIN_POINTS_PER_CENTROID <= count


def test_ivf_training_sample_covers_39_points_a_list() -> None:
    plan = plan_index(4_000_000, 64, IndexSpec(kind="ivf-flat"))
    assert plan.nlist == 8192
    assert plan.train_rows == 8192 * MIN_POINTS_PER_CENTROID
    small = plan_index(5_000, 64, IndexSpec(kind="ivf-flat"))
    assert small.train_rows == 5_000


@pytest.mark.parametrize(
    ("count", "dim", "spec", "message"),
    [
        (20_000, 48, IndexSpec(kind="ivf-pq", m=7), "m=7 sub-quantizers do not divide"),
        (5_000, 48, IndexSpec(kind="ivf-pq", m=8), "at least 9984 rows"),
        (1_000, 48, IndexSpec(kind="ivf-flat", nlist=64), "nlist=64 needs at least"),
        (20, 48, IndexSpec(kind="ivf-flat"), "at least 39 rows"),
    ],
)
def test_impossible_combinations_are_refused(
    count: int, dim: int, spec: IndexSpec, message: str
) -> None:
    with pytest.raises(IndexPlanError, match=message):
        plan_index(count, dim, spec)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "hnsw", "on_disk": True}, "on-disk inverted lists need an IVF index"),
        ({"kind": "auto", "on_disk": True}, "on-disk inverted lists need an IVF index"),
        ({"kind": "flat", "nlist": 16}, "nlist applies to IVF"),
        ({"kind": "ivf-flat", "m": 8}, "does not apply to ivf-flat"),
        ({"target_recall": 1.5}, "target recall"),
        ({"kind": "annoy"}, "is not one of"),
    ],
)
def test_specs_that_never_fit_are_refused_when_made(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(IndexPlanError, match=message):
        IndexSpec(**kwargs)  # type: ignore[arg-type]


def test_overrides_are_used() -> None:
    plan = plan_index(200_000, 64, IndexSpec(kind="ivf-pq", nlist=256, m=16))
    assert plan.factory == "IVF256,PQ16x8"
    assert plan_index(200_000, 64, IndexSpec(kind="hnsw", m=12)).factory == "HNSW12,Flat"


@pytest.mark.parametrize(
    ("text", "size"),
    [("512MiB", 512 * 2**20), ("2GiB", 2 * GIB), ("1.5 GB", 1_500_000_000), ("1000", 1000)],
)
def test_byte_sizes(text: str, size: int) -> None:
    assert parse_byte_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "-5MiB", "0", "2 GiBs"])
def test_bad_byte_sizes(text: str) -> None:
    with pytest.raises(IndexPlanError, match="size"):
        parse_byte_size(text)


@pytest.mark.parametrize(
    ("factory", "lists"),
    [("IVF64,Flat", 64), ("IVF16,PQ8x8", 16), ("Flat", None), ("HNSW32,Flat", None)],
)
def test_ivf_lists_are_read_from_the_factory(factory: str, lists: int | None) -> None:
    assert ivf_lists(factory) == lists
    assert ivf_lists("IVF4_HNSW32,Flat") is None


def test_a_given_flat_factory_is_exact() -> None:
    plan = plan_factory(30, 8, "Flat")
    assert (plan.kind, plan.factory, plan.parameter, plan.candidates) == ("flat", "Flat", None, ())


@pytest.mark.parametrize("count", [4 * MIN_POINTS_PER_CENTROID, 10_000])
def test_a_given_ivf_factory_sweeps_nprobe_as_the_builder_does(count: int) -> None:
    plan = plan_factory(count, 64, "IVF4,Flat")
    built = plan_index(count, 64, IndexSpec(kind="ivf-flat", nlist=4))
    assert (plan.kind, plan.factory, plan.parameter, plan.nlist) == (
        "ivf-flat",
        "IVF4,Flat",
        "nprobe",
        4,
    )
    assert plan.candidates == built.candidates == (1, 2, 4)
    assert plan.memory_bytes == built.memory_bytes
    assert plan.train_rows == count  # a base trains on every row


def test_a_given_ivf_factory_is_flat_below_39_rows_a_list() -> None:
    plan = plan_factory(64 * MIN_POINTS_PER_CENTROID - 1, 8, "IVF64,Flat")
    assert (plan.kind, plan.factory, plan.parameter) == ("flat", "Flat", None)
    assert "fewer than 39 a list" in plan.reason
    with pytest.raises(IndexPlanError, match="nlist=64 needs at least"):
        plan_index(64 * MIN_POINTS_PER_CENTROID - 1, 8, IndexSpec(kind="ivf-flat", nlist=64))


def test_other_given_factories_are_built_as_they_are() -> None:
    pq = plan_factory(20_000, 64, "IVF16,PQ8x8")
    assert (pq.kind, pq.factory, pq.parameter, pq.candidates) == (
        "factory",
        "IVF16,PQ8x8",
        "nprobe",
        (1, 2, 4, 8, 16),
    )
    hnsw = plan_factory(20_000, 64, "HNSW32,Flat")
    assert (hnsw.kind, hnsw.factory, hnsw.parameter, hnsw.candidates) == (
        "factory",
        "HNSW32,Flat",
        None,
        (),
    )
