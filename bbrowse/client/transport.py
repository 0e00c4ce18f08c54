"""Sending one call: the shared connection pool, retries of idempotent calls, error mapping.

Every area of the client (sessions, processes, files...) goes through `Transport.request` for
plain calls and `Transport.open_stream` for streamed bodies and SSE, so retry and error rules live
in one place. Non-idempotent calls (stdin, spawn, exec, create, replay start) are sent exactly once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import aconnect_sse

from bbrowse.client.config import ClientConfig
from bbrowse.client.errors import ConnectionLost, RequestTimeout, error_from_response
from bbrowse.client.pool import shared_http_client
from bbrowse.client.retry import RETRYABLE_STATUSES, parse_retry_after

#: Error bodies are read up to this size; anything longer is not a contract error body anyway.
MAX_ERROR_BODY = 64 * 1024
_OK = (200,)


def segment(value: str) -> str:
    """One path segment: ids and names are quoted so a name with '/' or spaces cannot change the route."""
    return quote(str(value), safe="")


def describe_transport_error(exc: httpx.TransportError, method: str, url: str) -> ConnectionLost:
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return RequestTimeout(f"{method} {url}: timed out ({type(exc).__name__}: {reason})")
    return ConnectionLost(f"{method} {url}: {reason}")


class Transport:
    """Sends calls for one `ClientConfig`; shares its connections with every other Transport of the same config."""

    def __init__(self, config: ClientConfig, http: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self._own_http = http
        #: Streams wait for data as long as the service keeps the connection open.
        self.stream_timeout = httpx.Timeout(config.timeout, connect=config.connect_timeout, read=None)

    @property
    def http(self) -> httpx.AsyncClient:
        return self._own_http if self._own_http is not None else shared_http_client(self.config)

    def url(self, path: str) -> str:
        return self.config.base_url + path

    async def request(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | object | None = httpx.USE_CLIENT_DEFAULT,
        ok: Iterable[int] = _OK,
    ) -> httpx.Response:
        """Send a call; its response (body read) when the status is in `ok`, the typed error otherwise."""
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                response = await self.http.request(
                    method, path, params=params, json=json, content=content, headers=headers, timeout=timeout,
                )
            except httpx.TransportError as exc:
                error = describe_transport_error(exc, method, self.url(path))
                await self._wait_or_raise(error, exc, attempt, None, idempotent, started)
                attempt += 1
                continue
            if response.status_code in ok:
                return response
            error = self._error(response, response.content, method, path)
            await self._wait_or_raise(error, None, attempt, response, idempotent, started)
            attempt += 1

    @asynccontextmanager
    async def open_stream(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool = True,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        sse: bool = False,
        ok: Iterable[int] = _OK,
    ) -> AsyncIterator[httpx.Response]:
        """Open a streamed response and yield it once its status is in `ok` (the body not yet read).

        Retries happen only before the first byte of a good response is handed over, so a stream is
        never replayed. SSE streams are opened with httpx-sse's `aconnect_sse` (its Accept headers).
        """
        started = time.monotonic()
        attempt = 0
        ok = tuple(ok)
        while True:
            opener: AbstractAsyncContextManager[Any]
            kwargs = {"params": params, "json": json, "timeout": self.stream_timeout}
            if sse:
                opener = aconnect_sse(self.http, method, path, **kwargs)
            else:
                opener = self.http.stream(method, path, **kwargs)
            try:
                opened = await opener.__aenter__()
            except httpx.TransportError as exc:
                error = describe_transport_error(exc, method, self.url(path))
                await self._wait_or_raise(error, exc, attempt, None, idempotent, started)
                attempt += 1
                continue
            response: httpx.Response = opened.response if sse else opened
            if response.status_code in ok:
                break
            try:
                body = await read_bounded(response, MAX_ERROR_BODY)
            except httpx.TransportError:
                body = b""
            finally:
                await opener.__aexit__(None, None, None)
            error = self._error(response, body, method, path)
            await self._wait_or_raise(error, None, attempt, response, idempotent, started)
            attempt += 1
        try:
            yield response
        except BaseException as exc:
            if not await opener.__aexit__(type(exc), exc, exc.__traceback__):
                raise
        else:
            await opener.__aexit__(None, None, None)

    def _error(self, response: httpx.Response, body: bytes, method: str, path: str):
        return error_from_response(
            response.status_code, body, method=method, url=self.url(path),
            retry_after=parse_retry_after(response.headers.get("retry-after")),
        )

    async def _wait_or_raise(
        self,
        error: Exception,
        cause: BaseException | None,
        attempt: int,
        response: httpx.Response | None,
        idempotent: bool,
        started: float,
    ) -> None:
        """Sleep before the next try when the policy allows one; raise `error` otherwise."""
        policy = self.config.retry
        retryable = idempotent and (response is None or response.status_code in RETRYABLE_STATUSES)
        delay = None
        if retryable:
            retry_after = parse_retry_after(response.headers.get("retry-after")) if response is not None else None
            delay = policy.delay_for(attempt, retry_after)
        if delay is None or time.monotonic() - started + delay > policy.total_seconds:
            raise error from cause
        await asyncio.sleep(delay)


async def read_bounded(response: httpx.Response, limit: int) -> bytes:
    """Up to `limit` bytes of a streamed body (an error body from a misbehaving proxy can be huge)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(parts)[:limit]


async def iter_body(response: httpx.Response, what: str, chunk_size: int | None = None) -> AsyncIterator[bytes]:
    """The body of a streamed response in chunks; a broken connection becomes `ConnectionLost`."""
    try:
        async for chunk in response.aiter_bytes(chunk_size):
            yield chunk
    except httpx.TransportError as exc:
        raise ConnectionLost(f"{what}: connection lost mid-stream ({exc or type(exc).__name__})") from exc
