"""Load on one `bbrowse serve` over loopback: PTY shells echoing, log streams following, spawn/exit cycles, at once.

Everything runs concurrently through bbrowse's client, for a bounded amount of work, then stops by
itself. Before and after, the service's own process is measured: open descriptors
(`/proc/<pid>/fd`), RSS, and children left as zombies. The echo latency of the shells is what a
user typing would feel while the rest goes on.

    .venv/bin/python bench/load.py                       # 50 shells, 100 log streams, 1,000 cycles (~3 min)
    .venv/bin/python bench/load.py --quick               # no full warm-up, no waits (~40 s)
    .venv/bin/python bench/load.py --shells 10 --streams 20 --cycles 200

The full run is steady state against steady state: the same load once as a warm-up, then a quiet
minute (the service keeps an exited process queryable for `RETAIN_SECONDS`), the baseline, the load,
another quiet minute, the "after". `--quick` measures right after the load, so the processes still
retained (~4 KiB each) and the allocator's high-water mark show as growth.

tests/test_load.py runs a light version of the same `run_load` in the suite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import session_area, start_service, stop_service  # noqa: E402

from bbrowse.client import BrowserClient, ClientConfig, close_shared_clients  # noqa: E402
from bbrowse.client.pool import new_http_client  # noqa: E402
from bbrowse.service.processes import RETAIN_SECONDS  # noqa: E402
from bbrowse.wire import ProcessExitEvent, ProcessOutputEvent  # noqa: E402

#: One byte in is one byte out: no echo by the terminal, no line discipline.
RAW_CAT = "stty raw -echo; echo READY; exec cat"
#: Log streams per simulated client: one client's pool holds at most 100 connections, and each open stream
#: holds one, so 100 streams are 5 clients (as they would be: 100 panes are not one user's).
STREAMS_PER_CLIENT = 20
#: Descriptors the service may legitimately hold after the load that it did not before (a log file
#: opened lazily, an epoll instance): a leak of one per shell, stream or cycle is far above this.
FD_SLACK = 4
RSS_SLACK = 0.10


@dataclass
class LoadConfig:
    shells: int = 50
    #: Round trips per shell, one after another, `echo_interval` apart (a typist at 10 keys/s).
    echoes: int = 40
    echo_interval: float = 0.1
    streams: int = 100
    #: Lines appended to the followed file while the streams are open, `log_batch` at a time.
    log_lines: int = 2000
    log_batch: int = 50
    cycles: int = 1000
    cycle_workers: int = 8
    #: How long the service may take to settle back (fds closed, memory returned) afterwards.
    settle_seconds: float = 20.0


@dataclass
class Snapshot:
    fds: int
    rss: int
    zombies: list[int]
    children: int


@dataclass
class LoadReport:
    config: LoadConfig
    before: Snapshot
    peak_rss: int = 0
    after: Snapshot | None = None
    echo_ms: list[float] = field(default_factory=list)
    stream_lines: list[int] = field(default_factory=list)
    streams_in_order: bool = True
    cycles_done: int = 0
    cycle_exit_codes: set[int] = field(default_factory=set)
    elapsed: float = 0.0
    cycles_seconds: float = 0.0
    load_average: float = 0.0
    #: The longest this process's own event loop was late during the load (an echo in flight then was late by
    #: as much here, whatever the service did).
    client_lag_ms: float = 0.0

    def percentile(self, q: float) -> float:
        ms = sorted(self.echo_ms)
        return ms[min(len(ms) - 1, int(len(ms) * q))] if ms else float("nan")

    @property
    def fd_leak(self) -> int:
        assert self.after is not None
        return self.after.fds - self.before.fds

    @property
    def rss_growth(self) -> float:
        assert self.after is not None
        return self.after.rss / self.before.rss - 1

    def lines(self) -> list[str]:
        c, after = self.config, self.after
        assert after is not None
        mb = 1 / (1 << 20)
        return [
            f"load: {c.shells} PTY shells x {c.echoes} echoes, {c.streams} log streams x {c.log_lines} lines, "
            f"{c.cycles} spawn/exit cycles ({c.cycle_workers} at a time), all at once: {self.elapsed:.1f} s "
            f"(load average {self.load_average:.1f})",
            f"echo under load: n={len(self.echo_ms)} p50 {statistics.median(self.echo_ms):.1f} ms, "
            f"p99 {self.percentile(0.99):.1f} ms, max {max(self.echo_ms):.1f} ms "
            f"(the client's own loop late by up to {self.client_lag_ms:.0f} ms)",
            f"log streams: {sum(1 for n in self.stream_lines if n == c.log_lines)}/{c.streams} got all "
            f"{c.log_lines} lines, in order: {self.streams_in_order}",
            f"spawn/exit cycles: {self.cycles_done}/{c.cycles} in {self.cycles_seconds:.1f} s "
            f"({self.cycles_done / max(self.cycles_seconds, 1e-9):.0f}/s), exit codes {sorted(self.cycle_exit_codes)}",
            f"service fds: {self.before.fds} before, {after.fds} after ({self.fd_leak:+d})",
            f"service RSS: {self.before.rss * mb:.0f} MiB before, {self.peak_rss * mb:.0f} MiB peak, "
            f"{after.rss * mb:.0f} MiB after ({self.rss_growth:+.1%})",
            f"zombie children: {after.zombies or 'none'}; children left: {after.children} "
            f"(before: {self.before.children})",
        ]


def snapshot(pid: int) -> Snapshot:
    proc = psutil.Process(pid)
    children = proc.children()
    zombies = []
    for child in children:
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                zombies.append(child.pid)
        except psutil.NoSuchProcess:
            continue
    return Snapshot(len(os.listdir(f"/proc/{pid}/fd")), proc.memory_info().rss, zombies, len(children))


async def _shell(client: BrowserClient, sid: str, config: LoadConfig, samples: list[float]) -> None:
    proc = await client.processes.spawn(sid, "sh", ["-c", RAW_CAT], allocate_tty=True)
    buffer = bytearray()
    arrived = asyncio.Event()
    async with client.processes.stdout_stream(sid, proc.process_id) as events:

        async def read() -> None:
            async for event in events:
                if isinstance(event, ProcessOutputEvent):
                    buffer.extend(event.data())
                    arrived.set()

        reader = asyncio.create_task(read())
        try:
            await _until(lambda: b"READY" in buffer, arrived, 30)
            del buffer[:]
            for i in range(config.echoes):
                token = b"<%d>" % i
                started = time.perf_counter()
                await client.processes.stdin(sid, proc.process_id, token)
                await _until(lambda t=token: t in buffer, arrived, 30)
                samples.append((time.perf_counter() - started) * 1000)
                del buffer[:]
                await asyncio.sleep(config.echo_interval)
        finally:
            await client.processes.kill(sid, proc.process_id, "KILL")
            await asyncio.wait_for(reader, 30)


async def _until(predicate, event: asyncio.Event, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while True:
            event.clear()  # before the check: data arriving between the check and the wait sets it again
            if predicate():
                return
            await event.wait()


class Clients:
    """Independent clients (each its own connection pool), as separate users or apps would be."""

    def __init__(self, url: str, token: str) -> None:
        self.config = ClientConfig.resolve(url, token)
        self._http: list = []

    def new(self) -> BrowserClient:
        http = new_http_client(self.config)
        self._http.append(http)
        return BrowserClient(config=self.config, http=http)

    async def close(self) -> None:
        """Close every connection, so the service's side of them is closed too before it is measured."""
        while self._http:
            await self._http.pop().aclose()
        await close_shared_clients()


