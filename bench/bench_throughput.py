"""Output throughput: a process writing 100 MB, read through stdout/stream at the client.

Runs a real `bbrowse serve` on loopback, spawns `head -c SIZE /dev/zero` (or /dev/urandom) held back
by a `read` until the stream is open, then times from the go signal to the exit event while the client
decodes every chunk (as a user of the stream would). Baseline in the same run: the same command read
from a local pipe, no HTTP.

    .venv/bin/python bench/bench_throughput.py [--mb 100] [--source zero|urandom]

Target (issue 2): at least 50 % of the local pipe's MB/s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
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
from bbrowse.wire import ProcessExitEvent  # noqa: E402

MB = 1_000_000


def local_pipe(size: int, device: str) -> tuple[int, float]:
    started = time.perf_counter()
    proc = subprocess.Popen(["head", "-c", str(size), device], stdout=subprocess.PIPE, bufsize=0)
    total = 0
    assert proc.stdout is not None
    while chunk := proc.stdout.read(65536):
        total += len(chunk)
    proc.wait()
    return total, time.perf_counter() - started


async def through_stream(client: BrowserClient, sid: str, size: int, device: str) -> tuple[int, float, int, float]:
    proc = await client.processes.spawn(sid, "sh", ["-c", f"read go; exec head -c {size} {device}"])
    total = events = 0
    async with client.processes.stdout_stream(sid, proc.process_id) as stream:
        started, cpu_started = time.perf_counter(), time.process_time()
        await client.processes.stdin(sid, proc.process_id, b"\n")
        async for event in stream:
            if type(event) is ProcessExitEvent:
                assert event.exit_code == 0, event
                break
            total += len(event.data())
            events += 1
    return total, time.perf_counter() - started, events, time.process_time() - cpu_started


async def run(url: str, token: str, size: int, device: str) -> None:
    client = BrowserClient(url, token)
    sid = (await client.sessions.create(timeout_seconds=600)).session_id
    try:
        await through_stream(client, sid, 5 * MB, device)  # warm-up
        total, seconds, events, client_cpu = await through_stream(client, sid, size, device)
    finally:
        await client.sessions.delete(sid)
        await close_shared_clients()
    local_total, local_seconds = local_pipe(size, device)
    assert total == size == local_total, (total, local_total)
    stream_rate, local_rate = total / MB / seconds, local_total / MB / local_seconds
    print(f"output throughput, {size / MB:g} MB from {device} (load average {os.getloadavg()[0]:.1f})")
    print(f"local pipe (no HTTP) baseline   {local_rate:9.1f} MB/s  ({local_seconds:.2f} s)")
    print(f"client stdout/stream            {stream_rate:9.1f} MB/s  ({seconds:.2f} s, {events} events, "
          f"{total / events / 1024:.0f} KiB/event)")
    print(f"  client process CPU {client_cpu:.2f} s = {client_cpu / seconds:.0%} of the stream's time "
          "(the rest is the service and the scheduler)")
    ratio = stream_rate / local_rate
    print(f"ratio stream vs local pipe: {ratio:.1%}  (target >= 50 %: {'meets' if ratio >= 0.5 else 'MISSES'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--source", choices=("zero", "urandom"), default="zero")
    args = parser.parse_args()
    handle = start_service(Path(tempfile.mkdtemp(prefix="bbrowse-bench-")))
    try:
        asyncio.run(run(handle.url, handle.token, int(args.mb * MB), f"/dev/{args.source}"))
    finally:
        stop_service(handle)


if __name__ == "__main__":
    main()
