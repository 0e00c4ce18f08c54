"""Upload and download through `fs`, against `read_file` in the same run, and the service's memory meanwhile.

Run on purpose, not in the test suite:

    .venv/bin/python bench/bench_fs_transfer.py [--mb 512] [--runs 3] [--text]

It starts its own `bbrowse serve` (state in a temporary directory, no Chromium: files need none),
writes a file of --mb random bytes (compressible log-like text with --text) and creates a session.
Then, interleaved, --runs times each after one warm-up, with bbrowse's client:

1. baseline: `fs.read_file` of the file, every chunk received and dropped;
2. `fs.write_file` streaming the local file (PUT, raw body);
3. `fs.upload` of the same file (multipart form);
4. `fs.download_dir_zip` of a directory holding the file, received and dropped;
5. `fs.upload_zip` of a zip of that directory (extracted on the instance).

Prints MB/s (median), the ratio to read_file, and the service's peak RSS growth during each; the
target is uploads and downloads at >= 50 % of read_file's throughput, memory flat.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import psutil
from conftest import start_service, stop_service

from bbrowse.client import BrowserClient
from bbrowse.transfer import save_stream

TARGET_RATIO = 0.5
LINE = b"2024-05-01T12:00:00.123Z INFO  worker-3 request served path=/api/v1/items?page=7 status=200 ms=12\n"


class PeakRss:
    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.start = self.peak = self.process.memory_info().rss
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.stop.wait(0.02):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    @property
    def growth_mib(self) -> float:
        return (self.peak - self.start) / 2**20


def make_file(path: Path, size: int, text: bool) -> None:
    block = (LINE * (4 * 2**20 // len(LINE) + 1))[: 4 * 2**20] if text else None
    with open(path, "wb") as out:
        written = 0
        while written < size:
            chunk = block if block is not None else os.urandom(4 * 2**20)
            chunk = chunk[: size - written]
            out.write(chunk)
            written += len(chunk)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=512)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--text", action="store_true", help="compressible text instead of random bytes")
    args = parser.parse_args()
    size = args.mb * 2**20

    with tempfile.TemporaryDirectory(prefix="bbrowse-bench-fs-") as tmp:
        root = Path(tmp)
        handle = start_service(root / "state", extra_env={"BBROWSE_CHROMIUM": "/nonexistent/no-browser-needed"})
        try:
            client = BrowserClient(handle.url, handle.token)
            session = await client.sessions.create(timeout_seconds=3600)
            sid = session.session_id
            source_dir = root / "src"
            source_dir.mkdir()
            source = source_dir / "data.bin"
            await asyncio.to_thread(make_file, source, size, args.text)
            local_zip = root / "src.zip"
            zipped = client.fs.download_dir_zip(sid, str(source_dir), chunk_size=None)
            await save_stream(zipped, local_zip, replace=True)
            with zipfile.ZipFile(local_zip) as opened:
                method = "deflated" if opened.getinfo("data.bin").compress_type == zipfile.ZIP_DEFLATED else "stored"
            out = root / "out"

            async def read_file() -> None:
                async with client.fs.read_file(sid, str(source), chunk_size=None) as chunks:
                    async for _ in chunks:
                        pass

            async def write_file() -> None:
                await client.fs.write_file(sid, str(out / "written.bin"), source)

            async def upload() -> None:
                await client.fs.upload(sid, [(source, str(out / "uploaded.bin"))])

            async def download_zip() -> None:
                async with client.fs.download_dir_zip(sid, str(source_dir), chunk_size=None) as chunks:
                    async for _ in chunks:
                        pass

            async def upload_zip() -> None:
                await client.fs.upload_zip(sid, local_zip, str(out / "unzipped"))

            cases: list[tuple[str, Callable[[], Awaitable[None]]]] = [
                ("read_file (baseline)", read_file), ("write_file", write_file), ("upload (multipart)", upload),
                (f"download_dir_zip ({method})", download_zip), ("upload_zip", upload_zip),
            ]
            seconds: dict[str, list[float]] = {name: [] for name, _ in cases}
            growth: dict[str, float] = {name: 0.0 for name, _ in cases}
            for run in range(args.runs + 1):
                for name, case in cases:
                    shutil.rmtree(out, ignore_errors=True)
                    with PeakRss(handle.pid) as rss:
                        started = time.perf_counter()
                        await case()
                        elapsed = time.perf_counter() - started
                    if run:  # the first round warms up
                        seconds[name].append(elapsed)
                        growth[name] = max(growth[name], rss.growth_mib)
            baseline = args.mb / statistics.median(seconds[cases[0][0]])
            print(f"{args.mb} MiB of {'text' if args.text else 'random bytes'}, median of {args.runs} runs, "
                  f"client and service on one machine\n")
            print(f"{'operation':28} {'MB/s':>8} {'vs read_file':>13} {'service RSS peak growth':>25}")
            worst = 1.0
            for name, _ in cases:
                rate = args.mb / statistics.median(seconds[name])
                ratio = rate / baseline
                if name != cases[0][0]:
                    worst = min(worst, ratio)
                print(f"{name:28} {rate:8.0f} {ratio:12.0%} {growth[name]:22.1f} MiB")
            verdict = "meets" if worst >= TARGET_RATIO else "misses"
            print(f"\nslowest transfer at {worst:.0%} of read_file: {verdict} the >= {TARGET_RATIO:.0%} target")
        finally:
            stop_service(handle)


if __name__ == "__main__":
    asyncio.run(main())
