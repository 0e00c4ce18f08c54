"""How fast `logs/stream?follow=true` carries lines appended to a file to an httpx SSE client.

Run on purpose, not in the test suite:

    .venv/bin/python bench/bench_log_follow.py [--lines 2000000] [--paced-rate 50000] [--paced-lines 500000]

It starts its own `bbrowse serve` (a separate process, state in a temporary directory), opens a
follow stream on a log file, and has a separate writer process append numbered lines (~100 bytes,
in blocks, as a busy logger does). Three runs:

1. flat out, httpx-sse client (parses every event as JSON, as the app does): lines/s end to end,
2. flat out, raw frame counter (the client's own cost mostly removed): what the service can push,
3. paced at --paced-rate lines/s, with each client: whether the stream keeps up, with the
   append-to-receive lag (p50/p99/max; sampled every 1000th line for httpx-sse, the newest line of
   every received chunk for the raw counter) — it must not grow over the run.

Baseline in the same run: the writer alone (lines/s appended to the file with nobody reading).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import httpx
import psutil
from conftest import start_service as start_test_service
from httpx_sse import aconnect_sse

LINE_PAD = "x" * 60

WRITER = textwrap.dedent(
    """
    import os, sys, time
    path, total, rate, block = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    pad = "x" * 60
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    start = time.monotonic()
    n = 0
    while n < total:
        count = min(block, total - n)
        now = time.time()
        os.write(fd, "".join(f"seq={i} t={now:.6f} {pad}\\n" for i in range(n, n + count)).encode())
        n += count
        if rate:
            ahead = n / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
    os.close(fd)
    print(time.monotonic() - start)
    """
)


def start_service(state: Path) -> tuple[subprocess.Popen, str, str]:
    """A real `bbrowse serve` on loopback, started the way the tests start it (tests/conftest.py)."""
    handle = start_test_service(state, extra_env=None)
    return handle.process, handle.url, handle.token


def run_writer(path: Path, total: int, rate: float = 0, block: int = 2000) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(total), str(rate), str(block)], stdout=subprocess.PIPE, text=True
    )


def writer_alone(path: Path, total: int) -> float:
    path.write_bytes(b"")
    writer = run_writer(path, total)
    seconds = float(writer.communicate()[0])
    return total / seconds


def _lag_ms(message: str, received: float) -> float:
    sent = float(message.split(" ", 2)[1].removeprefix("t="))
    return (received - sent) * 1000


class ServiceCpu:
    """CPU the service process spends over one run, as a share of one core."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)

    def __enter__(self) -> ServiceCpu:
        self._cpu, self._wall = sum(self.process.cpu_times()[:2]), time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.share = (sum(self.process.cpu_times()[:2]) - self._cpu) / (time.monotonic() - self._wall)


async def follow_run(
    client: httpx.AsyncClient, url: str, log: Path, total: int, *, raw: bool, rate: float = 0
) -> tuple[float, list[float]]:
    """Lines/s from the first append to the last line received, and sampled append-to-receive lags."""
    os.truncate(log, 0)
    params = {"source": "path", "path": str(log), "follow": "true"}
    lags: list[float] = []
    received = 0
    if raw:
        async with client.stream("GET", url, params=params) as response:
            assert response.status_code == 200, response.status_code
            started = time.monotonic()
            writer = run_writer(log, total, rate)
            tail = b""
            async for chunk in response.aiter_raw():
                frames = (tail + chunk).split(b"\n\n")
                tail = frames.pop()
                received += len(frames)
                if frames:  # lag of the newest line in this chunk: cheap enough not to slow the counter
                    newest = frames[-1]
                    at = newest.index(b" t=") + 3
                    lags.append((time.time() - float(newest[at : newest.index(b" ", at)])) * 1000)
                if received >= total:
                    break
    else:
        async with aconnect_sse(client, "GET", url, params=params) as source:
            assert source.response.status_code == 200, source.response.status_code
            started = time.monotonic()
            writer = run_writer(log, total, rate)
            async for sse in source.aiter_sse():
                message = json.loads(sse.data)["message"]
                if received % 1000 == 0:
                    lags.append(_lag_ms(message, time.time()))
                received += 1
                if received >= total:
                    break
    elapsed = time.monotonic() - started
    writer.wait()
    return total / elapsed, lags


def _lag_summary(lags: list[float]) -> str:
    if not lags:
        return "n/a"
    ordered = sorted(lags)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    first, last = statistics.median(ordered[: len(ordered) // 10 or 1]), statistics.median(lags[-len(lags) // 10 :])
    return (
        f"p50 {statistics.median(ordered):.1f} ms, p99 {p99:.1f} ms, max {ordered[-1]:.1f} ms "
        f"(median of first 10% {first:.1f} ms, last 10% {last:.1f} ms)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--paced-rate", type=float, default=50_000)
    parser.add_argument("--paced-lines", type=int, default=500_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bbrowse-bench-") as tmp:
        root = Path(tmp)
        log = root / "bench.log"
        proc, base_url, token = start_service(root / "state")
        try:
            async with httpx.AsyncClient(
                base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
            ) as client:
                sid = (await client.post("/browsers", json={"timeout_seconds": 3600})).json()["session_id"]
                url = f"/browsers/{sid}/logs/stream"
                print(f"lines of ~{len(LINE_PAD) + 40} bytes, {os.cpu_count()} CPUs")
                print(f"writer alone (baseline):        {writer_alone(log, args.lines):>10,.0f} lines/s appended")
                with ServiceCpu(proc.pid) as cpu:
                    rate, lags = await follow_run(client, url, log, args.lines, raw=False)
                print(f"follow -> httpx-sse client:     {rate:>10,.0f} lines/s over {args.lines:,} lines "
                      f"(service {cpu.share:.0%} of a core); lag {_lag_summary(lags)}")
                with ServiceCpu(proc.pid) as cpu:
                    rate, _lags = await follow_run(client, url, log, args.lines, raw=True)
                print(f"follow -> raw frame counter:    {rate:>10,.0f} lines/s over {args.lines:,} lines "
                      f"(service {cpu.share:.0%} of a core)")
                for raw in (False, True):
                    with ServiceCpu(proc.pid) as cpu:
                        rate, lags = await follow_run(
                            client, url, log, args.paced_lines, raw=raw, rate=args.paced_rate
                        )
                    print(f"paced {args.paced_rate:,.0f}/s, {'raw counter' if raw else 'httpx-sse  '}: "
                          f"{rate:>10,.0f} lines/s received (service {cpu.share:.0%} of a core); "
                          f"lag {_lag_summary(lags)}")
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)


if __name__ == "__main__":
    asyncio.run(main())
