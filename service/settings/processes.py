"""How the server's processes and threads are laid out, and how they stop."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ProcessSettings(BaseModel):
    """How the server's processes and threads are laid out, and how they stop."""

    intra_op_threads: int = Field(
        default=1,
        ge=0,
        description=(
            "onnxruntime intra-op threads per encoder session; 0 = onnxruntime's choice (one per "
            "core). Each encoder already runs on encoder_workers threads, so 1 leaves the other "
            "cores to faiss and HTTP; raise it where cores are plenty."
        ),
    )
    faiss_threads: int = Field(
        default=1,
        ge=0,
        description=(
            "OpenMP threads of each faiss search, set on the thread that runs it; 0 = faiss's "
            "default (one per core). 1 suits one-query searches running side by side."
        ),
    )
    workers: int = Field(
        default=0,
        ge=0,
        le=64,
        description=(
            "Server processes answering on the one port; 0 = automatic: 1 on a machine of up to "
            "4 cores, else one per 4 cores (at most 8; the rule above 4 cores is not measured). "
            "Each worker loads every encoder, memory-maps the bundles (shared page cache, not "
            "copied per worker) and has its own admission and connection limits "
            "(max_concurrent_requests, max_connections, ... apply per worker). With more than 1, "
            "a supervisor restarts a worker that dies or hangs (worker_heartbeat_timeout_s), "
            "forwards SIGTERM so each drains, /metrics sums every worker and a reload reaches "
            "them all."
        ),
    )
    worker_heartbeat_timeout_s: float = Field(
        default=30.0,
        ge=1.0,
        le=3600.0,
        description=(
            "With several workers: seconds a worker's event loop may go without beating (it "
            "beats about every second) before the supervisor takes it as hung, kills it and "
            "starts another; its in-flight requests fail. A worker still starting gets this "
            "long from its spawn."
        ),
    )
    reload_broadcast_timeout_s: float = Field(
        default=60.0,
        gt=0.0,
        le=3600.0,
        description=(
            "With several workers: seconds POST /v1/admin/reload waits for the other workers "
            "to serve the versions it loaded. A worker that has not by then (or could not load "
            "them, and keeps serving what it did) is named in the log and left out of the "
            "answer's 'workers'."
        ),
    )
    blas_threads: int = Field(
        default=1,
        ge=0,
        description=(
            "Threads of the BLAS libraries (numpy's and faiss's) that run the exact search's "
            "matrix products, and of the onnxruntime scan (flat_scan), set once in each server "
            "process; 0 = the libraries' default (one per core). Idle BLAS threads spin, so on "
            "a CPU more than 1 takes cores from the encoder."
        ),
    )
    flat_scan: Literal["onnxruntime", "numpy"] = Field(
        default="onnxruntime",
        description=(
            "What scans a flat collection's stored vectors on the CPU in an unfiltered search "
            "of a Flat index: onnxruntime (GEMM and TopK) or numpy (matrix product and "
            "argpartition). Both run on blas_threads threads and find the same candidates; "
            "onnxruntime is the faster where it was measured."
        ),
    )
    gil_switch_interval_ms: float = Field(
        default=1.0,
        gt=0.0,
        le=100.0,
        description=(
            "Milliseconds a Python thread may hold the interpreter lock while another waits for "
            "it (sys.setswitchinterval), set once per server process. An encoder thread back "
            "from onnxruntime waits at most this long for the event loop to let it go on; "
            "Python's own default is 5."
        ),
    )
    gc_young_threshold: int = Field(
        default=5000,
        ge=100,
        le=1_000_000,
        description=(
            "Allocations, less deallocations, between two collections of Python's youngest "
            "object generation in each server process (the first value of gc.set_threshold; "
            "Python's own default is 700), set once when it starts. A bulk search makes "
            "millions of short-lived result objects, and each collection also walks the ones "
            "still held: higher runs the collector less often; reference cycles are freed a "
            "little later."
        ),
    )
    tokenizer_parallelism: bool = Field(
        default=False,
        description=(
            "Whether the tokenizers library splits each batch's texts over its own thread pool "
            "(TOKENIZERS_PARALLELISM, set once per server process). Off, the encoder_workers "
            "threads are the parallelism; on, the pool's threads add CPU to every request's "
            "small batch. Index builds (a library use, not a server) keep the library's default."
        ),
    )
    graceful_shutdown_s: int = Field(
        default=10,
        ge=1,
        description=(
            "On SIGTERM, seconds uvicorn waits for in-flight requests (and the encoder queues) "
            "before closing them (uvicorn would otherwise wait forever)."
        ),
    )
    shutdown_delay_s: float = Field(
        default=0.0,
        ge=0.0,
        le=300.0,
        description=(
            "On SIGTERM, seconds the service keeps accepting and answering requests with "
            "/readyz already 503, so load balancers stop routing to it before it stops "
            "listening; a second signal skips the wait."
        ),
    )