async def _streams(clients: Clients, sid: str, config: LoadConfig, log: Path, report: LoadReport) -> None:
    per_client = [clients.new() for _ in range(-(-config.streams // STREAMS_PER_CLIENT))]
    streams = [per_client[i // STREAMS_PER_CLIENT].logs.stream(sid, path=str(log)) for i in range(config.streams)]
    await asyncio.gather(*(s.open() for s in streams))  # every stream follows from the end before a line is written
    counts = [0] * config.streams

    async def follow(index: int) -> None:
        async for event in streams[index]:
            if event.message != f"line {counts[index]}":
                report.streams_in_order = False
            counts[index] += 1
            if counts[index] == config.log_lines:
                return

    followers = [asyncio.create_task(follow(i)) for i in range(config.streams)]
    with log.open("a") as out:
        for start in range(0, config.log_lines, config.log_batch):
            out.write("".join(f"line {n}\n" for n in range(start, min(start + config.log_batch, config.log_lines))))
            out.flush()
            await asyncio.sleep(0.05)
    try:
        await asyncio.wait_for(asyncio.gather(*followers), 120)
    finally:
        for task in followers:
            task.cancel()
        for stream in streams:
            await stream.aclose()
        report.stream_lines = counts


async def _cycles(client: BrowserClient, sid: str, config: LoadConfig, report: LoadReport) -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(config.cycles):
        queue.put_nowait(n)
    started = time.perf_counter()

    async def worker() -> None:
        while not queue.empty():
            n = queue.get_nowait()
            proc = await client.processes.spawn(sid, "sh", ["-c", f"exit {n % 3}"])
            async with client.processes.stdout_stream(sid, proc.process_id) as events:
                async for event in events:
                    if isinstance(event, ProcessExitEvent):
                        report.cycle_exit_codes.add(event.exit_code)
                        report.cycles_done += 1

    await asyncio.gather(*(worker() for _ in range(config.cycle_workers)))
    report.cycles_seconds = time.perf_counter() - started


async def _watch_rss(pid: int, report: LoadReport, stop: asyncio.Event) -> None:
    proc = psutil.Process(pid)
    while not stop.is_set():
        report.peak_rss = max(report.peak_rss, proc.memory_info().rss)
        await asyncio.sleep(0.2)


#: How often the client's loop is looked at (`_watch_lag`).
LAG_TICK_SECONDS = 0.02


async def _watch_lag(report: LoadReport, stop: asyncio.Event) -> None:
    """How late this process's loop wakes from a short sleep, at worst: the client's share of an echo's time
    (its loop busy with the load's other work, or the process waiting for a CPU)."""
    while not stop.is_set():
        asked = time.perf_counter()
        await asyncio.sleep(LAG_TICK_SECONDS)
        late = (time.perf_counter() - asked - LAG_TICK_SECONDS) * 1000
        report.client_lag_ms = max(report.client_lag_ms, late)


def scaled(config: LoadConfig, fraction: float) -> LoadConfig:
    """A smaller load of the same shape (warm-up): every kind of work, fewer of each."""
    return LoadConfig(
        shells=max(1, round(config.shells * fraction)), echoes=max(2, round(config.echoes * fraction)),
        echo_interval=config.echo_interval, streams=max(2, round(config.streams * fraction)),
        log_lines=max(10, round(config.log_lines * fraction)), log_batch=config.log_batch,
        cycles=max(8, round(config.cycles * fraction)), cycle_workers=config.cycle_workers,
    )


async def _load(clients: Clients, sid: str, config: LoadConfig, log: Path, report: LoadReport) -> None:
    log.write_text("")  # noqa: ASYNC240 - an empty file, before any load starts
    await asyncio.gather(
        *(_shell(clients.new(), sid, config, report.echo_ms) for _ in range(config.shells)),
        _streams(clients, sid, config, log, report),
        _cycles(clients.new(), sid, config, report),
    )


async def settle(pid: int, before: Snapshot, seconds: float) -> Snapshot:
    """The service's state once descriptors and memory are back (or `seconds` have passed)."""
    deadline = time.monotonic() + seconds
    while True:
        now = snapshot(pid)
        settled = now.fds <= before.fds + FD_SLACK and now.rss <= before.rss * (1 + RSS_SLACK) and not now.zombies
        if settled or time.monotonic() > deadline:
            return now
        await asyncio.sleep(0.25)


async def run_load(
    url: str, token: str, pid: int, workdir: Callable[[str], Path], config: LoadConfig, *,
    warm_up: LoadConfig | None = None, quiet_seconds: float = 0.0,
) -> LoadReport:
    """Run the load once against the service at `url` (process `pid`), measuring before and after.

    `workdir(session_id)` is a directory of the load's session (the followed logs are made there): a
    sandboxed session sees none of this machine's directories.

    `warm_up` (default: a fifth of the load) runs first, unmeasured, so what the service builds once
    (imports, worker threads, the allocator's pools) is in the baseline. `quiet_seconds` is waited
    after the warm-up and after the load: past `RETAIN_SECONDS` it lets the exited processes the
    service keeps queryable go, so "after" compares steady states.
    """
    clients = Clients(url, token)
    sid = (await clients.new().sessions.create(timeout_seconds=900)).session_id
    logs = workdir(sid)
    try:
        scratch = LoadReport(config, Snapshot(0, 1, [], 0))
        await _load(clients, sid, warm_up or scaled(config, 0.2), logs / "warm-up.log", scratch)
        await clients.close()  # the service's side of idle keep-alive connections counts as fds
        await asyncio.sleep(quiet_seconds)
        before = await settle(pid, snapshot(pid), 5)
        report = LoadReport(config, before, peak_rss=before.rss)
        stop = asyncio.Event()
        watchers = [asyncio.create_task(_watch_rss(pid, report, stop)), asyncio.create_task(_watch_lag(report, stop))]
        started = time.perf_counter()
        try:
            await _load(clients, sid, config, logs / "followed.log", report)
        finally:
            report.elapsed = time.perf_counter() - started
            report.load_average = os.getloadavg()[0]
            stop.set()
            await asyncio.gather(*watchers)
            await clients.close()
        await asyncio.sleep(quiet_seconds)
        report.after = await settle(pid, before, config.settle_seconds)
        return report
    finally:
        await clients.new().sessions.delete(sid)
        await clients.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = LoadConfig()
    parser.add_argument("--shells", type=int, default=defaults.shells)
    parser.add_argument("--echoes", type=int, default=defaults.echoes)
    parser.add_argument("--streams", type=int, default=defaults.streams)
    parser.add_argument("--log-lines", type=int, default=defaults.log_lines)
    parser.add_argument("--cycles", type=int, default=defaults.cycles)
    parser.add_argument("--quick", action="store_true",
                        help="measure right after the load, without waiting for exited processes to be forgotten")
    args = parser.parse_args()
    config = LoadConfig(shells=args.shells, echoes=args.echoes, streams=args.streams, log_lines=args.log_lines,
                        cycles=args.cycles)
    workdir = Path(tempfile.mkdtemp(prefix="bbrowse-load-"))
    handle = start_service(workdir / "state")
    try:
        # A full-size warm-up, then RETAIN_SECONDS of quiet before and after: steady state against steady state.
        quiet = 0.0 if args.quick else RETAIN_SECONDS + 5
        report = asyncio.run(run_load(handle.url, handle.token, handle.pid,
                                      lambda sid: session_area(handle, sid, "load"), config,
                                      warm_up=None if args.quick else config, quiet_seconds=quiet))
    finally:
        stop_service(handle)
    print("\n".join(report.lines()))
    held = report.fd_leak <= FD_SLACK and report.rss_growth <= RSS_SLACK and not report.after.zombies
    print("no leaked fds, no zombies, RSS back within 10 %: " + ("held" if held else "NOT HELD"))


if __name__ == "__main__":
    main()
