"""Soak: thousands of session lifecycles against one `bbrowse serve`, then is anything left behind?

Each cycle, through bbrowse's client: create a session (with its Chromium) -> spawn a PTY shell ->
type a command into it and wait for its output -> stream a log the command wrote -> every 50th cycle
record a short replay and download it -> exit the shell -> delete the session. `--workers` cycles run
at once. The service runs with a short retention (`--keep-for`, 60 s here) so that retention runs
many times during the soak rather than never. The measurements are taken at rest: a minute after the
last cycle, after a retention pass whose clock (`BBROWSE_CLOCK_FILE`) is moved past the age limit and
the grace of replays just downloaded.

Before (after a warm-up and a retention pass) and after (after a retention pass that follows the
soak), of the service process: RSS, open descriptors, threads, child processes, zombies; and the state
directory's size, with and without the service's own log (which rotation bounds, not retention).
Finally the service is SIGKILLed and every process it had started must be gone (no orphans).

    .venv/bin/python bench/soak.py                      # 5,000 cycles
    .venv/bin/python bench/soak.py --cycles 500         # what fits in a few minutes

Target (issue 15): RSS, fds, threads, children and state dir flat within 10 % after retention has
run; 0 zombies; 0 orphans.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import ServiceHandle, start_service, stop_service  # noqa: E402

from bbrowse.client import BrowserClient, ClientConfig, close_shared_clients  # noqa: E402
from bbrowse.humanize import human_bytes  # noqa: E402
from bbrowse.limits import parse_duration, tree_size  # noqa: E402
from bbrowse.service.recorder import IN_USE_GRACE_SECONDS  # noqa: E402
from bbrowse.wire import ProcessExitEvent, ProcessOutputEvent  # noqa: E402

REPLAY_EVERY = 50
SLACK = 0.10


@dataclass
class Snapshot:
    rss: int
    fds: int
    threads: int
    children: int
    zombies: int
    state: int
    state_without_log: int
    #: Who the zombies are: "name (pid, parent pid)".
    zombie_names: tuple[str, ...] = ()

    def row(self) -> list[str]:
        mib = 1 << 20
        return [f"{self.rss / mib:.1f} MiB", str(self.fds), str(self.threads), str(self.children), str(self.zombies),
                human_bytes(self.state), human_bytes(self.state_without_log)]


def snapshot(handle: ServiceHandle) -> Snapshot:
    proc = psutil.Process(handle.pid)
    children = proc.children(recursive=True)
    zombies: list[str] = []
    for child in children:
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                zombies.append(f"{child.name()} ({child.pid}, parent {child.ppid()})")
        except psutil.NoSuchProcess:
            continue
    root = handle.state_dir / "service"
    state = tree_size(root)
    return Snapshot(proc.memory_info().rss, len(os.listdir(f"/proc/{handle.pid}/fd")), proc.num_threads(),
                    len(children), len(zombies), state, state - tree_size(root / "logs"), tuple(zombies))


class Soak:
    def __init__(self, handle: ServiceHandle, workers: int) -> None:
        self.handle = handle
        self.workers = workers
        self.client = BrowserClient(config=ClientConfig(base_url=handle.url, token=handle.token, timeout=120))
        self.done = 0
        self.replays = 0
        self.replay_bytes = 0
        self.failures: list[str] = []
        self.shell_pids: list[int] = []
        self.cycle_seconds: list[float] = []

    async def cycle(self, n: int) -> None:
        started = time.perf_counter()
        c = self.client
        sid = (await c.sessions.create(timeout_seconds=300)).session_id
        try:
            shell = await c.processes.spawn(sid, "sh", allocate_tty=True)
            self.shell_pids.append(shell.pid)
            async with c.processes.stdout_stream(sid, shell.process_id) as events:
                await c.processes.stdin(sid, shell.process_id, f"echo soak-{n} > soak.log; echo done-$((40+{n}))\n"
                                        .encode())
                seen = bytearray()
                exit_sent = False
                async for event in events:
                    if type(event) is ProcessOutputEvent:
                        seen += event.data()
                        if not exit_sent and f"done-{40 + n}".encode() in seen:
                            await c.processes.stdin(sid, shell.process_id, b"exit\n")
                            exit_sent = True
                    elif type(event) is ProcessExitEvent:
                        break
            log = self.handle.state_dir / "service" / "sessions" / sid / "work" / "soak.log"
            async with c.logs.stream(sid, path=str(log), follow=False) as lines:
                got = [line.message async for line in lines]
            if got != [f"soak-{n}"]:
                self.failures.append(f"cycle {n}: log stream gave {got!r}")
            if n % REPLAY_EVERY == 0:
                replay = await c.replays.start(sid)
                await asyncio.sleep(1.0)
                await c.replays.stop(sid, replay.replay_id)
                async with c.replays.download(sid, replay.replay_id) as chunks:
                    self.replay_bytes += sum([len(chunk) async for chunk in chunks])
                self.replays += 1
        finally:
            await c.sessions.delete(sid)
        self.done += 1
        self.cycle_seconds.append(time.perf_counter() - started)

    async def run(self, first: int, count: int, progress: bool = True) -> None:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for n in range(first, first + count):
            queue.put_nowait(n)
        started = time.monotonic()

        async def worker() -> None:
            while not queue.empty():
                n = queue.get_nowait()
                try:
                    await asyncio.wait_for(self.cycle(n), 180)
                except Exception as exc:  # a bench reports failures, it does not stop at the first
                    self.failures.append(f"cycle {n}: {type(exc).__name__}: {exc}")
                if progress and n % 250 == 0:
                    s = snapshot(self.handle)
                    print(f"  cycle {n}: {time.monotonic() - started:.0f} s, RSS {s.rss / (1 << 20):.0f} MiB, "
                          f"fds {s.fds}, children {s.children}, state {human_bytes(s.state)}, "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)

        await asyncio.gather(*(worker() for _ in range(self.workers)))


def retention_pass(handle: ServiceHandle, clock: Path, ahead: float, timeout: float = 120) -> None:
    """SIGUSR1 runs a pass, with retention's clock `ahead` seconds in the future; wait for its line in the log."""
    log = handle.state_dir / "service" / "logs" / "bbrowse.log"
    before = log.read_text().count("retention pass ")
    clock.write_text(str(time.time() + ahead))
    try:
        os.kill(handle.pid, signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if log.read_text().count("retention pass ") > before:
                return
            time.sleep(0.2)
        raise RuntimeError("no retention pass")
    finally:
        clock.unlink()


async def settle(handle: ServiceHandle, clock: Path, keep: float) -> Snapshot:
    """Measure at rest: exited processes past their retention (a minute of real time), then a retention pass
    with its clock moved past `--keep-for` and the 5-minute grace of replays just downloaded (so what is
    kept is only what retention must keep), then the clock back to real time."""
    await close_shared_clients()
    await asyncio.sleep(65)
    retention_pass(handle, clock=clock, ahead=keep + IN_USE_GRACE_SECONDS + 60)
    return snapshot(handle)


def within(before: float, after: float) -> bool:
    return after <= before * (1 + SLACK) + 1e-9 if before else after == 0


async def main_async(args) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="bbrowse-soak-"))
    keep = parse_duration(args.keep_for)
    clock = workdir / "retention-clock"  # absent: real time (see `retention.file_clock`)
    handle = start_service(workdir / "state", extra_env={"BBROWSE_KEEP_FOR": args.keep_for,
                                                         "BBROWSE_MAX_STATE_SIZE": args.max_state_size,
                                                         "BBROWSE_CLOCK_FILE": str(clock)})
    orphans: list[int] = []
    try:
        soak = Soak(handle, args.workers)
        print(f"state in {handle.state_dir}; warm-up: {args.warmup} cycles; load average {os.getloadavg()[0]:.2f}",
              flush=True)
        await soak.run(0, args.warmup, progress=False)
        before = await settle(handle, clock, keep)
        print(f"soak: {args.cycles} cycles, {args.workers} at a time", flush=True)
        started = time.monotonic()
        await soak.run(args.warmup, args.cycles)
        elapsed = time.monotonic() - started
        peak_load = os.getloadavg()[0]
        after = await settle(handle, clock, keep)
        descendants = psutil.Process(handle.pid).children(recursive=True)
        logs = sorted((handle.state_dir / "service" / "logs").glob("bbrowse.log*"))
        removed = sum(path.read_text().count("retention: removed") for path in logs)

        os.kill(handle.pid, signal.SIGKILL)  # the end: nothing it started may outlive it
        handle.process.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            orphans = [p.pid for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
            if not orphans:
                break
            await asyncio.sleep(0.1)
        leftover_shells = [pid for pid in soak.shell_pids if psutil.pid_exists(pid)
                           and psutil.Process(pid).name() == "sh" and psutil.Process(pid).ppid() == 1]
    finally:
        if handle.process.poll() is None:
            stop_service(handle)

    names = ["RSS", "fds", "threads", "children", "zombies", "state dir", "state dir without the service log"]
    print(f"\n{soak.done}/{args.warmup + args.cycles} cycles done ({args.cycles} measured in {elapsed:.0f} s, "
          f"{args.cycles / elapsed:.1f}/s; cycle p50 {statistics.median(soak.cycle_seconds):.2f} s), "
          f"{soak.replays} replays ({human_bytes(soak.replay_bytes)}), {len(soak.failures)} failures; "
          f"load average at the end {peak_load:.1f}")
    for failure in soak.failures[:10]:
        print("  " + failure)
    print(f"retention passes that removed something: {removed} (in the service log still kept)")
    print(f"| | {' | '.join(names)} |\n|---|{'---|' * len(names)}")
    print(f"| before | {' | '.join(before.row())} |")
    print(f"| after | {' | '.join(after.row())} |")
    flat = {
        "RSS": within(before.rss, after.rss), "fds": within(before.fds, after.fds),
        "threads": within(before.threads, after.threads), "children": within(before.children, after.children),
        "state dir without the service log": within(before.state_without_log, after.state_without_log),
    }
    for name, ok in flat.items():
        print(f"  {name}: {'flat' if ok else 'GREW'}")
    print(f"zombies after: {after.zombies} {list(after.zombie_names) or ''}; orphans after SIGKILL: {orphans or 0}; "
          f"shells reparented to init: {leftover_shells or 0}")
    ok = all(flat.values()) and not after.zombies and not orphans and not leftover_shells and not soak.failures
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=5000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--keep-for", default="60s")
    parser.add_argument("--max-state-size", default="16M")
    sys.exit(asyncio.run(main_async(parser.parse_args())))


if __name__ == "__main__":
    main()
