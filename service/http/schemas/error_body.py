"""The one error shape of every non-2xx answer, as the OpenAPI document states it."""

from __future__ import annotations

from pydantic import (
    BaseModel,
)


class ErrorDetail(BaseModel):
    """What went wrong; ``code`` is one of the codes in docs/contracts.md."""

    code: str
    message: str
    request_id: str


class ErrorResponse(BaseModel):
    """The one error shape of every non-2xx answer."""

    error: ErrorDetail
