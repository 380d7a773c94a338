"""Choosing onnxruntime execution providers, and checking which ones a session really uses.

``onnxruntime.get_available_providers()`` lists what the installed build *supports*, not what the
machine can run: onnxruntime-gpu lists ``TensorrtExecutionProvider`` and
``CUDAExecutionProvider`` on a machine without a GPU (or without the TensorRT libraries) and a
session then quietly falls back to CPU. So selection (before the session) and verification (on
``session.get_providers()`` after it) are two separate steps here.

A request is a keyword — ``auto``, ``cpu``, ``cuda``, ``tensorrt`` — or a tuple of onnxruntime
provider names in priority order (a *forced list*), e.g.
``("CUDAExecutionProvider", "CPUExecutionProvider")``.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import re
from collections.abc import Callable, Sequence
from typing import Final, Literal, get_args

ProviderKeyword = Literal["auto", "cpu", "cuda", "tensorrt"]
ProviderRequest = ProviderKeyword | tuple[str, ...]
PROVIDER_REQUESTS: Final[tuple[str, ...]] = get_args(ProviderKeyword)

CPU_PROVIDER: Final = "CPUExecutionProvider"
CUDA_PROVIDER: Final = "CUDAExecutionProvider"
TENSORRT_PROVIDER: Final = "TensorrtExecutionProvider"

GPU_PROVIDERS: Final = (CUDA_PROVIDER, TENSORRT_PROVIDER)


def runs_on_gpu(active: Sequence[str]) -> bool:
    """Whether a session whose providers in use are ``active`` (``session.get_providers()``, in
    priority order) runs on a GPU: its first provider is CUDA or TensorRT."""
    return bool(active) and active[0] in GPU_PROVIDERS


# The shared library TensorRT's execution provider links against, by platform, newest first.
# onnxruntime-gpu lists TensorRT whether or not it is installed; loading it is the honest test.
TENSORRT_LIBRARIES: Final = (
    "libnvinfer.so.10",
    "libnvinfer.so.8",
    "libnvinfer.so",
    "nvinfer_10.dll",
    "nvinfer.dll",
)
_PROVIDER_NAME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9]*ExecutionProvider$")

logger = logging.getLogger(__name__)


class ProviderError(RuntimeError):
    """The requested execution provider cannot be used."""


def is_provider_name(name: str) -> bool:
    """Whether ``name`` looks like an onnxruntime provider name (``...ExecutionProvider``)."""
    return bool(_PROVIDER_NAME.match(name))


def tensorrt_runtime_present(load: Callable[[str], object] = ctypes.CDLL) -> bool:
    """Whether the TensorRT runtime library (``libnvinfer``) can be loaded in this process.

    ``load`` opens a shared library by name and raises ``OSError`` when it cannot (the default,
    ``ctypes.CDLL``, searches as the dynamic loader does: ``LD_LIBRARY_PATH``, the ld cache).
    """
    for name in TENSORRT_LIBRARIES:
        try:
            load(name)
        except OSError:
            continue
        return True
    return False


def needs_cuda_libraries(selected: Sequence[str]) -> bool:
    """Whether a session created with ``selected`` providers loads the CUDA libraries."""
    return CUDA_PROVIDER in selected or TENSORRT_PROVIDER in selected


@functools.cache
def _preload_once(preload: Callable[[], object]) -> None:
    preload()


def preload_cuda_libraries(selected: Sequence[str], preload: Callable[[], object] | None) -> None:
    """Load the CUDA and cuDNN libraries of the ``nvidia-*`` pip packages before a GPU session.

    onnxruntime-gpu installed with its ``cuda``/``cudnn`` extras (the ``gpu`` extra here) finds
    those libraries through ``onnxruntime.preload_dlls()`` unless they already are on the
    loader's path (a system CUDA, ``LD_LIBRARY_PATH``, a prior ``import torch``); without them
    a CUDA session fails to load its provider and onnxruntime falls back to CPU.
    ``preload`` is that function (``None`` where the build has none: CPU builds, old versions);
    it runs once per process and only when ``selected`` asks for CUDA or TensorRT.
    """
    if preload is not None and needs_cuda_libraries(selected):
        _preload_once(preload)


def select_providers(
    requested: ProviderRequest,
    available: Sequence[str],
    *,
    tensorrt_present: Callable[[], bool] = tensorrt_runtime_present,
) -> list[str]:
    """Return the onnxruntime provider list, in priority order, to create a session with.

    ``available`` is ``onnxruntime.get_available_providers()`` (or a fake list in tests);
    ``tensorrt_present`` answers whether the TensorRT libraries load (asked only by ``"auto"``
    when the build lists TensorRT).

    - ``"auto"``: TensorRT → CUDA → CPU, each accelerator only when the build lists it, and
      TensorRT only when its runtime library is present as well (onnxruntime-gpu lists it
      regardless). CPU always closes the list: onnxruntime places there the nodes the others
      cannot run.
    - ``"cpu"``: ``[CPU]``, whatever else is listed.
    - ``"cuda"``: ``[CUDA, CPU]``; raises ``ProviderError`` when the build does not list CUDA.
    - ``"tensorrt"``: ``[TensorRT, CUDA, CPU]``; raises ``ProviderError`` when the build does not
      list TensorRT and CUDA.
    - a tuple of names (a forced list): exactly those, in that order; raises ``ProviderError``
      when the build does not list one of them.

    Raises ``ValueError`` for any other ``requested`` value (an unknown keyword, an empty or
    repeating list, a name that is not ``...ExecutionProvider``).
    """
    if isinstance(requested, tuple):
        return _forced_list(requested, available)
    if requested == "cpu":
        return [CPU_PROVIDER]
    if requested == "auto":
        chosen = []
        if TENSORRT_PROVIDER in available and CUDA_PROVIDER in available and tensorrt_present():
            chosen.append(TENSORRT_PROVIDER)
        if CUDA_PROVIDER in available:
            chosen.append(CUDA_PROVIDER)
        return [*chosen, CPU_PROVIDER]
    if requested in ("cuda", "tensorrt"):
        needed = [CUDA_PROVIDER] if requested == "cuda" else [TENSORRT_PROVIDER, CUDA_PROVIDER]
        missing = [name for name in needed if name not in available]
        if missing:
            raise ProviderError(
                f"providers={requested!r} requested but this onnxruntime build offers only "
                f"{list(available)} (missing {missing}); install onnxruntime-gpu (the `gpu` "
                "extra) or use providers='cpu'/'auto'"
            )
        return [*needed, CPU_PROVIDER]
    raise ValueError(
        f"providers must be one of {PROVIDER_REQUESTS} or a tuple of provider names, "
        f"got {requested!r}"
    )


def _forced_list(names: tuple[str, ...], available: Sequence[str]) -> list[str]:
    if not names:
        raise ValueError("a forced provider list must name at least one provider")
    bad = [name for name in names if not is_provider_name(name)]
    if bad:
        raise ValueError(f"not onnxruntime provider names (…ExecutionProvider): {bad}")
    if len(set(names)) != len(names):
        raise ValueError(f"provider names repeat: {list(names)}")
    missing = [name for name in names if name not in available]
    if missing:
        raise ProviderError(
            f"providers {list(names)} forced but this onnxruntime build offers only "
            f"{list(available)} (missing {missing})"
        )
    return list(names)


def check_active_providers(
    requested: ProviderRequest, selected: Sequence[str], active: Sequence[str]
) -> None:
    """Compare the providers a session really uses (``session.get_providers()``) with the request.

    Raises ``ProviderError`` when the session runs without a provider that was asked for
    explicitly: CUDA for ``"cuda"``, TensorRT for ``"tensorrt"``, any name of a forced list (no
    GPU visible, CUDA/cuDNN/TensorRT libraries missing). Logs a warning for each accelerator
    ``"auto"`` selected that the session dropped, since that is legal but often a surprise in
    latency numbers.
    """
    dropped = [name for name in selected if name != CPU_PROVIDER and name not in active]
    if isinstance(requested, tuple):
        required = [name for name in requested if name != CPU_PROVIDER]
    elif requested == "cuda":
        required = [CUDA_PROVIDER]
    elif requested == "tensorrt":
        required = [TENSORRT_PROVIDER]
    else:
        required = []
    missing = [name for name in required if name not in active]
    if missing:
        raise ProviderError(
            f"providers={requested!r} requested but the session runs on {list(active)} "
            f": onnxruntime could not initialise {', '.join(missing)} (no GPU visible, or "
            "CUDA/cuDNN/TensorRT libraries missing)"
        )
    if dropped:
        logger.warning(
            "onnxruntime listed %s but the session fell back to %s; those are not used",
            dropped,
            list(active),
        )
