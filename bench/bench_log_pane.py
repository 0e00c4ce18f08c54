"""How fast a log pane of the app shows lines appended to a file on the instance, and what it costs.

Run on purpose, not in the test suite:

    .venv/bin/python bench/bench_log_pane.py [--lines 2000000] [--paced-rate 50000] [--paced-seconds 20]

It starts its own `bbrowse serve` (a separate process, state in a temporary directory), runs the
app headless in this process (Textual's `run_test`: the compositor renders every frame, the driver
just discards the bytes), opens a log pane on a file, and has a separate writer process append
numbered lines (~100 bytes, in blocks, as a busy logger does). Two runs:

1. flat out, `--lines` lines: lines/s from the first append to the last line *drawn* by the pane
   (its `render_line` returning that line), and the rate per second along the way (sustained);
   RSS of the app process every 10% of the run (must be flat once the 100k buffer is full);
2. paced at `--paced-rate` lines/s: whether the pane keeps up, with the append-to-drawn lag of the
   newest line on screen, sampled twice a second.

During both, the UI is probed: every 250 ms a real key event (`t`, the timestamps toggle, twice)
goes through the driver like a keypress, and the time until the pane redraws a row with the new
option is recorded; a 20 ms timer records how late it fires (event loop lag).
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
from pathlib import Path

import httpx
import psutil
from textual import events
from textual.app import ComposeResult
from textual.screen import Screen

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_log_follow import run_writer, start_service

from bbrowse.client import ClientConfig
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.panes.logs import LogsPane, LogTarget
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import driver_of
from bbrowse.tui.widgets.log_view import LogView
from bbrowse.wire import LogSource

MB = 1024 * 1024


class BenchScreen(Screen):
    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id

    def compose(self) -> ComposeResult:
        yield LogsPane(self.session_id, open_default=False)


class KeyProbe:
    """Sends `t` through the driver and times it until the pane draws a row with timestamps toggled."""

    def __init__(self, app: BbrowseApp, view: LogView) -> None:
        self.app, self.view = app, view
        self.latencies: list[float] = []
        self._sent: float | None = None
        self._want: bool | None = None
        original = view.render_line

        def render_line(y: int):
            strip = original(y)
            if self._sent is not None and view.show_timestamps == self._want:
                self.latencies.append(time.perf_counter() - self._sent)
                self._sent = None
            return strip

        view.render_line = render_line  # type: ignore[method-assign]

    def close(self) -> None:
        del self.view.render_line  # back to the class's method

    async def run(self, stop: asyncio.Event) -> None:
        driver = driver_of(self.app)
        assert driver is not None
        while not stop.is_set():
            if self._sent is None:
                self._want = not self.view.show_timestamps
                self._sent = time.perf_counter()
                key = events.Key("t", "t")
                key.set_sender(self.app)
                driver.send_message(key)
            await asyncio.sleep(0.25)


class LoopLag:
    """How late a 20 ms timer fires: what any event (a key, a click) waits for, at least.

    For each late tick it also notes how much of the wait this process spent on a CPU: near 100%
    means the app itself was busy (its own long step), much less means the OS ran other processes.
    """

    def __init__(self, app: BbrowseApp) -> None:
        self.lags: list[float] = []
        self.on_cpu: list[float] = []  # for ticks more than 100 ms late
        self._last = time.perf_counter()
        self._last_cpu = time.process_time()
        self.timer = app.set_interval(0.02, self._tick)

    def _tick(self) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        late = max(0.0, now - self._last - 0.02)
        self.lags.append(late)
        if late > 0.1:
            self.on_cpu.append((cpu - self._last_cpu) / (now - self._last))
        self._last, self._last_cpu = now, cpu


def summary_ms(values: list[float]) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"


def line_time(line: str) -> float | None:
    """The writer's `time.time()` at the append, from a `seq=N t=T ...` line."""
    parts = line.split(" ", 2)
    if len(parts) < 2 or not parts[1].startswith("t="):
        return None
    return float(parts[1][2:])


