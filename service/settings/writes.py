"""Live collections: where they live, and the limits of the write routes, each checked before
anything is embedded or logged."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from service.settings.names import MIB


class WriteSettings(BaseModel):
    """Live collections: where they live, and the limits of the write routes."""

    collections_dir: Path | None = Field(
        default=None,
        description=(
            "Folder of the live collections (created over HTTP, written by upsert and delete, "
            "each a spec and a write-ahead log). Unset: the collection routes answer 409 "
            "writes_unavailable. Live collections need one server process (workers 1; workers "
            "0 then means 1): the service refuses to start with more, since each log has one "
            "owner."
        ),
    )
    max_write_items: int = Field(
        default=1000,
        ge=1,
        description=(
            "Most items one upsert, delete or get request may name; more gives 422 "
            "invalid_input before anything is embedded or logged."
        ),
    )
    max_write_body_bytes: int = Field(
        default=32 * MIB,
        ge=1,
        description=(
            "Largest body of a /v1/collections/... request in bytes; larger gives 413 "
            "payload_too_large, unread."
        ),
    )
    max_id_chars: int = Field(
        default=512,
        ge=1,
        description="Longest item id a write may use; longer gives 422 invalid_input.",
    )
    max_collections: int = Field(
        default=100,
        ge=1,
        description="Most live collections; creating one more gives 409 collection_limit.",
    )
    max_collection_fields: int = Field(
        default=64,
        ge=0,
        description="Most typed fields a collection may declare; more gives 422 invalid_input.",
    )
    max_live_rows: int = Field(
        default=2_000_000,
        ge=1,
        description=(
            "Most rows a collection's mutable segment may hold (every version of every item, "
            "deleted ones too, until compaction drops them); a write that would pass it gets "
            "503 overloaded with Retry-After, nothing logged."
        ),
    )
    max_log_bytes: int = Field(
        default=8 * 1024 * MIB,
        ge=1,
        description=(
            "Largest write-ahead log of a collection in bytes; once past it, writes get 503 "
            "overloaded with Retry-After, nothing logged."
        ),
    )
    max_pending_writes: int = Field(
        default=256,
        ge=1,
        description=(
            "Write requests a collection may hold waiting for the log (they commit together, "
            "one fsync per group); one more gets 503 overloaded with Retry-After."
        ),
    )
    compact_dead_fraction: float = Field(
        default=0.2,
        gt=0.0,
        le=1.0,
        description=(
            "A collection is compacted in the background (its live items written as a new "
            "base bundle with its faiss index, its log emptied) once this share of its rows "
            "are replaced or deleted versions, and it has at least compact_min_rows rows; "
            "writes wait for it. POST /v1/collections/{name}/compact compacts at once."
        ),
    )
    compact_min_rows: int = Field(
        default=10_000,
        ge=1,
        description="Rows a collection must hold before compact_dead_fraction compacts it.",
    )
    compact_own_rows: int = Field(
        default=100_000,
        ge=1,
        description=(
            "A collection is also compacted in the background once this many rows were "
            "written since its base (they are held in memory and searched exactly until "
            "then; the base is memory-mapped and searched through its index)."
        ),
    )
    write_retry_after_s: int = Field(
        default=1,
        ge=1,
        description="Retry-After (seconds) sent with a write refused by a high-water mark.",
    )
