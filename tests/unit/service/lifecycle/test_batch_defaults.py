"""The batching and admission limits that follow where the encoders run
(service.lifecycle.batch_defaults): a CPU's and a GPU's defaults, and settings that always win."""

from __future__ import annotations

import pytest

from service.lifecycle.batch_defaults import (
    CPU_DEFAULTS,
    GPU_DEFAULTS,
    batch_limits,
    device_defaults,
    overload_limit,
)
from service.settings import Settings

CPU = ["CPUExecutionProvider"]
CUDA = ["CUDAExecutionProvider", "CPUExecutionProvider"]
TENSORRT = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]


@pytest.mark.parametrize(
    ("providers", "defaults"),
    [
        pytest.param(CPU, CPU_DEFAULTS, id="cpu"),
        pytest.param(CUDA, GPU_DEFAULTS, id="cuda"),
        pytest.param(TENSORRT, GPU_DEFAULTS, id="tensorrt"),
        # What a session runs on is its first provider: CUDA listed after the CPU is unused.
        pytest.param(
            ["CPUExecutionProvider", "CUDAExecutionProvider"], CPU_DEFAULTS, id="cpu first"
        ),
        pytest.param([], CPU_DEFAULTS, id="none"),
    ],
)
def test_the_defaults_follow_the_first_provider_in_use(
    providers: list[str], defaults: object
) -> None:
    assert device_defaults(providers) == defaults


def test_the_cpu_defaults_are_the_measured_ones_and_a_gpu_batches_more() -> None:
    assert (CPU_DEFAULTS.max_batch_size, CPU_DEFAULTS.max_wait_ms) == (16, 0.0)
    assert GPU_DEFAULTS.max_batch_size > CPU_DEFAULTS.max_batch_size
    assert GPU_DEFAULTS.max_wait_ms > 0


@pytest.mark.parametrize(
    ("providers", "batch", "wait_s"),
    [pytest.param(CPU, 16, 0.0, id="cpu"), pytest.param(CUDA, 64, 0.002, id="cuda")],
)
def test_unset_batching_takes_the_device_defaults(
    providers: list[str], batch: int, wait_s: float
) -> None:
    settings = Settings(max_queue_depth=9, overload_retry_after_s=4, encoder_workers=3)
    limits = batch_limits(settings, providers)
    assert (limits.max_batch_size, limits.max_wait_s) == (batch, pytest.approx(wait_s))
    assert (limits.max_queue_depth, limits.retry_after_s, limits.workers) == (9, 4, 3)


@pytest.mark.parametrize("providers", [CPU, CUDA], ids=["cpu", "cuda"])
def test_set_batching_wins_on_every_device(providers: list[str]) -> None:
    settings = Settings(max_batch_size=5, max_wait_ms=0.0)
    limits = batch_limits(settings, providers)
    assert (limits.max_batch_size, limits.max_wait_s) == (5, 0.0)
    # Each unset one still follows the device.
    only_size = batch_limits(Settings(max_batch_size=5), providers)
    assert only_size.max_wait_s == device_defaults(providers).max_wait_ms / 1000.0


def test_overload_limit_is_one_per_encoder_worker_while_no_encoder_runs_on_a_gpu() -> None:
    settings = Settings(encoder_workers=3)
    assert overload_limit(settings, ()) == 3  # before anything is loaded
    assert overload_limit(settings, [CPU, CPU]) == 3


def test_overload_limit_is_a_full_batch_per_encoder_worker_once_one_runs_on_a_gpu() -> None:
    assert overload_limit(Settings(encoder_workers=2), [CPU, CUDA]) == 2 * 64
    # The largest batch among the encoders on a GPU; a CPU encoder's does not count.
    assert overload_limit(Settings(encoder_workers=2, max_batch_size=8), [CPU, CUDA]) == 16


def test_a_set_overload_limit_wins() -> None:
    settings = Settings(overload_concurrent_requests=5)
    assert overload_limit(settings, ()) == 5
    assert overload_limit(settings, [CUDA]) == 5
