"""The batching and admission limits that follow where the encoders really run.

``max_batch_size``, ``max_wait_ms`` and ``overload_concurrent_requests`` are unset by default:
each is then chosen once the encoders are loaded, from the providers their sessions really use
(``session.get_providers()``, never the providers a build lists), so the same settings suit a
2-core CPU machine and a GPU one.

- On the CPU a batch costs about the sum of its inputs: moderate batches (16), no waiting for
  company (a lone request would pay the whole wait), and while overloaded one request in flight
  per encoder worker, so that no admitted request queues behind another.
- On a GPU a batch costs about one input: larger batches (64), a short wait (2 ms) to gather
  concurrent requests, and while overloaded a full batch per encoder worker.

A value set in the settings always wins. ``/v1/variants`` reports what is in force.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from encoders.providers import runs_on_gpu
from service.engine.encode.batcher import BatchLimits
from service.settings import Settings


@dataclass(frozen=True)
class DeviceDefaults:
    """The unset limits' values for an encoder on one kind of device."""

    max_batch_size: int
    max_wait_ms: float


CPU_DEFAULTS: Final = DeviceDefaults(max_batch_size=16, max_wait_ms=0.0)
GPU_DEFAULTS: Final = DeviceDefaults(max_batch_size=64, max_wait_ms=2.0)


def device_defaults(providers: Sequence[str]) -> DeviceDefaults:
    """The defaults for an encoder whose session uses ``providers`` (in priority order)."""
    return GPU_DEFAULTS if runs_on_gpu(providers) else CPU_DEFAULTS


def batch_limits(settings: Settings, providers: Sequence[str]) -> BatchLimits:
    """How the batcher of an encoder whose session uses ``providers`` gathers and admits work:
    the settings, with the device's defaults for what they leave unset."""
    defaults = device_defaults(providers)
    max_batch_size = settings.max_batch_size
    max_wait_ms = settings.max_wait_ms
    return BatchLimits(
        max_batch_size=defaults.max_batch_size if max_batch_size is None else max_batch_size,
        max_wait_s=(defaults.max_wait_ms if max_wait_ms is None else max_wait_ms) / 1000.0,
        max_queue_depth=settings.max_queue_depth,
        retry_after_s=settings.overload_retry_after_s,
        workers=settings.encoder_workers,
    )


def overload_limit(settings: Settings, providers: Iterable[Sequence[str]]) -> int:
    """Requests in flight while overloaded, for encoders whose sessions use ``providers`` (one
    sequence per encoder; none before they are loaded): ``overload_concurrent_requests`` when
    set; else one request per encoder worker while no encoder runs on a GPU, and a full batch
    per encoder worker (the largest batch among the encoders on a GPU) once one does."""
    if settings.overload_concurrent_requests is not None:
        return settings.overload_concurrent_requests
    gpu_batches = [
        batch_limits(settings, active).max_batch_size for active in providers if runs_on_gpu(active)
    ]
    return settings.encoder_workers * max(gpu_batches, default=1)
