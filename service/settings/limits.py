"""Per-request limits: sizes of bodies, texts, images, pages, filters and batches of inputs,
each checked before the expensive work, each answered with its documented status."""

from __future__ import annotations

from pydantic import BaseModel, Field

from service.settings.names import (
    JSON_OVERHEAD_BYTES,
    MIB,
    UPLOAD_OVERHEAD_BYTES,
    UPLOAD_ROUTE,
)


class RequestLimitSettings(BaseModel):
    """Per-request limits: sizes of bodies, texts, images, pages, filters and batches of inputs,"""

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
    max_scroll_limit: int = Field(
        default=1000,
        ge=1,
        description=(
            "Most items one page of POST /v1/collections/{name}/items/scroll may ask for "
            "(limit); more gives 422 invalid_input before anything is read."
        ),
    )
    max_window: int = Field(
        default=1000,
        ge=1,
        description=(
            "Largest window a hybrid search or a re-rank may ask for (candidates per leg, or "
            "of the first stage; each is searched, scored and sorted); more gives 422 "
            "invalid_input before anything is encoded."
        ),
    )
    max_nprobe: int = Field(
        default=1024,
        ge=1,
        description=(
            "Largest search_params.nprobe a search may ask for (inverted lists an IVF index "
            "scans; cost grows with it); more gives 422 invalid_input before anything is "
            "encoded. A value above the collection's own nlist gives 409 "
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
        default=2048,
        ge=1,
        description=(
            "Most texts one /v1/embed or /v1/embeddings request may hold (2048: OpenAI's own "
            "limit, so OpenAI clients' default batches fit); more gives 422 invalid_input. A "
            "request runs alone in one encoder call (cut into runs of at most 64 texts), and "
            "its body must still fit max_body_bytes: 2048 texts of up to about 500 bytes each "
            "(as JSON) do; longer ones need a larger max_body_bytes or smaller batches."
        ),
    )
    max_exclude: int = Field(
        default=1000,
        ge=0,
        description="Most ids a search's 'exclude' list may hold; more gives 422 invalid_input.",
    )

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
