"""What every connection of the client shares beyond HTTP: TLS trust, proxies, and noticing a dead link.

- TLS: one `ssl.SSLContext` for HTTP calls and WebSockets alike, verifying against `SSL_CERT_FILE` /
  `SSL_CERT_DIR` when set, else the system's store (certifi's bundle only where the system has none).
- Proxies: `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` and `NO_PROXY` apply to every connection to a remote
  service, WebSockets included (through an HTTP CONNECT tunnel); never to a service on this machine.
- Dead links: TCP keepalive on every socket (a silent peer is found within `KEEPALIVE_IDLE` +
  `KEEPALIVE_COUNT` x `KEEPALIVE_INTERVAL` seconds) and WebSocket pings every `PING_INTERVAL` seconds, so a
  stalled link is noticed within 10 s on every long-lived connection.
"""

from __future__ import annotations

import os
import socket
import ssl
from typing import Any

#: TCP keepalive: first probe after this many idle seconds, then every `KEEPALIVE_INTERVAL`, giving up
#: after `KEEPALIVE_COUNT` unanswered ones (4 + 3 x 2 = 10 s).
KEEPALIVE_IDLE = 4
KEEPALIVE_INTERVAL = 2
KEEPALIVE_COUNT = 3
#: WebSocket pings: one every `PING_INTERVAL` s; no pong within `PING_TIMEOUT` s closes the connection.
PING_INTERVAL = 4.0
PING_TIMEOUT = 4.0

_contexts: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


def ssl_context() -> ssl.SSLContext:
    """The context every TLS connection verifies with (one per `SSL_CERT_FILE`/`SSL_CERT_DIR` setting)."""
    key = (os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None)
    context = _contexts.get(key)
    if context is None:
        # OpenSSL's default paths read SSL_CERT_FILE / SSL_CERT_DIR themselves, else the system store.
        context = ssl.create_default_context(cafile=key[0], capath=key[1]) if any(key) \
            else ssl.create_default_context()
        if not any(key) and not _system_store_present():
            import certifi

            context.load_verify_locations(cafile=certifi.where())
        _contexts[key] = context
    return context


def _system_store_present() -> bool:
    paths = ssl.get_default_verify_paths()
    return bool((paths.cafile and os.path.exists(paths.cafile))
                or (paths.capath and os.path.isdir(paths.capath) and os.listdir(paths.capath)))


def keepalive_socket_options() -> list[tuple[int, int, int]]:
    """`setsockopt` arguments turning TCP keepalive on with the timings above (those this OS has)."""
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    idle = getattr(socket, "TCP_KEEPIDLE", None) or getattr(socket, "TCP_KEEPALIVE", None)  # macOS: KEEPALIVE
    for name, value in ((idle, KEEPALIVE_IDLE), (getattr(socket, "TCP_KEEPINTVL", None), KEEPALIVE_INTERVAL),
                        (getattr(socket, "TCP_KEEPCNT", None), KEEPALIVE_COUNT)):
        if name is not None:
            options.append((socket.IPPROTO_TCP, name, value))
    return options


def set_keepalive(sock: socket.socket | None) -> None:
    """Turn TCP keepalive on for an open socket (a WebSocket's, after it connected)."""
    if sock is None:
        return
    for level, name, value in keepalive_socket_options():
        try:
            sock.setsockopt(level, name, value)
        except OSError:
            pass


def websocket_options(url: str, *, loopback: bool) -> dict[str, Any]:
    """Keyword arguments for `websockets.connect` to `url`: the proxy from the environment unless the
    service is on this machine, the shared TLS context for `wss://`, and pings."""
    options: dict[str, Any] = {
        "proxy": None if loopback else True,
        "ping_interval": PING_INTERVAL,
        "ping_timeout": PING_TIMEOUT,
    }
    if url.startswith("wss://"):
        options["ssl"] = ssl_context()
    return options
