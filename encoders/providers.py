"""Choosing onnxruntime execution providers, and checking which ones a session really uses.

``onnxruntime.get_available_providers()`` lists what the installed build *supports*, not what the
machine can run: onnxruntime-gpu lists ``CUDAExecutionProvider`` on a machine without a GPU and a
session then quietly falls back to CPU. So selection (before the session) and verification (on
``session.get_providers()`` after it) are two separate steps here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final, Literal, get_args

ProviderRequest = Literal["auto", "cpu", "cuda"]
PROVIDER_REQUESTS: Final[tuple[str, ...]] = get_args(ProviderRequest)

CPU_PROVIDER: Final = "CPUExecutionProvider"
CUDA_PROVIDER: Final = "CUDAExecutionProvider"

logger = logging.getLogger(__name__)


class ProviderError(RuntimeError):
    """The requested execution provider cannot be used."""


def select_providers(requested: ProviderRequest, available: Sequence[str]) -> list[str]:
    """Return the onnxruntime provider list, in priority order, to create a session with.

    ``available`` is ``onnxruntime.get_available_providers()`` (or a fake list in tests).

    - ``"auto"``: ``[CUDA, CPU]`` when the build lists CUDA, else ``[CPU]``.
    - ``"cpu"``: ``[CPU]``, whatever else is listed.
    - ``"cuda"``: ``[CUDA, CPU]``; raises ``ProviderError`` when the build does not list CUDA.
      CPU stays in the list because onnxruntime places nodes CUDA cannot run on CPU.

    TensorRT is never chosen here: it needs per-shape engine builds and its own settings.
    Raises ``ValueError`` for any other ``requested`` value (e.g. from an unchecked setting).
    """
    if requested == "cpu":
        return [CPU_PROVIDER]
    if requested == "auto":
        return [CUDA_PROVIDER, CPU_PROVIDER] if CUDA_PROVIDER in available else [CPU_PROVIDER]
    if requested == "cuda":
        if CUDA_PROVIDER not in available:
            raise ProviderError(
                f"providers='cuda' requested but this onnxruntime build offers only "
                f"{list(available)}; install onnxruntime-gpu or use providers='cpu'/'auto'"
            )
        return [CUDA_PROVIDER, CPU_PROVIDER]
    raise ValueError(f"providers must be one of {PROVIDER_REQUESTS}, got {requested!r}")


def check_active_providers(
    requested: ProviderRequest, selected: Sequence[str], active: Sequence[str]
) -> None:
    """Compare the providers a session really uses (``session.get_providers()``) with the request.

    Raises ``ProviderError`` when ``"cuda"`` was requested but the session runs without CUDA (no
    GPU, missing CUDA libraries). Logs a warning when ``"auto"`` selected CUDA and the session fell
    back to CPU, since that is legal but often a surprise in latency numbers.
    """
    fell_back = CUDA_PROVIDER in selected and CUDA_PROVIDER not in active
    if requested == "cuda" and fell_back:
        raise ProviderError(
            f"providers='cuda' requested but the session runs on {list(active)}: onnxruntime "
            "could not initialise CUDA (no GPU visible, or CUDA/cuDNN libraries missing)"
        )
    if fell_back:
        logger.warning(
            "CUDA was listed by onnxruntime but the session fell back to %s; running on CPU",
            list(active),
        )
