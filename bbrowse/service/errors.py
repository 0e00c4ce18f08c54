"""Service errors and how they become the contract's two body shapes.

Raise `ServiceError` (or one of the helpers) anywhere in a route; the handlers in `app.py` turn it
into the right shape for its status, so no route builds an error body by hand.
"""

from __future__ import annotations

from bbrowse.wire import ERROR_SHAPE_STATUSES, Error, ErrorDetail, InstanceProxyError, InstanceProxyErrorCode


class ServiceError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[ErrorDetail] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers or {}

    def body(self) -> dict:
        return error_body(self.status, self.code, self.message, self.details)


def error_body(status: int, code: str, message: str, details: list[ErrorDetail] | None = None) -> dict:
    """The body for `status`: `Error` for 400/404/500, `InstanceProxyError` for the rest."""
    if status in ERROR_SHAPE_STATUSES:
        return Error(code=code, message=message, details=details).model_dump(exclude_none=True)
    try:
        proxy_code = InstanceProxyErrorCode(code)
    except ValueError:
        proxy_code = _DEFAULT_PROXY_CODES.get(status, InstanceProxyErrorCode.INTERNAL_ERROR)
    return InstanceProxyError(code=proxy_code, message=message).model_dump(mode="json")


_DEFAULT_PROXY_CODES = {
    401: InstanceProxyErrorCode.UNAUTHORIZED,
    403: InstanceProxyErrorCode.FORBIDDEN,
    405: InstanceProxyErrorCode.INVALID_REQUEST,
    409: InstanceProxyErrorCode.CONFLICT,
    410: InstanceProxyErrorCode.SESSION_GONE,
    413: InstanceProxyErrorCode.INVALID_REQUEST,
    415: InstanceProxyErrorCode.INVALID_REQUEST,
    422: InstanceProxyErrorCode.INVALID_REQUEST,
    423: InstanceProxyErrorCode.SESSION_NOT_LEASED,
    429: InstanceProxyErrorCode.RATE_LIMIT_EXCEEDED,
    502: InstanceProxyErrorCode.BROWSER_UNAVAILABLE,
    503: InstanceProxyErrorCode.BROWSER_UNAVAILABLE,
}


def bad_request(message: str, field: str | None = None) -> ServiceError:
    detail = f"{field}: {message}" if field else message
    return ServiceError(400, "bad_request", message, [ErrorDetail(code="invalid_input", message=detail)])


def not_found(message: str) -> ServiceError:
    return ServiceError(404, "not_found", message)


def conflict(message: str) -> ServiceError:
    return ServiceError(409, InstanceProxyErrorCode.CONFLICT, message)


def internal_error(message: str) -> ServiceError:
    return ServiceError(500, "internal_error", message)


def forbidden(message: str) -> ServiceError:
    return ServiceError(403, InstanceProxyErrorCode.FORBIDDEN, message)


def session_gone(message: str) -> ServiceError:
    return ServiceError(410, InstanceProxyErrorCode.SESSION_GONE, message)


def unauthorized(message: str = "missing or invalid bearer token") -> ServiceError:
    return ServiceError(401, InstanceProxyErrorCode.UNAUTHORIZED, message)


def browser_unavailable(message: str, status: int = 503) -> ServiceError:
    return ServiceError(status, InstanceProxyErrorCode.BROWSER_UNAVAILABLE, message)
