"""``POST /v1/admin/reload``: which bundle versions to load, and what the reload did."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from service.engine.collection.name_patterns import BUNDLE_VERSION
from service.http.schemas.wire import StrictRequest

BundleName = Annotated[
    str, Field(min_length=1, max_length=128, description="A served bundle's name.")
]


BundleVersion = Annotated[
    str,
    Field(
        pattern=BUNDLE_VERSION.pattern,
        description="A version folder of the bundle (need not be the one CURRENT names).",
    ),
]


class ReloadRequest(StrictRequest):
    """``POST /v1/admin/reload``: which bundle version(s) to load. Empty (or no body): read every
    served bundle's CURRENT again. ``bundle`` alone: that bundle's CURRENT. ``bundle`` and
    ``version``: that version."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{}, {"bundle": "coco-captions"}],
            # 'version' needs 'bundle' (a name, not null): the document says what the check says.
            "dependentSchemas": {
                "version": {"required": ["bundle"], "properties": {"bundle": {"type": "string"}}}
            },
        }
    )

    bundle: BundleName | None = None
    version: BundleVersion | None = None

    @model_validator(mode="after")
    def _version_needs_bundle(self) -> ReloadRequest:
        if self.version is not None and self.bundle is None:
            raise ValueError("'version' needs 'bundle'")
        return self


class ReloadedBundle(BaseModel):
    """One served bundle after a reload."""

    bundle: str
    previous_version: str
    version: str
    changed: bool = Field(description="Whether another version serves now.")


class ReloadResponse(BaseModel):
    """What the reload did; a new store serves from now on when any bundle ``changed``."""

    bundles: list[ReloadedBundle]
    load_ms: float = Field(description="Time spent loading and verifying, in milliseconds.")
    workers: int = Field(
        description="Worker processes serving these versions when the answer was sent: all of "
        "them, unless one could not load them or had not within reload_broadcast_timeout_s "
        "(the log names it)."
    )
