"""Sending one call: the shared connection pool, retries of idempotent calls, error mapping.

Every area of the client (sessions, processes, files...) goes through `Transport.request` for
plain calls and `Transport.open_stream` for streamed bodies and SSE, so retry and error rules live
in one place. Non-idempotent calls (stdin, spawn, exec, create, replay start) are never retried after a
failure that may have come after they took effect; the one resend is the SDK's: a call the session's
VM refused with 401/403 (not executed) goes once to the control plane.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import httpx

from bbrowse.client.config import ClientConfig
from bbrowse.client.errors import ClientError, ConnectionLost, RequestTimeout, ServiceError, error_from_response
from bbrowse.client.pool import narrow_http_client, shared_http_client
from bbrowse.client.retry import RETRYABLE_STATUSES, parse_retry_after
from bbrowse.client.routing import Route, RouteCache, subresources_from_env
from bbrowse.timeouts import bounded

#: Error bodies are read up to this size; anything longer is not a contract error body anyway.
MAX_ERROR_BODY = 64 * 1024
_OK = (200,)
_SSE_HEADERS = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
#: Where to open a WebSocket: its URL, the headers to send, and the session's route when it is the VM's.
Endpoint = tuple[str, dict[str, str], Route | None]


def segment(value: str) -> str:
    """One path segment: ids and names are quoted so a name with '/' or spaces cannot change the route."""
    return quote(str(value), safe="")


def describe_transport_error(exc: httpx.TransportError, method: str, url: str) -> ConnectionLost:
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return RequestTimeout(f"{method} {url}: timed out ({type(exc).__name__}: {reason})")
    return ConnectionLost(f"{method} {url}: {reason}")


class Transport:
    """Sends calls for one `ClientConfig`; shares its connections with every other Transport of the same config.

    Calls to a session's `process/*`, `fs/*`, `logs/stream` and `computer/*` go straight to the session's
    VM when its route is known (`routes`, filled from every Browser object read; see `routing.py`):
    to `{base_url}/{tail}?jwt=...`, with no Authorization header. A 401 or 403 from the VM is the jwt
    check refusing the call before anything ran: the route is dropped and the call is sent once more,
    to the control plane, when its body can be sent again (any body but a streamed upload) and the retry
    policy allows a second try at all (`NO_RETRY` does not, as the SDK's `max_retries=0` does not). This
    is what the official SDK does, for every method: spawn, exec and stdin included, since a call the VM
    refused was not executed. After any other failure those three are never sent again (a 5xx or a
    broken connection may come after the program started or the key was typed).
    """

    def __init__(self, config: ClientConfig, http: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self._own_http = http
        #: Streams wait for data as long as the service keeps the connection open.
        self.stream_timeout = httpx.Timeout(config.timeout, connect=config.connect_timeout, read=None)
        #: Where each session's VM answers (empty: every call goes to the control plane).
        self.routes = RouteCache(subresources_from_env())

    @property
    def http(self) -> httpx.AsyncClient:
        return self._own_http if self._own_http is not None else shared_http_client(self.config)

    def url(self, path: str) -> str:
        return self.config.base_url + path

    def _target(self, path: str, direct: tuple[Route, str] | None) -> str:
        return direct[0].url(direct[1]) if direct is not None else self.url(path)

    def _build(
        self,
        method: str,
        path: str,
        direct: tuple[Route, str] | None,
        *,
        params: Mapping[str, Any] | None,
        json: Any = None,
        content: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: Any = httpx.USE_CLIENT_DEFAULT,
    ) -> httpx.Request:
        if direct is None:
            return self.http.build_request(method, path, params=params, json=json, content=content,
                                           headers=headers, timeout=timeout)
        route, tail = direct
        query = dict(params or {})
        query["jwt"] = route.jwt
        request = self.http.build_request(method, route.url(tail), params=query, json=json, content=content,
                                          headers=headers, timeout=timeout)
        request.headers.pop("Authorization", None)  # the VM takes the jwt; the API key never goes there
        return request

    def _refused_by_vm(self, direct: tuple[Route, str] | None, response: httpx.Response) -> bool:
        """A 401/403 from a session's VM: its route is dropped (unless a fresher one replaced it meanwhile)."""
        if direct is None or response.status_code not in (401, 403):
            return False
        self.routes.forget(direct[0].session_id, direct[0].jwt)
        return True

    async def request(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        content: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | object | None = httpx.USE_CLIENT_DEFAULT,
        ok: Iterable[int] = _OK,
    ) -> httpx.Response:
        """Send a call; its response (body read) when the status is in `ok`, the typed error otherwise."""
        started = time.monotonic()
        attempt = 0
        direct = self.routes.for_path(path)
        while True:
            request = self._build(method, path, direct, params=params, json=json, content=content, headers=headers,
                                  timeout=timeout)
            try:
                response = await self.http.send(request)
            except httpx.TransportError as exc:
                error: ClientError = describe_transport_error(exc, method, self._target(path, direct))
                await self._wait_or_raise(error, exc, attempt, None, idempotent and replayable(content), started)
                attempt += 1
                continue
            if response.status_code in ok:
                return response
            if self._refused_by_vm(direct, response) and replayable(content) and self.config.retry.attempts > 1:
                direct = None  # once: the control plane's own 401/403 is the caller's answer
                continue
            error = self._error(response, response.content, method, self._target(path, direct))
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
        headers: Mapping[str, str] | None = None,
        receive_buffer: int | None = None,
    ) -> AsyncIterator[httpx.Response]:
        """Open a streamed response and yield it once its status is in `ok` (the body not yet read).

        Retries happen only before the first byte of a good response is handed over, so a stream is
        never replayed. SSE streams ask for `text/event-stream` and no caching (as httpx-sse does).
        `receive_buffer`: a body the caller will cut short travels on a connection of its own with a socket
        receive buffer that small, closed with the stream (see `pool.narrow_http_client`).
        """
        narrow = None
        if receive_buffer is not None and self._own_http is None:
            narrow = narrow_http_client(self.config, receive_buffer)
        try:
            async with self._open_stream(method, path, idempotent=idempotent, params=params, json=json, sse=sse,
                                         ok=ok, headers=headers, sender=narrow or self.http) as response:
                yield response
        finally:
            if narrow is not None:
                await narrow.aclose()

    @asynccontextmanager
    async def _open_stream(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        params: Mapping[str, Any] | None,
        json: Any,
        sse: bool,
        ok: Iterable[int],
        headers: Mapping[str, str] | None,
        sender: httpx.AsyncClient,
    ) -> AsyncIterator[httpx.Response]:
        started = time.monotonic()
        attempt = 0
        ok = tuple(ok)
        direct = self.routes.for_path(path)
        headers = {**_SSE_HEADERS, **(headers or {})} if sse else headers
        while True:
            request = self._build(method, path, direct, params=params, json=json, headers=headers,
                                  timeout=self.stream_timeout)
            try:
                response = await sender.send(request, stream=True)
            except httpx.TransportError as exc:
                error: ClientError = describe_transport_error(exc, method, self._target(path, direct))
                await self._wait_or_raise(error, exc, attempt, None, idempotent, started)
                attempt += 1
                continue
            if response.status_code in ok:
                break
            try:
                body = await read_bounded(response, MAX_ERROR_BODY)
            except httpx.TransportError:
                body = b""
            finally:
                await response.aclose()
            if self._refused_by_vm(direct, response) and self.config.retry.attempts > 1:
                direct = None
                continue
            error = self._error(response, body, method, self._target(path, direct))
            await self._wait_or_raise(error, None, attempt, response, idempotent, started)
            attempt += 1
        try:
            yield response
        finally:
            await response.aclose()

    async def probe(self, path: str, *, params: Mapping[str, Any] | None = None, timeout: float) -> bool:
        """Whether the service answers a GET of `path` within `timeout` s, whatever the status: one try, no
        retry. A stream that has been quiet proves nothing (Kernel's SSE has no heartbeat); this does."""
        request = self._build("GET", path, self.routes.for_path(path), params=params, timeout=httpx.Timeout(timeout))
        try:
            response = await bounded(self.http.send(request), timeout + 1.0)  # a ctrl-c during it ends the caller
        except (httpx.TransportError, TimeoutError):
            return False
        return response.status_code < 600

    def websocket_endpoints(self, path: str) -> list[Endpoint]:
        """Where to open the WebSocket at `path`, in order: the session's VM (jwt in the query, no API key)
        when its route is known, then the control plane (bearer token)."""
        endpoints: list[Endpoint] = []
        direct = self.routes.for_path(path)
        if direct is not None:
            endpoints.append((direct[0].websocket_url(direct[1]), {}, direct[0]))
        endpoints.append((self.config.websocket_base_url + path,
                          {"Authorization": f"Bearer {self.config.token}"}, None))
        return endpoints

    def _error(self, response: httpx.Response, body: bytes, method: str, url: str) -> ServiceError:
        return error_from_response(
            response.status_code, body, method=method, url=url,
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


def replayable(content: Any) -> bool:
    """Whether a body can be sent a second time byte for byte (a streamed upload cannot)."""
    return content is None or isinstance(content, bytes | bytearray | memoryview | str)


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
