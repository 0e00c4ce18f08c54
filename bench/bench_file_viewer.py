"""How fast the file viewer shows the first screen of a 500 MB file, against the raw first 64 KiB; and,
with --link, what the first screen costs on a slow link against the viewer as it was.

Run on purpose, not in the test suite:

    .venv/bin/python bench/bench_file_viewer.py [--size-mb 500] [--runs 7] [--binary]
    .venv/bin/python bench/bench_file_viewer.py --link [--size-mb 200] [--delay-ms 50] [--mbit 10] [--tls]

It starts its own `bbrowse serve` (a separate process, state in a temporary directory, no Chromium:
files need none), writes a file of --size-mb of log-like text lines (or random bytes with --binary)
and creates a session. Then, interleaved, --runs times each after one warm-up:

1. baseline: `client.fs.read_file` until the first 64 KiB arrived, then close the stream;
2. viewer: `FileViewer.open_remote` in a headless Textual app (the same client) until its first row
   of content was drawn (the widget stamps it in `render_line`), plus when the first read (64 KiB) was in
   and the stream closed, and how many bytes it received.

Prints the medians and the ratio; the target is a first screen ≤ 300 ms.

--link puts a `BadLink` (tests/netem.py: --delay-ms each way, --mbit cap) between the app and the
service and runs, interleaved: the viewer as it was (its first read the whole 256 KiB step, on the
shared pool: `FIRST_READ = LOAD_STEP`, no receive buffer) and the viewer as it is (64 KiB on a
connection with a 32 KiB receive buffer). For each: the bytes the link carried down for one open (the
read's connection closed), and the time to the first screen drawn. Target (issue 24): at most 256 KiB,
within 2 round trips + 100 ms at 10 Mbit/s. The link does not delay TCP's own handshake; with --tls
(the service on https with a throwaway CA) a new connection's TLS handshake crosses it, as on Kernel.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import psutil
from conftest import ServiceHandle, session_area
from conftest import start_service as start_test_service
from netem import BadLink
from textual.app import App, ComposeResult

from bbrowse.client import BrowserClient
from bbrowse.tui.widgets import file_viewer
from bbrowse.tui.widgets.file_viewer import FileLines, FileViewer

BASELINE_BYTES = 64 * 1024
TARGET_MS = 300.0
LINE = b"2024-05-01T12:00:00.123Z INFO  worker-3 request served path=/api/v1/items?page=7 status=200 ms=12\n"


def start_service(state: Path) -> ServiceHandle:
    """A real `bbrowse serve` on loopback, started the way the tests start it (tests/conftest.py)."""
    return start_test_service(state, extra_env={"BBROWSE_CHROMIUM": "/nonexistent/no-browser-needed"})


def stop_service(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def write_file(path: Path, size: int, binary: bool) -> None:
    block_size = 4 * 1024 * 1024
    block = os.urandom(block_size) if binary else LINE * (block_size // len(LINE))
    with path.open("wb") as out:
        written = 0
        while written < size:
            piece = block[: size - written]
            out.write(piece)
            written += len(piece)


async def baseline(client: BrowserClient, sid: str, path: str) -> float:
    """Seconds until the first 64 KiB of `path` arrived through read_file (stream closed right after)."""
    started = time.perf_counter()
    received = 0
    async with client.fs.read_file(sid, path) as chunks:
        async for chunk in chunks:
            received += len(chunk)
            if received >= BASELINE_BYTES:
                break
    return time.perf_counter() - started


class ViewerApp(App):
    def __init__(self, client: BrowserClient, sid: str) -> None:
        super().__init__()
        self.client = client
        self.sid = sid

    def compose(self) -> ComposeResult:
        yield FileViewer(self.sid)

    def connected_client(self) -> BrowserClient:
        return self.client

    def report_error(self, error: BaseException, title: str = "Request failed") -> None:
        raise SystemExit(f"{title}: {error}")


async def viewer_run(pilot, viewer: FileViewer, path: str, size: int) -> tuple[float, float, float, int]:
    """Seconds to the first block in, to the first drawn row, until the step was in and the stream closed;
    and the bytes received."""
    viewer.open_remote(path, size)
    lines = viewer.query_one(FileLines)
    deadline = time.monotonic() + 30
    while lines.first_paint_at is None or not viewer.opened_at or lines.first_paint_at < viewer.opened_at:
        if time.monotonic() > deadline:
            raise SystemExit("the viewer drew nothing within 30 s")
        await asyncio.sleep(0.001)
    first = lines.first_paint_at - viewer.opened_at
    while not viewer.is_settled and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    settled = time.perf_counter() - viewer.opened_at
    return viewer.first_block_at - viewer.opened_at, first, settled, viewer.bytes_received


def summary(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return f"median {statistics.median(ms):7.1f} ms   min {ms[0]:7.1f}   max {ms[-1]:7.1f}"


class Variant:
    """The viewer as it was (`old`: the whole first step on the shared pool) or as it is."""

    def __init__(self, old: bool) -> None:
        self.old = old
        self.saved = (file_viewer.FIRST_READ, file_viewer.FIRST_READ_WINDOW)

    def __enter__(self) -> None:
        if self.old:
            file_viewer.FIRST_READ, file_viewer.FIRST_READ_WINDOW = file_viewer.LOAD_STEP, None  # type: ignore

    def __exit__(self, *exc_info: object) -> None:
        file_viewer.FIRST_READ, file_viewer.FIRST_READ_WINDOW = self.saved


async def link_run(viewer: FileViewer, link: BadLink, path: str, size: int,
                   old: bool) -> tuple[int, float, float]:
    """Bytes down the link for one open (until the read's connection closed), seconds to the first block in
    (the kind decided) and to the first screen drawn."""
    before = link.bytes_down
    with Variant(old):
        block, first, _settled, _got = await viewer_run(None, viewer, path, size)
    deadline = time.monotonic() + 30
    while link.open_connections and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return link.bytes_down - before, block, first


def tls_service(folder: Path) -> ServiceHandle:
    """`bbrowse serve` on https with a certificate of a throwaway CA, which the client is told to trust."""
    import trustme
    from net_support import TestCA, start_tls_service

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    folder.mkdir(parents=True, exist_ok=True)
    test_ca = TestCA(ca, folder / "ca.pem", folder / "cert.pem", folder / "key.pem")
    ca.cert_pem.write_to_path(str(test_ca.ca_file))
    cert.private_key_pem.write_to_path(str(test_ca.key_file))
    test_ca.cert_file.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    os.environ["SSL_CERT_FILE"] = str(test_ca.ca_file)
    return start_tls_service(folder / "state", test_ca,
                             extra_env={"BBROWSE_CHROMIUM": "/nonexistent/no-browser-needed"})


async def link_main(args: argparse.Namespace, url: str, token: str, sid: str, path: str, size: int) -> None:
    delay = args.delay_ms / 1000
    rtt_ms = 2 * args.delay_ms
    scheme = url.split(":", 1)[0]
    with BadLink(("127.0.0.1", int(url.rsplit(":", 1)[1])), delay=delay, rate=args.mbit * 1e6 / 8,
                 scheme=scheme) as link:
        app = ViewerApp(BrowserClient(link.url, token), sid)
        results: dict[bool, tuple[list[int], list[float], list[float]]] = {True: ([], [], []), False: ([], [], [])}
        async with app.run_test(size=(120, 40)):
            viewer = app.query_one(FileViewer)
            await link_run(viewer, link, path, size, old=False)  # warm-up
            for _ in range(args.runs):
                for old in (True, False):
                    got, block, first = await link_run(viewer, link, path, size, old)
                    results[old][0].append(got)
                    results[old][1].append(first)
                    results[old][2].append(block)
    print(f"load: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores; {args.runs} runs each, interleaved, "
          f"after a warm-up; link {args.delay_ms} ms each way ({rtt_ms} ms round trip), {args.mbit} Mbit/s, {scheme}")
    for old, label in ((True, "viewer as it was (256 KiB, pool)"), (False, "viewer as it is (64 KiB, own conn)")):
        got, first, block = results[old]
        print(f"{label}: bytes down median {statistics.median(got):9,.0f}   max {max(got):9,}")
        print(f"    first block in   {summary(block)}")
        print(f"    first screen     {summary(first)}")
    ratio_bytes = statistics.median(results[False][0]) / statistics.median(results[True][0])
    ratio_time = statistics.median(results[False][1]) / statistics.median(results[True][1])
    print(f"ratio as it is / as it was: bytes {ratio_bytes:.2f}, first screen {ratio_time:.2f}")
    budget = 2 * rtt_ms + 100
    first_ms = statistics.median(results[False][1]) * 1000
    print(f"target <= 256 KiB: {'OK' if max(results[False][0]) <= 256 * 1024 else 'OVER'}; "
          f"first screen <= {budget} ms (2 round trips + 100 ms): {'OK' if first_ms <= budget else 'OVER'} "
          f"(median {first_ms:.0f} ms)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=None, help="500 (200 with --link)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--binary", action="store_true", help="random bytes (hex dump) instead of text lines")
    parser.add_argument("--link", action="store_true", help="through a slow link, against the viewer as it was")
    parser.add_argument("--delay-ms", type=int, default=50, help="--link: one-way delay")
    parser.add_argument("--mbit", type=float, default=10.0, help="--link: bandwidth cap")
    parser.add_argument("--tls", action="store_true", help="the service on https (a throwaway CA)")
    args = parser.parse_args()
    if args.size_mb is None:
        args.size_mb = 200 if args.link else 500

    with tempfile.TemporaryDirectory(prefix="bbrowse-bench-viewer-") as tmp:
        tmp_path = Path(tmp)
        size = args.size_mb * 1024 * 1024
        handle = tls_service(tmp_path / "tls") if args.tls else start_service(tmp_path / "state")
        proc, url, token = handle.process, handle.url, handle.token
        try:
            client = BrowserClient(url, token)
            sid = (await client.sessions.create()).session_id
            big = session_area(handle, sid, "bench") / ("big.bin" if args.binary else "big.log")
            started = time.perf_counter()
            write_file(big, size, args.binary)
            print(f"file: {big.name}, {size / 2**20:.0f} MiB of {'random bytes' if args.binary else 'text lines'} "
                  f"(written in {time.perf_counter() - started:.1f} s)")
            if args.link:
                await link_main(args, url, token, sid, str(big), size)
                return
            app = ViewerApp(client, sid)
            rss_before = psutil.Process().memory_info().rss
            base_times: list[float] = []
            block_times: list[float] = []
            first_times: list[float] = []
            settled_times: list[float] = []
            received: list[int] = []
            async with app.run_test(size=(120, 40)) as pilot:
                viewer = app.query_one(FileViewer)
                await baseline(client, sid, str(big))  # warm-up: connection pool, page cache
                await viewer_run(pilot, viewer, str(big), size)
                for _ in range(args.runs):
                    base_times.append(await baseline(client, sid, str(big)))
                    block, first, settled, got = await viewer_run(pilot, viewer, str(big), size)
                    block_times.append(block)
                    first_times.append(first)
                    settled_times.append(settled)
                    received.append(got)
                shown = viewer.lines.row_text(0)
            rss_after = psutil.Process().memory_info().rss
        finally:
            stop_service(proc)

    print(f"load: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores; {args.runs} runs each after a warm-up")
    print(f"read_file, first 64 KiB (client only):   {summary(base_times)}")
    print(f"viewer, first block in (kind decided):   {summary(block_times)}")
    print(f"viewer, first screen drawn:              {summary(first_times)}")
    print(f"viewer, first read in, stream closed:    {summary(settled_times)}")
    ratio = statistics.median(first_times) / statistics.median(base_times)
    print(f"ratio first screen / first 64 KiB:       {ratio:.2f}")
    print(f"bytes the viewer received per open:      max {max(received):,} of {size:,} "
          f"({max(received) / size * 100:.3f} %)")
    print(f"bench process RSS: {rss_before / 2**20:.0f} MiB before the app ran, {rss_after / 2**20:.0f} MiB after")
    print(f"first row shown: {shown[:80]!r}")
    verdict = "OK" if statistics.median(first_times) * 1000 <= TARGET_MS else "OVER TARGET"
    print(f"target first screen <= {TARGET_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    asyncio.run(main())
