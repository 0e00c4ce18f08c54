"""A telemetry stream the service drops (its end shut down, no goodbye) resumes by `Last-Event-ID`: every event
once, in order, whether followed as validated envelopes (`follow`, what `bbrowse events -f` reads) or as raw
batches (`follow_raw`, what the Events tab reads). On the browserless service: platform calls make the events."""

from __future__ import annotations

import asyncio
import os

import httpx
import pytest

from bbrowse.client import BrowserClient


async def calls(http: httpx.AsyncClient, sid: str, count: int) -> None:
    for _ in range(count):
        assert (await http.post(f"/browsers/{sid}/process/exec", json={"command": "true"})).status_code == 200


def drop_my_stream(service, others: set[int]) -> None:
    """The service shuts down its end of this process's connections made since `others` were listed."""
    from socket_drop import DropUnsupportedError, client_connections, drop_connections

    try:
        assert drop_connections(service.pid, client_connections(os.getpid()) - others) >= 1
    except DropUnsupportedError as exc:
        pytest.skip(f"cannot drop the service's socket here: {exc}")


async def test_a_dropped_stream_resumes_with_no_gap_and_no_duplicate(browserless_service, browserless_http) -> None:
    from socket_drop import client_connections

    http = browserless_http
    platform = {"browser": {"platform": {"enabled": True}}}
    sid = (await http.post("/browsers", json={"timeout_seconds": 120, "telemetry": platform})).json()["session_id"]
    try:
        await calls(http, sid, 5)
        client = BrowserClient(browserless_service.url, browserless_service.token)
        others = client_connections(os.getpid())
        raw_seqs: list[int] = []
        seqs: list[int] = []
        async with client.telemetry.follow_raw(sid, replay_all=True) as raw, \
                client.telemetry.follow(sid, replay_all=True) as envelopes:
            async def read_raw(until: int) -> None:
                while not raw_seqs or raw_seqs[-1] < until:
                    raw_seqs.extend(item.seq for item in await anext(raw))

            async def read(until: int) -> None:
                while not seqs or seqs[-1] < until:
                    seqs.append((await anext(envelopes)).seq)

            await asyncio.wait_for(asyncio.gather(read_raw(5), read(5)), 20)
            for round_ in range(2):  # dropped twice: the second resume starts from where the first one got to
                drop_my_stream(browserless_service, others)
                await calls(http, sid, 4)
                await asyncio.wait_for(asyncio.gather(read_raw(9 + 4 * round_), read(9 + 4 * round_)), 30)
        assert raw_seqs == list(range(1, 14)) and seqs == list(range(1, 14)), (raw_seqs, seqs)
    finally:
        await http.delete(f"/browsers/{sid}")
