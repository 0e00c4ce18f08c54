"""One pooled `httpx.AsyncClient` per (base URL, token) and event loop, shared by every BrowserClient.

Opening a TCP connection per call would cost more than the call itself on loopback, so clients with
the same config share keep-alive connections. httpx connections belong to the event loop that made
them, hence the registry is per loop (a weak mapping: a finished loop drops its clients). Call
`close_shared_clients()` at shutdown to close the connections of the running loop.
"""

from __future__ import annotations

import asyncio
import weakref

import httpx

from bbrowse import __version__
from bbrowse.client.config import ClientConfig

#: Idle connections are dropped before uvicorn's default 5 s keep-alive closes them on its side, so a
#: request (stdin above all, which is never re-sent) does not race a server-side close.
KEEPALIVE_EXPIRY = 4.0
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_EXPIRY)

_registry: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def _key(config: ClientConfig) -> tuple:
    return (config.base_url, config.token, config.connect_timeout, config.timeout)


def new_http_client(config: ClientConfig) -> httpx.AsyncClient:
    """A client with the token, HTTP/1.1 keep-alive, bounded pool and the config's timeouts."""
    return httpx.AsyncClient(
        base_url=config.base_url,
        headers={"Authorization": f"Bearer {config.token}", "User-Agent": f"bbrowse/{__version__}"},
        timeout=httpx.Timeout(config.timeout, connect=config.connect_timeout),
        limits=LIMITS,
        follow_redirects=False,
        # a plain-http service never needs TLS: skip building an SSL context (tens of ms on first use)
        verify=config.base_url.startswith("https://"),
        # proxies and CA bundles from the environment apply to remote services, never to loopback
        trust_env=not config.is_loopback,
    )


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
