"""Provider selection and the check on what a session really runs on (no GPU needed)."""

from __future__ import annotations

import logging

import onnxruntime as ort
import pytest

from encoders.providers import (
    CPU_PROVIDER,
    CUDA_PROVIDER,
    ProviderError,
    check_active_providers,
    select_providers,
)

TENSORRT = "TensorrtExecutionProvider"
AZURE = "AzureExecutionProvider"
CPU_ONLY_BUILD = [AZURE, CPU_PROVIDER]
GPU_BUILD = [TENSORRT, CUDA_PROVIDER, CPU_PROVIDER]


@pytest.mark.parametrize(
    ("available", "expected"),
    [
        (CPU_ONLY_BUILD, [CPU_PROVIDER]),
        ([CPU_PROVIDER], [CPU_PROVIDER]),
        ([], [CPU_PROVIDER]),
        (GPU_BUILD, [CUDA_PROVIDER, CPU_PROVIDER]),
        ([CUDA_PROVIDER, CPU_PROVIDER], [CUDA_PROVIDER, CPU_PROVIDER]),
        ([CPU_PROVIDER, CUDA_PROVIDER], [CUDA_PROVIDER, CPU_PROVIDER]),
        ([TENSORRT, CPU_PROVIDER], [CPU_PROVIDER]),
    ],
)
def test_auto_prefers_cuda_when_listed_and_never_picks_tensorrt(
    available: list[str], expected: list[str]
) -> None:
    assert select_providers("auto", available) == expected


@pytest.mark.parametrize("available", [CPU_ONLY_BUILD, GPU_BUILD, []])
def test_cpu_is_cpu_only_whatever_is_listed(available: list[str]) -> None:
    assert select_providers("cpu", available) == [CPU_PROVIDER]


def test_cuda_keeps_cpu_as_fallback_for_unsupported_nodes() -> None:
    assert select_providers("cuda", GPU_BUILD) == [CUDA_PROVIDER, CPU_PROVIDER]


@pytest.mark.parametrize("available", [CPU_ONLY_BUILD, [TENSORRT, CPU_PROVIDER], []])
def test_cuda_without_a_cuda_build_is_a_clear_error(available: list[str]) -> None:
    with pytest.raises(ProviderError, match=r"providers='cuda'.*onnxruntime-gpu"):
        select_providers("cuda", available)


def test_unknown_request_is_rejected() -> None:
    with pytest.raises(ValueError, match="providers must be one of"):
        select_providers("tpu", CPU_ONLY_BUILD)  # type: ignore[arg-type]


def test_this_machine_selects_cpu() -> None:
    if CUDA_PROVIDER in ort.get_available_providers():
        pytest.skip("this onnxruntime build offers CUDA")
    assert select_providers("auto", ort.get_available_providers()) == [CPU_PROVIDER]


def test_explicit_cuda_that_fell_back_to_cpu_raises() -> None:
    # onnxruntime-gpu on a machine without a GPU: CUDA listed and selected, session on CPU.
    with pytest.raises(ProviderError, match="could not initialise CUDA"):
        check_active_providers("cuda", [CUDA_PROVIDER, CPU_PROVIDER], [CPU_PROVIDER])


def test_auto_that_fell_back_to_cpu_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="encoders.providers"):
        check_active_providers("auto", [CUDA_PROVIDER, CPU_PROVIDER], [CPU_PROVIDER])
    assert "fell back" in caplog.text


@pytest.mark.parametrize(
    ("requested", "selected", "active"),
    [
        ("cuda", [CUDA_PROVIDER, CPU_PROVIDER], [CUDA_PROVIDER, CPU_PROVIDER]),
        ("auto", [CUDA_PROVIDER, CPU_PROVIDER], [CUDA_PROVIDER, CPU_PROVIDER]),
        ("auto", [CPU_PROVIDER], [CPU_PROVIDER]),
        ("cpu", [CPU_PROVIDER], [CPU_PROVIDER]),
    ],
)
def test_sessions_that_run_as_selected_pass_silently(
    requested: str, selected: list[str], active: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="encoders.providers"):
        check_active_providers(requested, selected, active)  # type: ignore[arg-type]
    assert caplog.records == []