async def ingest_run(
    app: BbrowseApp, view: LogView, log: Path, total: int, rate: float, label: str, service_pid: int
) -> None:
    me = psutil.Process()
    service = [psutil.Process(service_pid), *psutil.Process(service_pid).children(recursive=True)]
    cpu_before = sum(me.cpu_times()[:2])
    service_before = sum(sum(p.cpu_times()[:2]) for p in service)
    start_seq = view.buffer.end_seq
    last_seq = start_seq + total - 1
    probe = KeyProbe(app, view)
    lag = LoopLag(app)
    stop = asyncio.Event()
    probe_task = asyncio.create_task(probe.run(stop))
    started = time.monotonic()
    writer = run_writer(log, total, rate)
    per_second: list[float] = []
    rss: list[tuple[int, float]] = []
    lags: list[float] = []
    next_rss_at = total // 10
    last_t, last_drawn = started, start_seq
    deadline = started + max(120.0, total / 10_000)
    try:
        while view.drawn_seq < last_seq:
            await asyncio.sleep(0.5)
            now = time.monotonic()
            drawn = max(view.drawn_seq, start_seq)
            per_second.append((drawn - last_drawn) / (now - last_t))
            last_t, last_drawn = now, drawn
            if drawn - start_seq >= next_rss_at:
                rss.append((drawn - start_seq + 1, me.memory_info().rss / MB))
                next_rss_at += total // 10
            if view.drawn_seq >= view.buffer.first_seq:
                sent = line_time(view.buffer.line(view.drawn_seq))
                if sent is not None:
                    lags.append(time.time() - sent)
            if now > deadline:
                raise SystemExit(f"{label}: only {drawn - start_seq:,} of {total:,} lines drawn by the deadline")
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        await probe_task
        probe.close()
        lag.timer.stop()
        writer.wait()
    cpu_seconds = sum(me.cpu_times()[:2]) - cpu_before
    service_share = (sum(sum(p.cpu_times()[:2]) for p in service) - service_before) / elapsed
    steady = per_second[2:-1] or per_second
    print(f"{label}: {total:,} lines in {elapsed:.1f} s = {total / elapsed:,.0f} lines/s appended->drawn "
          f"(app {cpu_seconds / elapsed:.0%} of a core, service {service_share:.0%})")
    print(f"    app CPU: {cpu_seconds / total * 1e6:.1f} µs a line, so one free core would carry "
          f"{total / cpu_seconds:,.0f} lines/s")
    print(f"    drawn per 0.5 s window, lines/s: median {statistics.median(steady):,.0f}, "
          f"min {min(steady):,.0f}")
    print(f"    key 't' -> row redrawn: {summary_ms(probe.latencies)} ({len(probe.latencies)} presses)")
    print(f"    20 ms timer lateness:   {summary_ms(lag.lags)}")
    if lag.on_cpu:
        print(f"    {len(lag.on_cpu)} ticks over 100 ms late; this process was on a CPU for "
              f"{statistics.median(lag.on_cpu):.0%} (median) of those waits")
    if rate:
        ordered = sorted(lags)
        print(f"    append->drawn lag of the newest line on screen: {summary_ms(ordered)}; "
              f"first 10% median {statistics.median(lags[: max(1, len(lags) // 10)]) * 1000:.0f} ms, "
              f"last 10% median {statistics.median(lags[-max(1, len(lags) // 10):]) * 1000:.0f} ms")
    if rss:
        print("    RSS after N lines: " + ", ".join(f"{n:,}: {mb:.0f} MB" for n, mb in rss))
    print(f"    buffer: {len(view.buffer):,} lines kept, {view.buffer.dropped:,} dropped")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--paced-rate", type=float, default=50_000)
    parser.add_argument("--paced-seconds", type=float, default=20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bbrowse-bench-") as tmp:
        root = Path(tmp)
        log = root / "bench.log"
        log.write_bytes(b"")
        proc, base_url, token = start_service(root / "state")
        try:
            async with httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {token}"}) as http:
                sid = (await http.post("/browsers", json={"timeout_seconds": 3600})).json()["session_id"]
            app = BbrowseApp(target=Target(ClientConfig(base_url, token), "remote"))
            async with app.run_test(size=(160, 48)) as pilot:
                for _ in range(600):
                    if isinstance(app.screen, SessionsScreen):
                        break
                    await pilot.pause(0.05)
                await app.push_screen(BenchScreen(sid))
                pane = app.screen.query_one(LogsPane)
                panel = await pane.open_log(LogTarget(LogSource.PATH, str(log), history=0))
                for _ in range(600):
                    if panel.connection.startswith("●"):
                        break
                    await pilot.pause(0.05)
                view = panel.view
                print(f"pane {view.size.width}x{view.size.height}, buffer {view.buffer.capacity:,} lines, "
                      f"lines of ~100 bytes, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
                print(f"RSS before: {psutil.Process().memory_info().rss / MB:.0f} MB")
                await ingest_run(app, view, log, args.lines, 0, "flat out", proc.pid)
                paced = int(args.paced_rate * args.paced_seconds)
                await ingest_run(app, view, log, paced, args.paced_rate, f"paced at {args.paced_rate:,.0f} lines/s",
                                 proc.pid)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)


if __name__ == "__main__":
    asyncio.run(main())
