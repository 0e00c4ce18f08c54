"""Streams never starve calls: open streams from one configuration leave the connections short calls need.

At a small scale (a call pool of 4 connections, 8 streams) against the real service: a shared pool
would be full and the sessions list would wait (shown first, with plain httpx sharing one pool); with
bbrowse's client the list answers at once while every stream stays live. `bench/bench_streams_vs_calls.py`
measures the full-size case (150 streams, the default pool).
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from conftest import session_area

from bbrowse.client import BrowserClient, ClientConfig
from bbrowse.client.pool import new_http_client

CALL_CONNECTIONS = 4
STREAMS = 2 * CALL_CONNECTIONS


@pytest.fixture
async def quiet_log(browserless_service):
    client = BrowserClient(config=ClientConfig(base_url=browserless_service.url, token=browserless_service.token))
    browser = await client.sessions.create(timeout_seconds=120)
    log = session_area(browserless_service, browser.session_id, "pool") / "quiet.log"
    log.write_text("")
    yield browser.session_id, log
    await client.sessions.delete(browser.session_id)


async def test_a_shared_pool_full_of_streams_stalls_calls(browserless_service, quiet_log):
    """The case being fixed: streams and calls in one pool of 4 -> the fifth request waits for a connection."""
    sid, log = quiet_log
    limits = httpx.Limits(max_connections=CALL_CONNECTIONS)
    async with httpx.AsyncClient(base_url=browserless_service.url, headers=browserless_service.headers,
                                 limits=limits, timeout=httpx.Timeout(30, pool=1.0)) as shared:
        streams = [shared.stream("GET", f"/browsers/{sid}/logs/stream", params={"source": "path", "path": str(log)})
                   for _ in range(CALL_CONNECTIONS)]
        responses = [await s.__aenter__() for s in streams]
        try:
            assert all(r.status_code == 200 for r in responses)
            with pytest.raises(httpx.PoolTimeout):
                await shared.get("/browsers", params={"limit": 1})
        finally:
            for s in streams:
                await s.__aexit__(None, None, None)


async def test_streams_leave_the_call_pool_free(browserless_service, quiet_log):
    sid, log = quiet_log
    config = ClientConfig(base_url=browserless_service.url, token=browserless_service.token)
    http = new_http_client(config, max_calls=CALL_CONNECTIONS)
    client = BrowserClient(config=config, http=http)
    streams = [client.logs.stream(sid, path=str(log)) for _ in range(STREAMS)]
    try:
        await asyncio.gather(*(s.open() for s in streams))
        started = time.perf_counter()
        for _ in range(3 * CALL_CONNECTIONS):  # more calls than the call pool has connections, one after another
            page = await asyncio.wait_for(client.sessions.page(limit=1), 10)
            assert page.items
        elapsed = time.perf_counter() - started
        assert elapsed < 5, f"{3 * CALL_CONNECTIONS} sessions lists took {elapsed:.2f} s with {STREAMS} streams open"

        # and every stream is still live: a line appended reaches each of them
        with log.open("a") as out:
            out.write("after the calls\n")
        events = await asyncio.wait_for(asyncio.gather(*(anext(s) for s in streams)), 20)
        assert [e.message for e in events] == ["after the calls"] * STREAMS
    finally:
        for s in streams:
            await s.aclose()
        await http.aclose()
