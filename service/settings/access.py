"""Who may call what: API keys, the admin routes, a public host, CORS."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import NoDecode

from service.settings.names import (
    _KEY_CHARS,
    _ORIGIN,
    MIN_KEY_CHARS,
)


class AccessSettings(BaseModel):
    """Who may call what: API keys, the admin routes, a public host, CORS."""

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
    write_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description=(
            "API keys that may also write live collections (upsert, delete, patch; they pass "
            "on the read routes too). With read_keys set, a write needs a write or admin key "
            "(a read key gets 403 forbidden) and creating or dropping a collection an admin "
            "key; with no read_keys, the write routes are as open as the read routes."
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

    @field_validator("read_keys", "admin_keys", "write_keys", "cors_origins", mode="before")
    @classmethod
    def _split_lists(cls, value: object) -> object:
        """Accept ``a,b`` (environment style) as well as a list; blanks are dropped."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("read_keys", "admin_keys", "write_keys")
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
