"""The contract's two error bodies.

`Error` is used for 400, 404 and 500; `InstanceProxyError` for every other status.
Both sides import these so a shape can only change in one place.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel


class InstanceProxyErrorCode(StrEnum):
    """The ten exact codes the spec allows in an InstanceProxyError."""

    INVALID_REQUEST = "invalid_request"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    SESSION_NOT_LEASED = "session_not_leased"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    SESSION_GONE = "session_gone"
    RATE_LIMIT_EXCEEDED = "rate_limit_exceeded"
    INTERNAL_ERROR = "internal_error"
    BROWSER_UNAVAILABLE = "browser_unavailable"


#: Statuses whose body is the `Error` shape; every other status uses `InstanceProxyError`.
ERROR_SHAPE_STATUSES = frozenset({400, 404, 500})


class ErrorDetail(BaseModel):
    code: str | None = None
    message: str | None = None


class Error(BaseModel):
    code: str
    message: str
    details: list[ErrorDetail] | None = None
    inner_error: ErrorDetail | None = None


class InstanceProxyError(BaseModel):
    code: InstanceProxyErrorCode
    message: str
