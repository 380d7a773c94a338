"""Load: how encoder calls are batched and how many requests are admitted, queued or refused
under load, and when."""

from __future__ import annotations

from pydantic import BaseModel, Field


class LoadSettings(BaseModel):
    """Load: how encoder calls are batched and how many requests are admitted, queued or refused"""

    max_batch_size: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Most inputs (texts or images) one encoder call gathers from the queued requests of "
            "one variant and tower; the rest wait for the next call. A request with more inputs "
            "than this runs alone, whole. Default (unset): 16 for an encoder whose session runs "
            "on the CPU, 64 for one on a GPU (CUDA or TensorRT first in get_providers()), where "
            "a batch costs about one input; /v1/variants gives each tower's. The text encoder "
            "cuts a batch into runs of similar length, so larger batches cost no padding; they "
            "share one exact search, which costs less per query the more queries it holds, but "
            "a larger batch keeps each of its requests waiting longer."
        ),
    )
    max_wait_ms: float | None = Field(
        default=None,
        ge=0.0,
        le=1000.0,
        description=(
            "Milliseconds the batcher waits for more requests after taking the first before it "
            "calls the encoder with a partial batch; 0 never waits (batches then hold what "
            "queued while the encoder was busy, which on CPU is as good: a lone request pays "
            "the whole wait). Default (unset): 0 for an encoder on the CPU, 2 for one on a "
            "GPU, where a batch costs about one input."
        ),
    )
    encoder_workers: int = Field(
        default=2,
        ge=1,
        le=64,
        description=(
            "Threads per encoder (variant and tower) that each gather a batch from the queue "
            "and run it, side by side on one shared onnxruntime session; with one, the encoder "
            "is a serial stage that waits while its thread is descheduled. Also the default of "
            "overload_concurrent_requests on the CPU."
        ),
    )
    max_queue_depth: int = Field(
        default=64,
        ge=1,
        description=(
            "Most requests waiting for one encoder (per variant and tower); a request that "
            "finds the queue full gets 503 overloaded with Retry-After at once, unqueued."
        ),
    )
    max_concurrent_requests: int = Field(
        default=64,
        ge=1,
        description=(
            "Most search, score and embed requests in flight at once (per worker) while the "
            "service is not overloaded; one more waits at the door (admission_wait_ms, "
            "max_waiting_requests), then gets 503 overloaded with Retry-After. More in flight "
            "lets the encoder batch more."
        ),
    )
    overload_concurrent_requests: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Most requests in flight while the service is overloaded (every one of "
            "max_concurrent_requests slots taken and arrivals outpacing completions, judged over "
            "0.25 s windows); the excess gets 503 overloaded with Retry-After at once, before its "
            "body is read. Default (unset): encoder_workers (one per encoder worker, so no "
            "admitted request queues behind another) while every encoder runs on the CPU; once "
            "one runs on a GPU, a full batch per encoder worker (encoder_workers x that "
            "encoder's max_batch_size). Lower keeps admitted requests nearer unloaded latency, "
            "higher answers more of them. Capped at max_concurrent_requests; /v1/variants gives "
            "the value in force."
        ),
    )
    max_waiting_requests: int = Field(
        default=64,
        ge=0,
        description=(
            "Most requests waiting at the door for an in-flight slot; one more gets 503 "
            "overloaded at once. Only bursts wait: while arrivals outpace completions (over "
            "0.25 s windows) nobody does."
        ),
    )
    admission_wait_ms: float = Field(
        default=50.0,
        ge=0.0,
        le=10_000.0,
        description=(
            "Longest a request waits at the door for an in-flight slot before 503 overloaded; "
            "0 turns the waiting room off (no free slot: 503 at once)."
        ),
    )
    request_timeout_ms: int = Field(
        default=10_000,
        ge=1,
        description=(
            "Deadline in milliseconds from a request's arrival for its encoder work to start; "
            "work still queued when it passes is dropped, not computed, and the request gets "
            "503 overloaded with Retry-After."
        ),
    )
    query_cache_entries: int = Field(
        default=0,
        ge=0,
        le=10_000_000,
        description=(
            "Query texts whose embeddings are kept (least recently used evicted first), per "
            "process, keyed by the variant's fingerprint and the exact text: a repeated query "
            "text skips the queue and the encoder. 0 (default): off. Emptied when a reload "
            "publishes a catalog. Each entry costs dim float32 values plus the text."
        ),
    )
    overload_retry_after_s: int = Field(
        default=1,
        ge=1,
        description="Retry-After (seconds) sent with 503 overloaded (queue full or deadline).",
    )
    not_ready_retry_after_s: int = Field(
        default=1,
        ge=1,
        description="Retry-After (seconds) sent with 503 not_ready while bundles are loading.",
    )

    @property
    def request_timeout_s(self) -> float:
        """``request_timeout_ms`` in seconds."""
        return self.request_timeout_ms / 1000.0
