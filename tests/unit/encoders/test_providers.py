"""Provider selection and the check on what a session really runs on (no GPU needed)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from encoders.providers import (
    CPU_PROVIDER,
    CUDA_PROVIDER,
    TENSORRT_LIBRARIES,
    TENSORRT_PROVIDER,
    ProviderError,
    ProviderRequest,
    check_active_providers,
    preload_cuda_libraries,
    runs_on_gpu,
    select_providers,
    tensorrt_runtime_present,
)
from encoders.text_encoder import OnnxTextEncoder
from tests.fakes.tiny_variant import TinyWeights

AZURE = "AzureExecutionProvider"
CPU_ONLY_BUILD = [AZURE, CPU_PROVIDER]
GPU_BUILD = [TENSORRT_PROVIDER, CUDA_PROVIDER, CPU_PROVIDER]


def _present() -> bool:
    return True


def _absent() -> bool:
    return False


def _not_asked() -> bool:
    raise AssertionError("the TensorRT libraries were looked for without need")


@pytest.mark.parametrize(
    ("available", "expected"),
    [
        (CPU_ONLY_BUILD, [CPU_PROVIDER]),
        ([CPU_PROVIDER], [CPU_PROVIDER]),
        ([], [CPU_PROVIDER]),
        ([CUDA_PROVIDER, CPU_PROVIDER], [CUDA_PROVIDER, CPU_PROVIDER]),
        ([CPU_PROVIDER, CUDA_PROVIDER], [CUDA_PROVIDER, CPU_PROVIDER]),
    ],
)
def test_auto_prefers_cuda_when_listed(available: list[str], expected: list[str]) -> None:
    assert select_providers("auto", available, tensorrt_present=_not_asked) == expected


def test_auto_puts_tensorrt_first_when_listed_and_its_libraries_load() -> None:
    assert select_providers("auto", GPU_BUILD, tensorrt_present=_present) == [
        TENSORRT_PROVIDER,
        CUDA_PROVIDER,
        CPU_PROVIDER,
    ]


def test_auto_skips_tensorrt_that_the_build_lists_but_the_machine_lacks() -> None:
    # onnxruntime-gpu lists TensorRT whether or not libnvinfer is installed.
    assert select_providers("auto", GPU_BUILD, tensorrt_present=_absent) == [
        CUDA_PROVIDER,
        CPU_PROVIDER,
    ]


def test_auto_never_picks_tensorrt_without_cuda() -> None:
    available = [TENSORRT_PROVIDER, CPU_PROVIDER]
    assert select_providers("auto", available, tensorrt_present=_present) == [CPU_PROVIDER]


def test_tensorrt_request_keeps_cuda_and_cpu_behind_it() -> None:
    assert select_providers("tensorrt", GPU_BUILD, tensorrt_present=_not_asked) == [
        TENSORRT_PROVIDER,
        CUDA_PROVIDER,
        CPU_PROVIDER,
    ]


@pytest.mark.parametrize("available", [CPU_ONLY_BUILD, [CUDA_PROVIDER, CPU_PROVIDER], []])
def test_tensorrt_without_a_tensorrt_build_is_a_clear_error(available: list[str]) -> None:
    with pytest.raises(ProviderError, match=r"providers='tensorrt'.*missing.*Tensorrt"):
        select_providers("tensorrt", available)


def test_a_forced_list_is_used_as_given() -> None:
    forced = (CUDA_PROVIDER, CPU_PROVIDER)
    assert select_providers(forced, GPU_BUILD, tensorrt_present=_not_asked) == list(forced)
    assert select_providers((CPU_PROVIDER,), CPU_ONLY_BUILD) == [CPU_PROVIDER]
    assert select_providers((AZURE, CPU_PROVIDER), CPU_ONLY_BUILD) == [AZURE, CPU_PROVIDER]


def test_a_forced_list_naming_an_unlisted_provider_is_refused() -> None:
    with pytest.raises(ProviderError, match=r"missing \['CUDAExecutionProvider'\]"):
        select_providers((CUDA_PROVIDER, CPU_PROVIDER), CPU_ONLY_BUILD)


@pytest.mark.parametrize(
    ("forced", "message"),
    [
        ((), "at least one"),
        (("cuda",), "not onnxruntime provider names"),
        ((CPU_PROVIDER, CPU_PROVIDER), "repeat"),
    ],
)
def test_malformed_forced_lists_are_rejected(forced: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        select_providers(forced, GPU_BUILD)


def test_tensorrt_runtime_is_present_when_one_library_loads() -> None:
    tried: list[str] = []

    def loader(name: str) -> object:
        tried.append(name)
        if name != "libnvinfer.so.8":
            raise OSError(f"{name}: cannot open shared object file")
        return object()

    assert tensorrt_runtime_present(loader) is True
    assert tried == list(TENSORRT_LIBRARIES[: TENSORRT_LIBRARIES.index("libnvinfer.so.8") + 1])


def test_tensorrt_runtime_is_absent_when_no_library_loads() -> None:
    def loader(name: str) -> object:
        raise OSError(name)

    assert tensorrt_runtime_present(loader) is False


def test_this_machine_has_no_tensorrt_runtime() -> None:
    if tensorrt_runtime_present():
        pytest.skip("this machine has the TensorRT libraries")
    assert select_providers("auto", GPU_BUILD) == [CUDA_PROVIDER, CPU_PROVIDER]


@pytest.mark.parametrize("available", [CPU_ONLY_BUILD, GPU_BUILD, []])
def test_cpu_is_cpu_only_whatever_is_listed(available: list[str]) -> None:
    assert select_providers("cpu", available) == [CPU_PROVIDER]


def test_cuda_keeps_cpu_as_fallback_for_unsupported_nodes() -> None:
    assert select_providers("cuda", GPU_BUILD) == [CUDA_PROVIDER, CPU_PROVIDER]


@pytest.mark.parametrize("available", [CPU_ONLY_BUILD, [TENSORRT_PROVIDER, CPU_PROVIDER], []])
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


@pytest.mark.parametrize(
    ("requested", "selected", "active", "missing"),
    [
        (
            "tensorrt",
            [TENSORRT_PROVIDER, CUDA_PROVIDER, CPU_PROVIDER],
            [CUDA_PROVIDER, CPU_PROVIDER],
            TENSORRT_PROVIDER,
        ),
        (
            (TENSORRT_PROVIDER, CUDA_PROVIDER, CPU_PROVIDER),
            [TENSORRT_PROVIDER, CUDA_PROVIDER, CPU_PROVIDER],
            [CPU_PROVIDER],
            f"{TENSORRT_PROVIDER}, {CUDA_PROVIDER}",
        ),
        ((CUDA_PROVIDER,), [CUDA_PROVIDER], [CPU_PROVIDER], CUDA_PROVIDER),
    ],
)
def test_explicit_requests_that_fell_back_raise(
    requested: ProviderRequest, selected: list[str], active: list[str], missing: str
) -> None:
    with pytest.raises(ProviderError, match=f"could not initialise {missing}"):
        check_active_providers(requested, selected, active)


def test_auto_that_dropped_tensorrt_warns_but_serves(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="encoders.providers"):
        check_active_providers(
            "auto", [TENSORRT_PROVIDER, CUDA_PROVIDER, CPU_PROVIDER], [CUDA_PROVIDER, CPU_PROVIDER]
        )
    assert TENSORRT_PROVIDER in caplog.text
    assert "fell back" in caplog.text


def test_a_forced_list_that_runs_as_forced_passes(caplog: pytest.LogCaptureFixture) -> None:
    forced = (TENSORRT_PROVIDER, CUDA_PROVIDER, CPU_PROVIDER)
    with caplog.at_level(logging.WARNING, logger="encoders.providers"):
        check_active_providers(forced, list(forced), list(forced))
    assert caplog.records == []


@pytest.mark.parametrize(
    ("selected", "calls"),
    [
        ([CPU_PROVIDER], 0),
        ([CUDA_PROVIDER, CPU_PROVIDER], 1),
        ([TENSORRT_PROVIDER, CUDA_PROVIDER, CPU_PROVIDER], 1),
    ],
)
def test_cuda_libraries_are_preloaded_once_and_only_for_gpu_sessions(
    selected: list[str], calls: int
) -> None:
    preloads: list[None] = []

    def preload() -> None:
        preloads.append(None)

    preload_cuda_libraries(selected, preload)
    preload_cuda_libraries(selected, preload)
    assert len(preloads) == calls


@pytest.mark.gpu
def test_a_cuda_session_really_runs_on_cuda_and_matches_cpu(
    tiny_variant: tuple[Path, TinyWeights],
) -> None:
    if CUDA_PROVIDER not in ort.get_available_providers():
        pytest.skip("this onnxruntime build has no CUDA (install the `gpu` extra)")
    variant_dir, _ = tiny_variant
    try:
        on_gpu = OnnxTextEncoder(variant_dir, providers="cuda")
    except ProviderError as error:
        pytest.skip(f"CUDA listed but not usable here: {error}")
    assert on_gpu.providers[0] == CUDA_PROVIDER
    on_cpu = OnnxTextEncoder(variant_dir, providers="cpu")
    texts = ["a dog on the couch", "cat", "the plane in the sky"]
    np.testing.assert_allclose(
        on_gpu.encode_texts(texts), on_cpu.encode_texts(texts), rtol=0, atol=1e-4
    )


@pytest.mark.parametrize(
    ("active", "on_gpu"),
    [
        pytest.param([CUDA_PROVIDER, CPU_PROVIDER], True, id="cuda"),
        pytest.param([TENSORRT_PROVIDER, CUDA_PROVIDER, CPU_PROVIDER], True, id="tensorrt"),
        pytest.param([CPU_PROVIDER], False, id="cpu"),
        # A session runs on its first provider; one listed after the CPU is a fallback unused.
        pytest.param([CPU_PROVIDER, CUDA_PROVIDER], False, id="cuda after the cpu"),
        pytest.param(["DmlExecutionProvider", CPU_PROVIDER], False, id="other accelerator"),
        pytest.param([], False, id="none"),
    ],
)
def test_a_session_runs_on_a_gpu_when_its_first_provider_is_cuda_or_tensorrt(
    active: list[str], on_gpu: bool
) -> None:
    assert runs_on_gpu(active) is on_gpu
