# ruff: noqa: N818 - the exception names say what happened (NotFound, Conflict...), as the issue asks
"""Typed exceptions for everything that can go wrong talking to the service.

`ServiceError` and its subclasses carry what the service said (status, code, message, details) in
either of the contract's two error shapes; a body that is not one of them (an HTML page from a proxy,
garbage) still gives a readable error with the status and a snippet of the body. `ConnectionLost` is
the transport failing, `ProtocolError` the service answering something the contract does not allow.

    try:
        await client.sessions.create(name="x")
    except Conflict as e:
        print(e)   # conflict (409): a browser session named 'x' already exists
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bbrowse.wire import ErrorDetail

SNIPPET_CHARS = 200


class ClientError(Exception):
    """Base of every error this client raises on purpose."""


class ConfigError(ClientError):
    """No token, or a base URL that is not http(s)://host."""


class ConnectionLost(ClientError):
    """The service could not be reached, or the connection broke mid-request or mid-stream."""


class RequestTimeout(ConnectionLost):
    """The service accepted the connection but did not answer in time."""


class LinkStalled(ConnectionLost):
    """A long-lived connection went silent and did not answer a check in time (a WebSocket ping, a call):
    the link stalled (a laptop lid, a Wi-Fi change). The connection was dropped; it is opened again once the
    service answers."""


class VmGoingAway(ConnectionLost):
    """The session's VM closed the connection with 1001 "going away" (Kernel's VM shutting down, e.g.
    `browser shutting down`): reconnecting to it is pointless; `reason` is what it said."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class ProtocolError(ClientError):
    """The service answered something the contract does not allow: a garbage SSE frame, non-JSON data,
    a wrong content type, a response body that is not the expected model."""


class IncompleteStream(ProtocolError):
    """A stream ended cleanly but too early: in the middle of an SSE event, or a process output stream
    without its final exit event."""


class ServiceError(ClientError):
    """The service answered with an error status; `code` and `message` are what it said."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[ErrorDetail] | None = None,
        inner_error: ErrorDetail | None = None,
        *,
        method: str | None = None,
        url: str | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.inner_error = inner_error
        self.method = method
        self.url = url
        super().__init__(self.__str__())

    def __str__(self) -> str:
        text = f"{self.code} ({self.status}): {self.message}"
        notes = [note for d in self.details if (note := d.message or d.code)]
        if notes:
            text += " [" + "; ".join(notes) + "]"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, message={self.message!r})"


class BadRequest(ServiceError):
    """400: the request was invalid; `details` name the fields."""


class Unauthorized(ServiceError):
    """401: missing or wrong bearer token."""


class Forbidden(ServiceError):
    """403: not allowed, e.g. `as_root` when the service cannot switch users."""


class NotFound(ServiceError):
    """404: no such session, process, file or replay."""


class Conflict(ServiceError):
    """409: duplicate session name, a recording already running, a second attach."""


class SessionGone(ServiceError):
    """410: the session was deleted or timed out."""


class SessionNotLeased(ServiceError):
    """423: the session exists but is not usable by this caller."""


class RateLimited(ServiceError):
    """429: too many requests; `retry_after` is the service's hint in seconds, when it gave one."""

    retry_after: float | None = None


class ServerError(ServiceError):
    """5xx: the service failed."""


class BrowserUnavailable(ServerError):
    """502/503 `browser_unavailable`: Chromium is not installed, crashed, or not answering."""


_BY_STATUS: dict[int, type[ServiceError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: SessionGone,
    423: SessionNotLeased,
    429: RateLimited,
}

_BY_CODE: dict[str, type[ServiceError]] = {
    "bad_request": BadRequest,
    "invalid_request": BadRequest,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "conflict": Conflict,
    "session_gone": SessionGone,
    "session_not_leased": SessionNotLeased,
    "rate_limit_exceeded": RateLimited,
    "browser_unavailable": BrowserUnavailable,
    "internal_error": ServerError,
}

#: The code used when the body carries none, by status.
_DEFAULT_CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    410: "session_gone",
    423: "session_not_leased",
    429: "rate_limit_exceeded",
}


@dataclass(frozen=True)
class ParsedErrorBody:
    code: str | None
    message: str | None
    details: list[ErrorDetail]
    inner_error: ErrorDetail | None


def parse_error_body(body: bytes) -> ParsedErrorBody | None:
    """Read an `Error` or `InstanceProxyError` body; None when the body is neither (never raises)."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    code, message = data.get("code"), data.get("message")
    if not isinstance(code, str) and not isinstance(message, str):
        return None
    details = [_detail(d) for d in data.get("details") or [] if isinstance(d, dict)]
    inner = data.get("inner_error")
    return ParsedErrorBody(
        code=code if isinstance(code, str) else None,
        message=message if isinstance(message, str) else None,
        details=details,
        inner_error=_detail(inner) if isinstance(inner, dict) else None,
    )


def _detail(raw: dict[str, Any]) -> ErrorDetail:
    code, message = raw.get("code"), raw.get("message")
    return ErrorDetail(code=code if isinstance(code, str) else None,
                       message=message if isinstance(message, str) else None)


def snippet(body: bytes, limit: int = SNIPPET_CHARS) -> str:
    text = body[: limit * 4].decode("utf-8", errors="replace").strip()
    text = " ".join(text.split())
    return text[:limit] + ("…" if len(text) > limit else "")


def error_class(status: int, code: str | None) -> type[ServiceError]:
    """Status decides; the code refines where the status is shared (502/503) or unknown."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status in (502, 503) and code == "browser_unavailable":
        return BrowserUnavailable
    if status >= 500:
        return ServerError
    return _BY_CODE.get(code or "", ServiceError)


def error_from_response(
    status: int,
    body: bytes,
    *,
    method: str | None = None,
    url: str | None = None,
    retry_after: float | None = None,
) -> ServiceError:
    """The typed exception for an error response, whatever its body looks like."""
    parsed = parse_error_body(body)
    if parsed is None:
        code = _DEFAULT_CODES.get(status, "internal_error" if status >= 500 else "http_error")
        shown = snippet(body)
        message = (f"HTTP {status} with a body that is not a service error: {shown!r}" if shown
                   else f"HTTP {status} with an empty body")
        details: list[ErrorDetail] = []
        inner = None
    else:
        code = parsed.code or _DEFAULT_CODES.get(status, "internal_error" if status >= 500 else "http_error")
        message = parsed.message or f"HTTP {status}"
        details, inner = parsed.details, parsed.inner_error
    cls = error_class(status, parsed.code if parsed else None)
    error = cls(status, code, message, details, inner, method=method, url=url)
    if isinstance(error, RateLimited):
        error.retry_after = retry_after
    return error
