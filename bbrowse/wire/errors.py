"""The contract's two error bodies, and the two a session's VM endpoint answers in Kernel's cloud.

`Error` is used for 400, 404 and 500; `InstanceProxyError` for every other status.
Both sides import these so a shape can only change in one place.

Kernel's in-VM server (reached through a session's `base_url`) answers its handler errors as a bare
`VmError` `{"message": ...}`, and refuses an `attach` before the WebSocket upgrade with an
`AttachError` `{"type": "error", "message": ...}`. `bbrowse serve --kernel-compat` does the same
under `/vm/{session_id}/`; a client has to read all four shapes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from bbrowse.wire.base import WireModel


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


class ErrorDetail(WireModel):
    code: str | None = None
    message: str | None = None


class Error(WireModel):
    code: str
    message: str
    details: list[ErrorDetail] | None = None
    inner_error: ErrorDetail | None = None


class InstanceProxyError(WireModel):
    code: InstanceProxyErrorCode
    message: str


class VmError(WireModel):
    """An in-VM handler's error body (Kernel's VM, `bbrowse serve --kernel-compat` under `base_url`)."""

    message: str


class AttachError(WireModel):
    """`attach` refused before the upgrade (Kernel's VM, and --kernel-compat): 404, 400 or 409."""

    type: Literal["error"] = "error"
    message: str
