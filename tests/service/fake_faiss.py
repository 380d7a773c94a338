"""Fake faiss modules for the GPU placement logic: a GPU build (with a number of visible GPUs)
and faiss-cpu. No GPU is needed: a "GPU clone" searches its CPU original and records calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt


class FakeResources:
    """Stands for ``faiss.StandardGpuResources``."""


@dataclass
class FakeGpuIndex:
    """A "GPU clone": searches its CPU original and records each call and its parameters."""

    cpu: Any
    params: dict[str, float] = field(default_factory=dict)
    searches: list[int] = field(default_factory=list)

    def search(self, x: npt.NDArray[np.float32], k: int) -> Any:
        self.searches.append(k)
        return self.cpu.search(x, k)


class FakeGpuParameterSpace:
    def set_index_parameter(self, index: FakeGpuIndex, key: str, value: float) -> None:
        if key != "nprobe":
            raise RuntimeError(f"unknown parameter {key}")
        index.params[key] = value


class FakeGpuFaiss:
    """The parts of a faiss GPU build that placement uses; ``gpus`` GPUs visible. Like faiss,
    cloning an index kind that has no GPU implementation (HNSW) raises RuntimeError."""

    StandardGpuResources = FakeResources
    GpuParameterSpace = FakeGpuParameterSpace

    def __init__(self, gpus: int) -> None:
        self.gpus = gpus
        self.clones: list[tuple[Any, int, Any]] = []

    def get_num_gpus(self) -> int:
        return self.gpus

    def index_cpu_to_gpu(self, resources: Any, device: int, index: Any) -> FakeGpuIndex:
        if isinstance(index, faiss.IndexHNSW):
            raise RuntimeError("This index type is not implemented on GPU")
        self.clones.append((resources, device, index))
        return FakeGpuIndex(index)


class FakeCpuFaiss:
    """faiss-cpu: ``get_num_gpus`` exists (and answers 0) but nothing GPU does."""

    def get_num_gpus(self) -> int:
        return 0
