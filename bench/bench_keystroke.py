"""Keystroke round trip: one byte POSTed to a PTY's stdin until it comes back on stdout/stream.

Runs a real `bbrowse serve` on loopback (as the tests do), spawns `stty raw -echo; exec cat` in a
PTY so one byte in is exactly one byte out, and times N round trips through bbrowse's client. The
same echo through a local PTY read directly (no HTTP) is the baseline, measured in the same run; the
attach WebSocket round trip is measured too, for comparison.

    .venv/bin/python bench/bench_keystroke.py [--count 2000]

Target (issue 2): p50 <= 3 ms, p99 <= 15 ms on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pty
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import start_service, stop_service  # noqa: E402

from bbrowse.client import BrowserClient, close_shared_clients  # noqa: E402
from bbrowse.wire import ProcessOutputEvent  # noqa: E402

RAW_CAT = "stty raw -echo; echo READY; exec cat"


def percentiles(samples_s: list[float]) -> tuple[float, float, float]:
    ms = sorted(s * 1000 for s in samples_s)
    p50 = statistics.median(ms)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return p50, p99, statistics.fmean(ms)


def local_pty_round_trips(count: int) -> list[float]:
    """The same echo through a local PTY: write one byte to the master, read it back."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(["sh", "-c", RAW_CAT], stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    try:
        seen = b""
        while b"READY" not in seen:
            seen += os.read(master, 1024)
        samples = []
        for _ in range(count):
            started = time.perf_counter()
            os.write(master, b"x")
            got = os.read(master, 16)
            samples.append(time.perf_counter() - started)
            assert got == b"x", got
        return samples
    finally:
        proc.kill()
        proc.wait()
        os.close(master)


async def http_round_trips(
    client: BrowserClient, sid: str, count: int, posts: list[float] | None = None,
) -> list[float]:
    proc = await client.processes.spawn(sid, "sh", ["-c", RAW_CAT], allocate_tty=True)
    arrived = asyncio.Queue()
    async with client.processes.stdout_stream(sid, proc.process_id) as events:

        async def reader() -> None:
            async for event in events:
                if isinstance(event, ProcessOutputEvent):
                    arrived.put_nowait(event.data())

        reading = asyncio.create_task(reader())
        seen = b""
        while b"READY" not in seen:
            seen += await asyncio.wait_for(arrived.get(), 10)
        samples = []
        for _ in range(count):
            started = time.perf_counter()
            await client.processes.stdin(sid, proc.process_id, b"x")
            if posts is not None:
                posts.append(time.perf_counter() - started)
            got = await asyncio.wait_for(arrived.get(), 10)
            samples.append(time.perf_counter() - started)
            assert got == b"x", got
        await client.processes.kill(sid, proc.process_id, "KILL")
        await asyncio.wait_for(reading, 10)
    return samples


async def attach_round_trips(client: BrowserClient, sid: str, count: int) -> list[float]:
    proc = await client.processes.spawn(sid, "sh", ["-c", RAW_CAT], allocate_tty=True)
    samples = []
    async with client.processes.attach(sid, proc.process_id) as term:
        output = aiter(term)
        seen = b""
        while b"READY" not in seen:
            seen += await asyncio.wait_for(anext(output), 10)
        for _ in range(count):
            started = time.perf_counter()
            await term.send(b"x")
            got = await asyncio.wait_for(anext(output), 10)
            samples.append(time.perf_counter() - started)
            assert got == b"x", got
    await client.processes.kill(sid, proc.process_id, "KILL")
    return samples


def report(label: str, samples: list[float]) -> tuple[float, float]:
    p50, p99, mean = percentiles(samples)
    print(f"{label:<34} n={len(samples):<5} p50 {p50:7.3f} ms   p99 {p99:7.3f} ms   mean {mean:7.3f} ms")
    return p50, p99


async def run(url: str, token: str, count: int) -> None:
    client = BrowserClient(url, token)
    sid = (await client.sessions.create(timeout_seconds=600)).session_id
    try:
        await http_round_trips(client, sid, 50)  # warm-up: connections, imports, JIT-less caches
        posts: list[float] = []
        http = await http_round_trips(client, sid, count, posts)
        ws = await attach_round_trips(client, sid, count)
    finally:
        await client.sessions.delete(sid)
        await close_shared_clients()
    local = local_pty_round_trips(count)
    print(f"keystroke round trip, {count} bytes, one at a time (load average {os.getloadavg()[0]:.1f})")
    local_p50, local_p99 = report("local PTY (no HTTP) baseline", local)
    http_p50, http_p99 = report("client stdin -> stdout/stream", http)
    report("  of which the stdin POST", posts)
    report("client attach WebSocket", ws)
    print(f"ratio stdin/stream vs local PTY: p50 x{http_p50 / local_p50:.1f}, p99 x{http_p99 / local_p99:.1f}")
    verdict = "meets" if http_p50 <= 3 and http_p99 <= 15 else "MISSES"
    print(f"target p50 <= 3 ms, p99 <= 15 ms: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    handle = start_service(Path(tempfile.mkdtemp(prefix="bbrowse-bench-")))
    try:
        asyncio.run(run(handle.url, handle.token, args.count))
    finally:
        stop_service(handle)


if __name__ == "__main__":
    main()
