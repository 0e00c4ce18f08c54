"""One pooled `httpx.AsyncClient` per (base URL, token) and event loop, shared by every BrowserClient.

Opening a TCP connection per call would cost more than the call itself on loopback, so clients with
the same config share keep-alive connections. httpx connections belong to the event loop that made
them, hence the registry is per loop (a weak mapping: a finished loop drops its clients). Call
`close_shared_clients()` at shutdown to close the connections of the running loop. Streams never
starve calls: they have a pool of their own (`PooledClient`; docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import socket
import weakref
from collections.abc import Sequence
from typing import Any

import httpx
from httpx._utils import get_environment_proxies

from bbrowse import __version__
from bbrowse.client.config import ClientConfig
from bbrowse.client.net import keepalive_socket_options, ssl_context

#: Idle connections are dropped before a service keeping them 5 s (uvicorn's default) closes them on its side, so
#: a request (stdin above all, which is never re-sent) does not race a server-side close.
KEEPALIVE_EXPIRY = 4.0
#: Most connections short calls open at once (one configuration, one event loop).
MAX_CALL_CONNECTIONS = 100
LIMITS = httpx.Limits(max_connections=MAX_CALL_CONNECTIONS, max_keepalive_connections=20,
                      keepalive_expiry=KEEPALIVE_EXPIRY)
#: Streams: no cap (each is one open stream the caller asked for; the service bounds what it serves).
STREAM_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_EXPIRY)

#: A pool serves one service, token and set of timeouts: (base_url, token, connect_timeout, timeout).
PoolKey = tuple[str, str, float, float]

_registry: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[PoolKey, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def _key(config: ClientConfig) -> PoolKey:
    return (config.base_url, config.token, config.connect_timeout, config.timeout)


class PooledClient(httpx.AsyncClient):
    """An httpx client whose streamed responses use a second, uncapped pool (`streams`), so they never
    take the connections short calls wait for. Requests are built by this client (base URL, token,
    timeouts); only the connection they travel on differs.

    A streamed response (SSE: log and output follows, watches; downloads) holds its connection for as
    long as it is open; every other call goes to the bounded pool (`MAX_CALL_CONNECTIONS`). An app with
    150 log panes open still lists its sessions at once (`tests/test_pool.py`,
    `bench/bench_streams_vs_calls.py`). The attach WebSocket has its own connection anyway."""

    def __init__(self, *, streams: httpx.AsyncClient, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.streams = streams

    async def send(self, request: httpx.Request, *, stream: bool = False, auth: Any = httpx.USE_CLIENT_DEFAULT,
                   follow_redirects: Any = httpx.USE_CLIENT_DEFAULT) -> httpx.Response:
        if stream:
            return await self.streams.send(request, stream=True, auth=auth, follow_redirects=follow_redirects)
        return await super().send(request, stream=False, auth=auth, follow_redirects=follow_redirects)

    async def __aenter__(self) -> PooledClient:
        await self.streams.__aenter__()
        await super().__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            await super().__aexit__(*exc_info)
        finally:
            await self.streams.__aexit__(*exc_info)

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            await self.streams.aclose()


def _client_options(config: ClientConfig) -> dict[str, Any]:
    https = config.base_url.startswith("https://")
    return {
        "base_url": config.base_url,
        "headers": {"Authorization": f"Bearer {config.token}", "User-Agent": f"bbrowse/{__version__}"},
        "timeout": httpx.Timeout(config.timeout, connect=config.connect_timeout),
        "follow_redirects": False,
        # a plain-http service never needs TLS: skip building an SSL context (tens of ms on first use)
        "verify": ssl_context() if https else False,
        # proxies from the environment apply to remote services, never to loopback
        "trust_env": not config.is_loopback,
    }


def _transports(config: ClientConfig, limits: httpx.Limits,
                socket_options: Sequence[tuple[int, int, int]] = ()) -> dict[str, Any]:
    """The connections' transport, and one per proxy from the environment: all with TCP keepalive and the
    shared TLS context (httpx's own proxy transports would have neither)."""
    verify = ssl_context() if config.base_url.startswith("https://") else False
    options: dict[str, Any] = {"verify": verify, "limits": limits,
                               "socket_options": [*keepalive_socket_options(), *socket_options]}
    mounts: dict[str, httpx.AsyncBaseTransport | None] = {}
    if not config.is_loopback:
        for pattern, proxy in get_environment_proxies().items():
            mounts[pattern] = None if proxy is None else httpx.AsyncHTTPTransport(
                proxy=proxy, **{**options, "verify": ssl_context()})
    return {"transport": httpx.AsyncHTTPTransport(**options), "mounts": mounts}


def new_http_client(config: ClientConfig, *, max_calls: int = MAX_CALL_CONNECTIONS) -> PooledClient:
    """A client with the token, HTTP/1.1 keep-alive and the config's timeouts: at most `max_calls`
    connections for calls, and as many as there are open streams for streams."""
    options = _client_options(config)
    limits = LIMITS if max_calls == MAX_CALL_CONNECTIONS else httpx.Limits(
        max_connections=max_calls, max_keepalive_connections=min(20, max_calls), keepalive_expiry=KEEPALIVE_EXPIRY)
    return PooledClient(streams=httpx.AsyncClient(**_transports(config, STREAM_LIMITS), **options),
                        **_transports(config, limits), **options)


def narrow_http_client(config: ClientConfig, receive_buffer: int) -> httpx.AsyncClient:
    """A client for one streamed read the caller will cut short: one connection, never kept, whose socket
    receive buffer is `receive_buffer` bytes (set as it connects, before the request is sent), so the
    service cannot push much more than the caller reads before the close reaches it."""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=0)
    return httpx.AsyncClient(**_transports(config, limits, [(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)]),
                             trust_env=not config.is_loopback)


def shared_http_client(config: ClientConfig) -> httpx.AsyncClient:
    """The running loop's shared client for `config`, created on first use."""
    loop = asyncio.get_running_loop()
    per_loop = _registry.get(loop)
    if per_loop is None:
        per_loop = _registry[loop] = {}
    key = _key(config)
    client = per_loop.get(key)
    if client is None or client.is_closed:
        client = per_loop[key] = new_http_client(config)
    return client


async def close_shared_clients() -> None:
    """Close every shared client of the running loop (their connections too)."""
    per_loop = _registry.pop(asyncio.get_running_loop(), {})
    for client in per_loop.values():
        await client.aclose()
