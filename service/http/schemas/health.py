"""``GET /healthz`` and ``GET /readyz``."""

from __future__ import annotations

from pydantic import (
    BaseModel,
)


class StatusResponse(BaseModel):
    """Liveness / readiness answer."""

    status: str
