"""The bad link itself (tests/netem.py): delay, bandwidth, stall and drop, against the real service."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

pytest_plugins = ["net_support"]


def test_a_bad_link_delays_caps_stalls_and_drops(service, bad_link) -> None:
    link = bad_link(service, delay=0.05)
    with httpx.Client(base_url=link.url, headers=service.headers, timeout=5) as client:
        assert client.get("/browsers").status_code == 200  # connection made (one round trip for the handshake)
        started = time.monotonic()
        assert client.get("/browsers").status_code == 200
        assert time.monotonic() - started >= 0.1  # a request and its answer: one round trip

        link.stall()
        with pytest.raises(httpx.ReadTimeout):
            client.get("/browsers", timeout=0.5)
        assert link.open_connections >= 1  # stalled, not dropped
        link.resume()
        assert client.get("/browsers").status_code == 200

        link.set(delay=0, rate=1_000_000)  # 1 MB/s
        sent = link.bytes_down
        started = time.monotonic()
        body = client.get("/openapi.json", headers={"Accept-Encoding": "identity"}).content  # wire = body
        assert link.bytes_down - sent >= len(body)
        assert time.monotonic() - started >= 0.8 * len(body) / 1_000_000
        link.set(rate=None)

        assert link.drop(refuse_for=1.0) >= 1
        with pytest.raises(httpx.TransportError):
            client.get("/browsers")
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(link.address, timeout=1).close()
        deadline = time.monotonic() + 5
        while True:
            try:
                assert client.get("/browsers").status_code == 200
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the link did not come back after refusing for 1 s"
                time.sleep(0.1)
