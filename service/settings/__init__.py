"""Service settings: one pydantic-settings class, read from ``CRISSCROSS_*`` environment variables.

Every limit has a default and says what a request that hits it gets. Limits are enforced before
the expensive work (decoding, encoding, searching). The settings are grouped by concern, a
module each (:mod:`.serving`, :mod:`.processes`, :mod:`.limits`, :mod:`.load`, :mod:`.clients`,
:mod:`.access`, :mod:`.telemetry`); :class:`Settings` is all of them, with the checks that
span groups.
"""

from __future__ import annotations

from pydantic import model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from service.settings.access import AccessSettings
from service.settings.clients import ClientLimitSettings
from service.settings.limits import RequestLimitSettings
from service.settings.load import LoadSettings
from service.settings.names import (
    BULK_ROUTE,
    JSON_OVERHEAD_BYTES,
    KIB,
    LOOPBACK_NAMES,
    MIB,
    MIN_KEY_CHARS,
    UPLOAD_OVERHEAD_BYTES,
    UPLOAD_ROUTE,
    FaissDevice,
    LogLevel,
    ProviderChoice,
    SettingsError,
    is_loopback,
)
from service.settings.processes import ProcessSettings
from service.settings.replication import Acks, FollowerReads, ReplicationSettings
from service.settings.serving import ServingSettings
from service.settings.telemetry import AccessLogFormat, TelemetrySettings, traces_url
from service.settings.writes import WriteSettings

__all__ = [
    "BULK_ROUTE",
    "JSON_OVERHEAD_BYTES",
    "KIB",
    "LOOPBACK_NAMES",
    "MIB",
    "MIN_KEY_CHARS",
    "SETTING_GROUPS",
    "UPLOAD_OVERHEAD_BYTES",
    "UPLOAD_ROUTE",
    "AccessLogFormat",
    "Acks",
    "FaissDevice",
    "FollowerReads",
    "LogLevel",
    "ProviderChoice",
    "Settings",
    "SettingsError",
    "is_loopback",
    "traces_url",
]

SETTING_GROUPS = (
    ("Serving", ServingSettings),
    ("Processes", ProcessSettings),
    ("Request limits", RequestLimitSettings),
    ("Load", LoadSettings),
    ("Clients", ClientLimitSettings),
    ("Access", AccessSettings),
    ("Live collections", WriteSettings),
    ("Replicas", ReplicationSettings),
    ("Telemetry", TelemetrySettings),
)
"""The groups in the order the settings document lists them."""


class Settings(
    TelemetrySettings,
    ReplicationSettings,
    WriteSettings,
    AccessSettings,
    ClientLimitSettings,
    LoadSettings,
    RequestLimitSettings,
    ProcessSettings,
    ServingSettings,
    BaseSettings,
):
    """Everything the service can be told. Environment variables use the ``CRISSCROSS_`` prefix
    (``CRISSCROSS_MAX_K=50``); keyword arguments (and CLI flags) win over the environment."""

    model_config = SettingsConfigDict(
        env_prefix="CRISSCROSS_",
        extra="forbid",
        validate_default=True,
        frozen=True,
        hide_input_in_errors=True,
    )

    @property
    def own_url(self) -> str:
        """The URL other replicas reach this server at (advertise_url, else host and port)."""
        return self.advertise_url or f"http://{self.host}:{self.port}"

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
        if self.collections_dir is not None and self.workers > 1:
            raise ValueError(
                f"collections_dir is set and workers={self.workers}: a live collection's log has "
                "one owner, so live collections need one server process; set workers to 1 (or "
                "0), or leave collections_dir unset"
            )
        if self.follow is not None and self.collections_dir is None:
            raise ValueError(
                "follow is set but collections_dir is not: a follower keeps its copy of the "
                "leader's live collections there; set CRISSCROSS_COLLECTIONS_DIR"
            )
        if self.cors_allow_credentials and "*" in self.cors_origins:
            raise ValueError(
                "cors_allow_credentials with the origin '*' would let any web page call the API "
                "with a visitor's credentials; list the origins instead"
            )
        return self
