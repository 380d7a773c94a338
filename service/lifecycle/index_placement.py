"""Placing a loaded faiss index for serving: on a GPU where faiss can, else the CPU index.

A faiss build with GPU support (``faiss-gpu``; ``faiss-cpu`` has no ``StandardGpuResources``) that
sees a GPU can clone flat and IVF indexes to it with ``index_cpu_to_gpu``; kinds faiss cannot run
there (HNSW, for one) make it raise and stay on the CPU. The clone keeps its CPU original: a GPU
selects at most :data:`service.engine.rank.gpu_index.GPU_MAX_K` results per query, and larger ``k``
(the store's tie-resolving re-fetch can ask for thousands) is searched there. One
``StandardGpuResources`` and one lock serve every GPU index of the process: faiss GPU indexes must
not be searched from several threads at once.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import faiss

from service.engine.rank.gpu_index import GpuSearchIndex
from service.settings import FaissDevice

GPU_DEVICE: Final = 0


class FaissPlacementError(RuntimeError):
    """``faiss_device="gpu"`` was asked for, but an index cannot be served from a GPU."""


def faiss_gpu_count(module: Any = faiss) -> int:
    """GPUs the faiss build can use: 0 when it has no GPU support (``faiss-cpu``: no
    ``StandardGpuResources``/``index_cpu_to_gpu``), else ``get_num_gpus()``.

    ``module`` is the faiss module (a fake in tests).
    """
    if not all(hasattr(module, name) for name in ("StandardGpuResources", "index_cpu_to_gpu")):
        return 0
    try:
        return int(module.get_num_gpus())
    except (AttributeError, RuntimeError):
        return 0


@dataclass(frozen=True)
class _GpuContext:
    """The process's GPU resources for faiss and the lock that serialises GPU searches."""

    resources: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


@functools.cache
def _gpu_context(module: Any) -> _GpuContext:
    """One ``StandardGpuResources`` per faiss module, created on first use and kept for the
    process (GPU indexes refer to it)."""
    return _GpuContext(resources=module.StandardGpuResources())


@dataclass(frozen=True)
class Placement:
    """Where an index is served from: ``index`` is what to search (the CPU index itself or a
    :class:`GpuSearchIndex`), ``device`` ``"cpu"`` or ``"gpu"``, ``reason`` why (for logs)."""

    index: Any
    device: Literal["cpu", "gpu"]
    reason: str


def place_index(
    index: Any,
    device: FaissDevice,
    *,
    search_params: Mapping[str, float | int | str] | None = None,
    on_disk: bool = False,
    module: Any = faiss,
) -> Placement:
    """Place a loaded CPU ``index`` for serving according to the ``device`` setting.

    - ``"cpu"``: the index as it is.
    - ``"auto"``: a GPU clone when the faiss build has GPU support, sees a GPU and can move the
      index kind (flat, IVF); otherwise the CPU index, with the reason.
    - ``"gpu"``: like ``"auto"``, but raises :class:`FaissPlacementError` instead of staying on
      the CPU.

    ``search_params`` (``nprobe``, ...) must already be set on ``index``; they are set again on
    the GPU clone with ``GpuParameterSpace`` (which knows GPU index kinds). An index whose
    inverted lists are ``on_disk`` (built for collections larger than memory) stays on the CPU:
    a GPU clone would copy every list into GPU memory. ``module`` is the faiss module (a fake
    in tests).
    """
    if device == "cpu":
        return Placement(index, "cpu", "faiss_device=cpu")
    if on_disk:
        reason = "its inverted lists are on disk (OnDiskInvertedLists), read where they lie"
        if device == "gpu":
            raise FaissPlacementError(
                f"faiss_device=gpu but {reason}: a GPU would need them all in its memory; "
                "build the collection without --on-disk, or use faiss_device=auto/cpu"
            )
        return Placement(index, "cpu", reason)
    if faiss_gpu_count(module) == 0:
        reason = (
            "faiss sees no GPU"
            if hasattr(module, "StandardGpuResources")
            else "this faiss build has no GPU support (faiss-cpu)"
        )
        if device == "gpu":
            raise FaissPlacementError(
                f"faiss_device=gpu but {reason}; install the `gpu` extra (faiss-gpu) on a GPU "
                "machine, or use faiss_device=auto/cpu"
            )
        return Placement(index, "cpu", reason)
    context = _gpu_context(module)
    try:
        clone = module.index_cpu_to_gpu(context.resources, GPU_DEVICE, index)
        if search_params:
            space = module.GpuParameterSpace()
            for key, value in sorted(search_params.items()):
                space.set_index_parameter(clone, key, float(value))
    except (RuntimeError, ValueError) as exc:
        if device == "gpu":
            raise FaissPlacementError(
                f"faiss_device=gpu but faiss cannot move this index to the GPU: {exc}"
            ) from exc
        return Placement(index, "cpu", f"faiss cannot move it to the GPU: {exc}")
    return Placement(
        GpuSearchIndex(gpu=clone, cpu=index, lock=context.lock), "gpu", f"GPU {GPU_DEVICE}"
    )
