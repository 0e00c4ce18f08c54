"""Streams never starve calls: a sessions list while 150 log streams are open from one client configuration.

One `bbrowse serve` (no Chromium: only logs are needed), one session, a quiet log file. Through
bbrowse's client (the shared pool of one configuration, as the app uses it):

1. baseline: `sessions.page(limit=20)` N times in a row, no stream open; p50/p99/max;
2. the same with 150 `logs.stream(follow=True)` open (the app's log panes, shells, watches);
3. "before": the same 150 streams and calls through one httpx pool capped at 100 connections, as the
   client had it: streams past the 100th cannot open and the list waits for a connection (shown with
   a 5 s pool timeout).

Then a line is appended to the log and every stream must receive it (they were live throughout).

    .venv/bin/python bench/bench_streams_vs_calls.py                  # 150 streams, 300 calls
    .venv/bin/python bench/bench_streams_vs_calls.py --streams 300 --calls 500

Target (issue 15): p99 <= 100 ms with 150 streams open.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import start_service, stop_service  # noqa: E402

from bbrowse.client import BrowserClient, ClientConfig, ClientError, close_shared_clients  # noqa: E402
from bbrowse.client.pool import KEEPALIVE_EXPIRY  # noqa: E402


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def describe(name: str, samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return (f"{name:<34} n={len(ms):<4} p50 {statistics.median(ms):6.1f} ms  p99 {percentile(ms, 0.99):6.1f} ms  "
            f"max {max(ms):6.1f} ms")


async def list_calls(client: BrowserClient, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        await client.sessions.page(limit=20)
        samples.append(time.perf_counter() - started)
    return samples


async def open_streams(client: BrowserClient, sid: str, log: Path, count: int, timeout: float):
    streams = [client.logs.stream(sid, path=str(log)) for _ in range(count)]
    results = await asyncio.gather(*(asyncio.wait_for(s.open(), timeout) for s in streams), return_exceptions=True)
    opened = [s for s, r in zip(streams, results, strict=True) if not isinstance(r, BaseException)]
    return streams, opened


async def run(url: str, token: str, sid: str, log: Path, streams: int, calls: int) -> int:
    config = ClientConfig(base_url=url, token=token)
    client = BrowserClient(config=config)
    await list_calls(client, 20)  # warm-up: connections, code paths
    baseline = await list_calls(client, calls)
    print(describe("no stream open", baseline))

    all_streams, opened = await open_streams(client, sid, log, streams, 30)
    print(f"{len(opened)}/{streams} streams open from one configuration")
    with_streams = await list_calls(client, calls)
    print(describe(f"{streams} streams open", with_streams))
    with log.open("a") as out:
        out.write("still live\n")
    events = await asyncio.wait_for(asyncio.gather(*(anext(s) for s in opened)), 60)
    live = sum(1 for e in events if e.message == "still live")
    print(f"{live}/{len(opened)} streams received the line appended after the calls")
    for s in all_streams:
        await s.aclose()
    await close_shared_clients()

    # before: one pool of 100 for streams and calls, as the client had it
    old_limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_EXPIRY)
    shared = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}, limits=old_limits,
                               timeout=httpx.Timeout(30, pool=5.0))
    before = BrowserClient(config=config, http=shared)
    old_streams, old_opened = await open_streams(before, sid, log, streams, 8)
    print(f"before (one pool of 100): {len(old_opened)}/{streams} streams could open")
    started = time.perf_counter()
    try:
        await before.sessions.page(limit=20)
        print(f"before: a sessions list answered in {(time.perf_counter() - started) * 1000:.1f} ms")
    except ClientError as exc:
        print(f"before: a sessions list failed after {time.perf_counter() - started:.1f} s ({type(exc).__name__})")
    for s in old_streams:
        await s.aclose()
    await shared.aclose()

    p99 = percentile(with_streams, 0.99) * 1000
    ok = p99 <= 100 and live == len(opened) == streams
    print(f"target p99 <= 100 ms with {streams} streams: {'met' if ok else 'NOT met'} ({p99:.1f} ms); "
          f"load average {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


async def main_async(args) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="bbrowse-streams-"))
    handle = start_service(workdir / "state", extra_env={"BBROWSE_CHROMIUM": "/nonexistent/chromium"})
    try:
        client = BrowserClient(config=ClientConfig(base_url=handle.url, token=handle.token))
        sid = (await client.sessions.create(timeout_seconds=600)).session_id
        log = workdir / "quiet.log"
        log.write_text("")
        await close_shared_clients()
        return await run(handle.url, handle.token, sid, log, args.streams, args.calls)
    finally:
        stop_service(handle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=150)
    parser.add_argument("--calls", type=int, default=300)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    sys.exit(asyncio.run(main_async(parser.parse_args())))


if __name__ == "__main__":
    main()
