"""Service settings: one pydantic-settings class, read from ``CRISSCROSS_*`` environment variables.

Every limit has a default and says what a request that hits it gets. Limits are enforced before
the expensive work (decoding, encoding, searching).
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from encoders.providers import ProviderKeyword, is_provider_name
from storage.layout import CURRENT_FILE

MIB = 1 << 20
KIB = 1 << 10
# Room for the JSON around a text in the smallest request (field names, collection, k).
JSON_OVERHEAD_BYTES = 1024
# Room for the form fields (collection, k, variant, exclude ids, include_metadata) and the
# multipart framing around the file on POST /v1/search/upload.
UPLOAD_OVERHEAD_BYTES = 256 * KIB
UPLOAD_ROUTE = "/v1/search/upload"
BULK_ROUTE = "/v1/search/bulk"

# An API key travels in a header: visible ASCII, no spaces or commas (commas separate keys in the
# environment), long enough not to be guessed.
MIN_KEY_CHARS = 16
_KEY_CHARS = re.compile(r"^[\x21-\x2b\x2d-\x7e]+$")
_ORIGIN = re.compile(r"^https?://[^/\s]+$")
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})

ProviderChoice = ProviderKeyword
LogLevel = Literal["critical", "error", "warning", "info", "debug"]
FaissDevice = Literal["auto", "cpu", "gpu"]


class SettingsError(ValueError):
    """The settings cannot serve: a path is missing or a named bundle does not exist."""


class Settings(BaseSettings):
    """Everything the service can be told. Environment variables use the ``CRISSCROSS_`` prefix
    (``CRISSCROSS_MAX_K=50``); keyword arguments (and CLI flags) win over the environment."""

    # hide_input_in_errors: a refused setting may be an API key; errors must never print it.
    model_config = SettingsConfigDict(
        env_prefix="CRISSCROSS_",
        extra="forbid",
        validate_default=True,
        frozen=True,
        hide_input_in_errors=True,
    )

    host: str = Field(
        default="127.0.0.1",
        description=(
            "Interface the server listens on. A host that is not loopback needs read_keys (or "
            "allow_unauthenticated_public), else the service refuses to start."
        ),
    )
    port: int = Field(default=8000, ge=1, le=65535, description="TCP port the server listens on.")
    bundles_root: Path = Field(
        default=Path("artifacts/bundles"),
        description=(
            "Folder holding the bundles, each <name>/<version>/ with a CURRENT pointer naming "
            "the version served."
        ),
    )
    bundles: Annotated[list[str] | None, NoDecode] = Field(
        default=None,
        description=(
            "Bundle names to serve (comma-separated in the environment); "
            "default: every folder under bundles_root that has a CURRENT pointer."
        ),
    )
    variants_root: Path = Field(
        default=Path("artifacts/variants"),
        description="Folder of encoder variants; a bundle's variant is <variants_root>/<name>.",
    )
    default_variant: str | None = Field(
        default=None,
        description=(
            "Variant used when a request names none; default: the only loaded variant. With "
            "several loaded and none set, a request without 'variant' gets 422 invalid_input."
        ),
    )
    providers: Annotated[ProviderChoice | tuple[str, ...], NoDecode] = Field(
        default="auto",
        description=(
            "onnxruntime providers: auto (TensorRT when onnxruntime lists it and libnvinfer "
            "loads, then CUDA when listed, then CPU), cpu, cuda (refuses to start unless the "
            "session really runs on CUDA), tensorrt (likewise for TensorRT), or a forced list "
            "of provider names in priority order, comma-separated (e.g. "
            "CUDAExecutionProvider,CPUExecutionProvider; each must really run). What runs is "
            "reported per tower by /v1/variants."
        ),
    )
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
    tokenizer_parallelism: bool = Field(
        default=False,
        description=(
            "Whether the tokenizers library splits each batch's texts over its own thread pool "
            "(TOKENIZERS_PARALLELISM, set once per server process). Off, the encoder_workers "
            "threads are the parallelism; on, the pool's threads add CPU to every request's "
            "small batch. Index builds (a library use, not a server) keep the library's default."
        ),
    )
    faiss_device: FaissDevice = Field(
        default="auto",
        description=(
            "Where faiss searches: auto (flat and IVF indexes on GPU 0 when the faiss build has "
            "GPU support and sees a GPU, else CPU; HNSW and other kinds stay on CPU), cpu, or "
            "gpu (refuses to start unless every index moves to the GPU). Searches asking for "
            "more rows than the GPU can select (k > 2048) run on the CPU copy. What runs is "
            "reported per collection by /v1/collections."
        ),
    )
    verify_bundle_hashes: bool = Field(
        default=True,
        description=(
            "Check the sha256 of every bundle file before serving it; a bundle whose files do not "
            "match is refused (on reload: 409 bundle_rejected, the old version keeps serving)."
        ),
    )

    bundle_mapping: Literal["private-copy", "in-place"] = Field(
        default="private-copy",
        description=(
            "How the service maps a bundle version's files (vectors, index codes, on-disk lists, "
            "thumbnails). private-copy: it first copies the version into a folder it owns "
            "(private_copies_dir) and verifies and maps the copy, so a bundle file truncated or "
            "rewritten under the running server cannot reach a served page (that would kill "
            "the process with SIGBUS); costs one copy of each served version on disk and the "
            "time to copy it at load. in-place: maps the bundle's own files, for bundles on a "
            "volume nothing writes while it is served (read-only mounts)."
        ),
    )
    private_copies_dir: Path | None = Field(
        default=None,
        description=(
            "Where bundle_mapping=private-copy keeps its copies; default: a fresh folder under "
            "the system's temporary folder (TMPDIR), removed at exit (with several workers: one "
            "they share in their run folder). Point it at a disk, not a RAM-backed /tmp, for "
            "large bundles."
        ),
    )
    max_k: int = Field(
        default=1000,
        ge=1,
        description="Largest k a search may ask for; more gives 422 invalid_input.",
    )
    max_offset: int = Field(
        default=10_000,
        ge=0,
        description=(
            "Largest offset a search may page to (the deepest result is max_offset + max_k); "
            "more gives 422 invalid_input. Each page is searched from the top, so depth costs "
            "search time."
        ),
    )
    max_nprobe: int = Field(
        default=1024,
        ge=1,
        description=(
            "Largest search_params.nprobe a search may ask for (inverted lists an IVF index "
            "scans; cost grows with it); more gives 422 invalid_input before anything is "
            "encoded. A value above the collection's own nlist gives 422 "
            "search_param_not_applicable."
        ),
    )
    max_ef_search: int = Field(
        default=1024,
        ge=1,
        description=(
            "Largest search_params.ef_search a search may ask for (the candidate list an HNSW "
            "index explores; cost grows with it); more gives 422 invalid_input before anything "
            "is encoded."
        ),
    )
    max_filter_conditions: int = Field(
        default=64,
        ge=1,
        description=(
            "Most nodes a search's filter may hold (field conditions and and/or/not); more "
            "gives 422 invalid_input before anything is evaluated."
        ),
    )
    max_filter_values: int = Field(
        default=1024,
        ge=1,
        description=(
            "Most values all the 'in' lists of one filter may hold together; more gives 422 "
            "invalid_input."
        ),
    )
    max_bulk_searches: int = Field(
        default=256,
        ge=1,
        description=(
            "Most searches one POST /v1/search/bulk request may carry; more gives 422 "
            "invalid_input before any is run."
        ),
    )
    max_bulk_body_bytes: int = Field(
        default=32 * MIB,
        ge=1,
        description=(
            "Largest body of POST /v1/search/bulk in bytes; larger gives 413 payload_too_large, "
            "unread. Images in a bulk request still count against max_images_per_request."
        ),
    )
    max_text_chars: int = Field(
        default=2000,
        ge=1,
        description="Longest text (in characters) accepted; longer gives 422 invalid_input.",
    )
    max_body_bytes: int = Field(
        default=1 * MIB,
        ge=1,
        description=(
            "Largest JSON request body in bytes; larger gives 413 payload_too_large, unread. It "
            "also caps images sent as base64 in JSON (about 3/4 of it); larger images go to "
            f"{UPLOAD_ROUTE}, whose limit is max_upload_body_bytes."
        ),
    )
    max_upload_body_bytes: int | None = Field(
        default=None,
        ge=1,
        description=(
            f"Largest multipart body of {UPLOAD_ROUTE} in bytes; larger gives 413 "
            "payload_too_large, unread. Default (unset): max_image_bytes + "
            f"{UPLOAD_OVERHEAD_BYTES} bytes for the form fields and framing; a value below that "
            "is refused."
        ),
    )
    max_image_bytes: int = Field(
        default=10 * MIB,
        ge=1,
        description=(
            "Largest image file in bytes (after base64 decoding); larger gives 413 "
            "payload_too_large before anything is decoded (a base64 string longer than "
            "4/3 of it is refused unread)."
        ),
    )
    max_image_pixels: int = Field(
        default=40_000_000,
        ge=1,
        description=(
            "Largest width x height an image header may declare; more gives 413 "
            "payload_too_large before any pixel is decoded (decompression bombs allocate nothing)."
        ),
    )
    max_images_per_request: int = Field(
        default=32,
        ge=1,
        description=(
            "Most images one request may hold (a search query, the sides of /v1/score, the "
            "images of /v1/embed); more gives 422 invalid_input before anything is decoded."
        ),
    )
    max_score_pairs: int = Field(
        default=1024,
        ge=1,
        description="Most pairs one /v1/score request may hold; more gives 422 invalid_input.",
    )
    max_embed_inputs: int = Field(
        default=256,
        ge=1,
        description="Most texts one /v1/embed request may hold; more gives 422 invalid_input.",
    )
    max_exclude: int = Field(
        default=1000,
        ge=0,
        description="Most ids a search's 'exclude' list may hold; more gives 422 invalid_input.",
    )
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
    head_timeout_s: float = Field(
        default=10.0,
        gt=0.0,
        le=600.0,
        description=(
            "Seconds a client has from opening a connection (or from the first byte of its next "
            "request on a kept-alive one) to the end of the request line and headers; past it "
            "the client gets 408 request_timeout and the connection is closed (slow heads, "
            "connections that send nothing)."
        ),
    )
    body_timeout_s: float = Field(
        default=60.0,
        gt=0.0,
        le=3600.0,
        description=(
            "Seconds a request's whole body may take to arrive once its head is in; past it the "
            "client gets 408 request_timeout and the connection is closed. Bodies are read whole "
            "before admission, so a slow one holds no in-flight slot meanwhile."
        ),
    )
    keep_alive_timeout_s: int = Field(
        default=5,
        ge=1,
        le=600,
        description=(
            "Seconds an idle kept-alive connection stays open after its last answer before the "
            "server closes it."
        ),
    )
    max_header_bytes: int = Field(
        default=16 * KIB,
        ge=1024,
        le=1 * MIB,
        description=(
            "Largest request line plus headers in bytes; larger gets 431 headers_too_large and "
            "the connection is closed, counted as the bytes arrive (never buffered beyond it)."
        ),
    )
    max_header_count: int = Field(
        default=100,
        ge=8,
        le=10_000,
        description=(
            "Most header lines one request may have; more gets 431 headers_too_large and the "
            "connection is closed."
        ),
    )
    max_connections: int = Field(
        default=2048,
        ge=16,
        le=1_000_000,
        description=(
            "Most open connections per server process (each worker has its own); one more is "
            "answered 503 overloaded with Retry-After and closed as it is accepted. The process "
            "raises its open-file limit to this plus 256 at start, and refuses to start when "
            "the hard limit is lower."
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
    overload_retry_after_s: int = Field(
        default=1,
        ge=1,
        description="Retry-After (seconds) sent with 503 overloaded (queue full or deadline).",
    )
    max_request_id_chars: int = Field(
        default=64,
        ge=8,
        le=256,
        description=(
            "Longest x-request-id echoed back; a longer (or non [A-Za-z0-9._-]) one is replaced "
            "by a generated id."
        ),
    )
    not_ready_retry_after_s: int = Field(
        default=1,
        ge=1,
        description="Retry-After (seconds) sent with 503 not_ready while bundles are loading.",
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
    read_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description=(
            "API keys (comma-separated in the environment, each at least 16 visible ASCII "
            "characters) accepted on every route except /healthz, /readyz, /metrics and the "
            "docs, as 'Authorization: Bearer <key>' or 'x-api-key: <key>'. Set: no key gets "
            "401 unauthorized, a wrong key 403 forbidden. Empty: those routes are open."
        ),
    )
    admin_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description=(
            "API keys for the /v1/admin routes (they pass on the read routes too); no key gets "
            "401 unauthorized, a read or wrong key 403 forbidden. Empty: admin routes answer "
            "403 to everyone."
        ),
    )
    admin_reload: bool = Field(
        default=False,
        description=(
            "Serve POST /v1/admin/reload (hot bundle reload); needs admin_keys, or the service "
            "refuses to start. Off: the route answers 403 forbidden."
        ),
    )
    allow_unauthenticated_public: bool = Field(
        default=False,
        description=(
            "Let a host that is not loopback serve without read_keys (anyone reaching the port "
            "may query); without it the service refuses to start on such settings."
        ),
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description=(
            "Origins (scheme://host[:port], comma-separated in the environment, or '*') whose "
            "browser pages may call the API; empty: no CORS headers, so browsers refuse "
            "cross-origin calls."
        ),
    )
    cors_allow_credentials: bool = Field(
        default=False,
        description=(
            "Let browsers send credentials (cookies, Authorization) cross-origin to "
            "cors_origins; refused at start together with the origin '*'."
        ),
    )
    log_level: LogLevel = Field(default="info", description="Level of the service's log lines.")

    @field_validator("bundles", mode="before")
    @classmethod
    def _split_bundle_names(cls, value: object) -> object:
        """Accept ``a,b`` (environment style) as well as a list."""
        if isinstance(value, str):
            names = [name.strip() for name in value.split(",")]
            return [name for name in names if name]
        return value

    @field_validator("providers", mode="before")
    @classmethod
    def _split_provider_list(cls, value: object) -> object:
        """A keyword stays a keyword (any case); anything else is a comma-separated list."""
        if isinstance(value, str):
            text = value.strip()
            if text.lower() in get_args(ProviderChoice):
                return text.lower()
            return tuple(part.strip() for part in text.split(",") if part.strip())
        if isinstance(value, list):
            return tuple(value)
        return value

    @field_validator("providers")
    @classmethod
    def _provider_names_are_names(
        cls, value: ProviderChoice | tuple[str, ...]
    ) -> ProviderChoice | tuple[str, ...]:
        if not isinstance(value, tuple):
            return value
        keywords = ", ".join(get_args(ProviderChoice))
        if not value:
            raise ValueError(f"must be one of {keywords} or a list of provider names")
        bad = [name for name in value if not is_provider_name(name)]
        if bad:
            raise ValueError(
                f"{bad} are neither keywords ({keywords}) nor onnxruntime provider names "
                "(e.g. CUDAExecutionProvider)"
            )
        if len(set(value)) != len(value):
            raise ValueError(f"provider names repeat: {list(value)}")
        return value

    @field_validator("read_keys", "admin_keys", "cors_origins", mode="before")
    @classmethod
    def _split_lists(cls, value: object) -> object:
        """Accept ``a,b`` (environment style) as well as a list; blanks are dropped."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("read_keys", "admin_keys")
    @classmethod
    def _keys_are_strong(cls, value: list[SecretStr]) -> list[SecretStr]:
        # The messages never quote a key: position only.
        for position, key in enumerate(value):
            secret = key.get_secret_value()
            if len(secret) < MIN_KEY_CHARS:
                raise ValueError(
                    f"key #{position} is shorter than {MIN_KEY_CHARS} characters; use a long "
                    "random key (python -c 'import secrets; print(secrets.token_urlsafe(32))')"
                )
            if not _KEY_CHARS.match(secret):
                raise ValueError(f"key #{position} must be visible ASCII without spaces or commas")
        return value

    @field_validator("cors_origins")
    @classmethod
    def _origins_are_origins(cls, value: list[str]) -> list[str]:
        for origin in value:
            if origin != "*" and not _ORIGIN.match(origin):
                raise ValueError(
                    f"CORS origin {origin!r} must be '*' or scheme://host[:port] without a path"
                )
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lowercase_log_level(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @field_validator("bundles")
    @classmethod
    def _bundle_names_are_plain(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("must name at least one bundle (leave it unset to serve all)")
        for name in value:
            if "/" in name or "\\" in name or name in {".", ".."} or name.startswith("."):
                raise ValueError(f"bundle name {name!r} must be a plain folder name")
        if len(set(value)) != len(value):
            raise ValueError(f"bundle names repeat: {value}")
        return value

    @model_validator(mode="after")
    def _limits_fit_together(self) -> Settings:
        # A body limit that cannot carry one ASCII text of max_text_chars plus the JSON around it
        # would answer 413 where the documented text limit promises acceptance.
        needed = self.max_text_chars + JSON_OVERHEAD_BYTES
        if self.max_body_bytes < needed:
            raise ValueError(
                f"max_body_bytes={self.max_body_bytes} cannot hold one text of max_text_chars="
                f"{self.max_text_chars} characters; raise it to at least {needed}"
            )
        # An upload limit below one image of max_image_bytes (plus its form) would answer 413
        # to an image the documented image limit promises to accept. JSON routes are different
        # by design: they carry small images only, and their 413 names the upload route.
        upload_needed = self.max_image_bytes + UPLOAD_OVERHEAD_BYTES
        if self.max_upload_body_bytes is not None and self.max_upload_body_bytes < upload_needed:
            raise ValueError(
                f"max_upload_body_bytes={self.max_upload_body_bytes} cannot hold one image of "
                f"max_image_bytes={self.max_image_bytes} and its form fields; raise it to at "
                f"least {upload_needed} or leave it unset"
            )
        return self

    @model_validator(mode="after")
    def _safe_to_serve(self) -> Settings:
        """Refuse combinations that would expose the service or its admin routes by mistake."""
        if (
            not self.read_keys
            and not self.allow_unauthenticated_public
            and not is_loopback(self.host)
        ):
            raise ValueError(
                f"host {self.host!r} is not loopback and read_keys is empty: anyone reaching the "
                "port could query; set CRISSCROSS_READ_KEYS, or "
                "CRISSCROSS_ALLOW_UNAUTHENTICATED_PUBLIC=true if that is intended"
            )
        if self.admin_reload and not self.admin_keys:
            raise ValueError(
                "admin_reload is on but admin_keys is empty: set CRISSCROSS_ADMIN_KEYS (nobody "
                "could call the route) or turn admin_reload off"
            )
        if self.cors_allow_credentials and "*" in self.cors_origins:
            raise ValueError(
                "cors_allow_credentials with the origin '*' would let any web page call the API "
                "with a visitor's credentials; list the origins instead"
            )
        return self

    @property
    def request_timeout_s(self) -> float:
        """``request_timeout_ms`` in seconds."""
        return self.request_timeout_ms / 1000.0

    @property
    def upload_body_limit(self) -> int:
        """The body limit in bytes of ``POST /v1/search/upload`` (``max_upload_body_bytes``, or
        ``max_image_bytes`` + :data:`UPLOAD_OVERHEAD_BYTES` when unset)."""
        if self.max_upload_body_bytes is not None:
            return self.max_upload_body_bytes
        return self.max_image_bytes + UPLOAD_OVERHEAD_BYTES

    @property
    def max_json_image_bytes(self) -> int:
        """About the largest image (bytes) whose base64 fits a JSON body of ``max_body_bytes``
        (3/4 of the body less the smallest JSON around it); never above ``max_image_bytes``."""
        return min(self.max_image_bytes, (self.max_body_bytes - JSON_OVERHEAD_BYTES) * 3 // 4)

    def bundle_dirs(self) -> list[Path]:
        """The ``<bundles_root>/<name>`` folders to serve, sorted by name.

        Raises :class:`SettingsError` when ``bundles_root`` is not a folder, when a named bundle
        has no ``CURRENT`` pointer, or when nothing is left to serve.
        """
        root = self.bundles_root
        if not root.is_dir():
            raise SettingsError(
                f"bundles_root {str(root)!r} is not a folder (set CRISSCROSS_BUNDLES_ROOT or "
                "--bundles-root; build bundles with `python -m index_builder build`)"
            )
        if self.bundles is None:
            found = sorted(
                child
                for child in root.iterdir()
                if child.is_dir()
                and not child.name.startswith(".")
                and (child / CURRENT_FILE).is_file()
            )
            if not found:
                raise SettingsError(f"no bundle with a {CURRENT_FILE} pointer under {str(root)!r}")
            return found
        missing = [name for name in self.bundles if not (root / name / CURRENT_FILE).is_file()]
        if missing:
            raise SettingsError(
                f"bundles {missing} have no {CURRENT_FILE} pointer under {str(root)!r}"
            )
        return [root / name for name in sorted(self.bundles)]

    def check_serving_paths(self) -> None:
        """Fail fast, before the server starts, on paths that cannot serve anything.

        Raises :class:`SettingsError` with a message meant for the operator.
        """
        self.bundle_dirs()
        if not self.variants_root.is_dir():
            raise SettingsError(
                f"variants_root {str(self.variants_root)!r} is not a folder "
                "(set CRISSCROSS_VARIANTS_ROOT or --variants-root)"
            )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an interface address or name) only accepts local connections:
    ``localhost``, 127.0.0.0/8 or ``::1``. ``0.0.0.0``, ``::`` and other names are public."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
