"""The service keeps an idle keep-alive connection open longer than clients keep theirs (httpx, and the SDKs built on
it, drop an idle connection after 5 s): the client closes first, so a request sent on a connection the client still
holds never meets the service closing it at that instant ("Server disconnected without sending a response")."""

from __future__ import annotations

import select
import socket
import time

from conftest import ServiceHandle

#: Past httpx's keep-alive expiry (5 s), which uvicorn's default idle timeout equals.
CLIENT_EXPIRY = 5.0


def _get(conn: socket.socket, service: ServiceHandle) -> bytes:
    """GET /browsers on `conn`, the answer read whole; its status line."""
    conn.sendall(f"GET /browsers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {service.token}\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = conn.recv(65536)
        assert chunk, f"closed before answering: {reply!r}"
        reply += chunk
    head, body = reply.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        chunk = conn.recv(65536)
        assert chunk, "closed in the middle of the answer"
        body += chunk
    return head.split(b"\r\n", 1)[0]


def _closed_by_the_service(conn: socket.socket) -> bool:
    readable, _, _ = select.select([conn], [], [], 0)
    return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""  # else open, nothing to read


def test_an_idle_connection_outlives_a_clients_keep_alive_expiry(service: ServiceHandle) -> None:
    host, port = service.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        assert _get(conn, service) == b"HTTP/1.1 200 OK"
        time.sleep(CLIENT_EXPIRY + 0.5)
        assert not _closed_by_the_service(conn)
        assert _get(conn, service) == b"HTTP/1.1 200 OK"  # and it still answers on it
