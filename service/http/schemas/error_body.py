"""The one error shape of every non-2xx answer, as the OpenAPI document states it."""

from __future__ import annotations

from pydantic import (
    BaseModel,
    Field,
)


class ErrorDetail(BaseModel):
    """What went wrong; ``code`` is one of the codes in docs/contracts.md."""

    code: str
    message: str
    request_id: str
    type: str = Field(
        description="OpenAI's error type (what the openai package reads): "
        "invalid_request_error, authentication_error, permission_error, not_found_error, "
        "service_unavailable_error or server_error."
    )
    param: str | None = Field(description="The request field at fault, where one is.")


class ErrorResponse(BaseModel):
    """The one error shape of every non-2xx answer."""

    error: ErrorDetail
