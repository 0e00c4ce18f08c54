"""Terminal ingest: 50 MB of plain and 50 MB of coloured text into the terminal core (libghostty-vt),
against tmux swallowing the same file in the same run; a full screen turned into strips; floods
through the widget.

    .venv/bin/python bench/bench_terminal_ingest.py [--mb 50] [--through-service] [--flood-mb 100]
                                                    [--frames 200] [--core ghostty|python]

For each text (plain: log-like lines of words; coloured: the same with SGR 16-colour, 256-colour and
true-colour runs, as `ls --color` / `grep --color` / compilers print) it measures:

- tmux: `tmux -S <socket> new-session -d -x 200 -y 50 'stty -opost; cat FILE; tmux wait-for -S done'`
  then `tmux wait-for done`, timed (wall clock), plus the CPU time the tmux server spent (psutil),
  history-limit 10000 like our scrollback; afterwards tmux's screen is compared with ours;
- bbrowse's `TerminalCore` (200x50, 10,000 lines of scrollback) fed the same bytes in 64 KiB
  chunks, as they come off a stream: wall clock and CPU time of this process;
- the same 50 MB handed over as one backlog, as the widget gets it after a burst: the flood shortcut
  (`flood.py`) drops what would scroll away unseen, then the rest is fed;
- `--frames N` (default 200; 0 skips): a full 200x50 screen of new coloured text (every row dirty),
  turned into strips as the widget does (render state -> styled runs -> Textual strips), N times:
  p50/p90 wall and CPU milliseconds a frame;
- with `--through-service`: a real `bbrowse serve`, `cat FILE` spawned with a PTY, every chunk of
  `stdout/stream` decoded by bbrowse's client and fed to the core in 32 KiB slices (so no flood
  is skipped): the whole path, MB/s;
- `--flood-mb 100` (0 skips): 100 MB of `yes` output, then half as much of plain lines, written into
  a `TerminalView` in a headless app (back-pressure, 60 frames/s drawing) while a key is typed every
  20 ms: time to drain and the key -> `send_input` latency (p50/p99/max).

Targets (issue 12): plain ingest >= 5x tmux, coloured >= 2x tmux, a full coloured screen into strips
<= 4 ms p50. tmux does ~40 MB/s plain on an idle machine here; on a loaded 2-core box every
wall-clock figure shrinks, which is why the CPU-time figures and the ratios to tmux in the same
run are printed too. `uptime` is printed before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from bbrowse.tui.terminal.core import TerminalCore  # noqa: E402

MB = 1_000_000
COLS, ROWS, SCROLLBACK = 200, 50, 10_000
CHUNK = 64 * 1024
SLICE = 32 * 1024
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
         "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]


def plain_text(size: int) -> bytes:
    rnd = random.Random(1)
    out, total, n = [], 0, 0
    while total < size:
        line = f"{n:08d} " + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 16))) + "\r\n"
        out.append(line)
        total += len(line)
        n += 1
    return "".join(out).encode()[:size]


def coloured_text(size: int) -> bytes:
    rnd = random.Random(2)
    out, total, n = [], 0, 0
    while total < size:
        parts = []
        for _ in range(rnd.randint(3, 12)):
            word = rnd.choice(WORDS)
            kind = rnd.randint(0, 3)
            if kind == 0:
                parts.append(f"\x1b[{rnd.randint(31, 37)}m{word}\x1b[0m")
            elif kind == 1:
                parts.append(f"\x1b[1;38;5;{rnd.randint(0, 255)}m{word}\x1b[0m")
            elif kind == 2:
                r, g, b = (rnd.randint(0, 255) for _ in range(3))
                parts.append(f"\x1b[38;2;{r};{g};{b}m{word}\x1b[m")
            else:
                parts.append(word)
        line = f"{n:08d} " + " ".join(parts) + "\r\n"
        out.append(line)
        total += len(line)
        n += 1
    return "".join(out).encode()[:size]


def uptime() -> str:
    return " ".join(f"{load:.1f}" for load in os.getloadavg())


def tmux_swallow(path: Path, tmp: Path) -> tuple[float, float, list[str]]:
    """(wall seconds, tmux server CPU seconds, tmux's screen rows) for tmux reading `path` raw."""
    # A private server. Its socket lives in a short directory of its own under /tmp: a Unix socket path has
    # at most 107 bytes, and the temporary directory may be deeper than that allows.
    sock_dir = Path(tempfile.mkdtemp(prefix="tmux-ingest-", dir="/tmp"))
    sock = sock_dir / f"tmux-{uuid.uuid4().hex[:8]}.sock"
    conf = tmp / "tmux.conf"
    conf.write_text(f"set -g history-limit {SCROLLBACK}\nset -g status off\n")
    base = ["tmux", "-S", str(sock), "-f", str(conf)]
    started = time.perf_counter()
    subprocess.run([*base, "new-session", "-d", "-x", str(COLS), "-y", str(ROWS),
                    f"stty -opost -echo; cat {path}; tmux -S {sock} wait-for -S done; sleep 600"], check=True)
    pid = int(subprocess.run([*base, "display-message", "-p", "#{pid}"], check=True, capture_output=True,
                             text=True).stdout)
    subprocess.run([*base, "wait-for", "done"], check=True)
    wall = time.perf_counter() - started
    cpu = sum(psutil.Process(pid).cpu_times()[:2])
    screen = subprocess.run([*base, "capture-pane", "-p", "-N"], check=True, capture_output=True,
                            text=True).stdout.split("\n")[:ROWS]
    subprocess.run([*base, "kill-server"], capture_output=True)
    shutil.rmtree(sock_dir, ignore_errors=True)
    return wall, cpu, [line.rstrip() for line in screen]


def ours_chunked(data: bytes) -> tuple[float, float, TerminalCore]:
    core = TerminalCore(COLS, ROWS, scrollback=SCROLLBACK)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for start in range(0, len(data), CHUNK):
        core.feed(data[start : start + CHUNK])
    return time.perf_counter() - wall0, time.process_time() - cpu0, core


def ours_backlog(data: bytes) -> tuple[float, int, TerminalCore]:
    """The whole text as one backlog: the flood shortcut first, then the rest in 64 KiB chunks."""
    core = TerminalCore(COLS, ROWS, scrollback=SCROLLBACK)
    wall0 = time.perf_counter()
    skipped = core.skippable_prefix(data)
    for start in range(skipped, len(data), CHUNK):
        core.feed(data[start : start + CHUNK])
    return time.perf_counter() - wall0, skipped, core


def screen_to_strips(data: bytes, frames: int) -> dict[str, float]:
    """A full screen of new coloured text per frame, into strips: wall and CPU ms (p50, p90)."""
    from rich.style import Style

    from bbrowse.tui.terminal.render import Painter

    core = TerminalCore(COLS, ROWS, scrollback=SCROLLBACK)
    painter = Painter(Style(color="#e0e0e0", bgcolor="#1e1e1e"))
    lines = data.split(b"\r\n")
    walls, cpus = [], []
    for frame in range(frames):
        start = (frame * ROWS) % max(1, len(lines) - ROWS)
        core.feed(b"\r\n".join(lines[start : start + ROWS]) + b"\r\n")
        wall0, cpu0 = time.perf_counter(), time.process_time()
        dirty = core.take_dirty()
        strips = [painter.paint(core.row(y), COLS) for y in sorted(dirty)]
        walls.append(time.perf_counter() - wall0)
        cpus.append(time.process_time() - cpu0)
        assert len(strips) == ROWS, len(strips)
    walls.sort()
    cpus.sort()
    return {"p50": walls[len(walls) // 2] * 1000, "p90": walls[len(walls) * 9 // 10] * 1000,
            "cpu_p50": cpus[len(cpus) // 2] * 1000, "cpu_p90": cpus[len(cpus) * 9 // 10] * 1000}


async def through_service(path: Path, size: int) -> tuple[float, int, TerminalCore]:
    """Seconds from the go signal to the exit event, for `cat FILE` in a PTY read via stdout/stream."""
    from conftest import start_service, stop_service

    from bbrowse.client import BrowserClient, close_shared_clients
    from bbrowse.wire import ProcessExitEvent

    handle = start_service(Path(tempfile.mkdtemp(prefix="bbrowse-bench-")))
    try:
        client = BrowserClient(handle.url, handle.token)
        sid = (await client.sessions.create(timeout_seconds=600)).session_id
        core = TerminalCore(COLS, ROWS, scrollback=SCROLLBACK)
        try:
            proc = await client.processes.spawn(sid, "sh", ["-c", f"stty -opost -echo; read go; exec cat {path}"],
                                                allocate_tty=True, cols=COLS, rows=ROWS)
            total = 0
            async with client.processes.stdout_stream(sid, proc.process_id) as stream:
                started = time.perf_counter()
                await client.processes.stdin(sid, proc.process_id, b"\n")
                async for event in stream:
                    if type(event) is ProcessExitEvent:
                        break
                    data = event.data()
                    total += len(data)
                    for start in range(0, len(data), SLICE):  # slices, as the widget feeds: no flood skipping
                        core.feed(data[start : start + SLICE])
            seconds = time.perf_counter() - started
        finally:
            await client.sessions.delete(sid)
            await close_shared_clients()
    finally:
        stop_service(handle)
    return seconds, total, core


async def widget_flood(data: bytes, repeat: int) -> dict[str, float]:
    """Feed `data` `repeat` times through a TerminalView in a headless app (as a stream reader would:
    `write()` with back-pressure, yielding between chunks) while a key is typed every 20 ms.

    Returns the seconds until everything was drawn and the key -> `send_input` latencies.
    """
    from textual import events
    from textual.app import App, ComposeResult

    from bbrowse.tui.terminal.widget import TerminalView

    arrived: dict[str, float] = {}

    class FloodApp(App[None]):
        def compose(self) -> ComposeResult:
            yield TerminalView(send_input=self.send_input)

        async def send_input(self, payload: bytes) -> None:
            now = time.perf_counter()
            for char in payload.decode(errors="replace"):
                arrived.setdefault(char, now)

    app = FloodApp()
    latencies: list[float] = []
    async with app.run_test(size=(COLS + 2, ROWS + 2)) as pilot:
        view = app.query_one(TerminalView)
        view.focus()
        await pilot.pause()
        done = asyncio.Event()

        async def typist() -> None:
            keys = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" * 50)
            while not done.is_set():
                key = next(keys)
                arrived.pop(key, None)
                posted = time.perf_counter()
                app.post_message(events.Key(key, key))
                while key not in arrived and time.perf_counter() - posted < 5:
                    await asyncio.sleep(0.0005)
                latencies.append(arrived.get(key, posted + 5) - posted)
                await asyncio.sleep(0.02)

        typing = asyncio.create_task(typist())
        started = time.perf_counter()
        cpu_started = time.process_time()
        for _ in range(repeat):
            for start in range(0, len(data), CHUNK):
                await view.write(data[start : start + CHUNK])
                await asyncio.sleep(0)
        await view.wait_drained()
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        done.set()
        await typing
    latencies.sort()
    return {
        "seconds": seconds,
        "cpu": cpu,
        "p50": latencies[len(latencies) // 2],
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "max": latencies[-1],
        "keys": len(latencies),
    }


def rate(size: int, seconds: float) -> float:
    return size / MB / seconds if seconds > 0 else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--through-service", action="store_true")
    parser.add_argument("--flood-mb", type=float, default=100, help="`yes` through the widget (0 skips)")
    parser.add_argument("--frames", type=int, default=200, help="full coloured screens into strips (0 skips)")
    parser.add_argument("--core", choices=("ghostty", "python"), default=None,
                        help="the terminal core (default: as BBROWSE_TERMINAL_CORE, else libghostty where installed)")
    args = parser.parse_args()
    if args.core:
        os.environ["BBROWSE_TERMINAL_CORE"] = args.core
    from bbrowse.tui.terminal.core import core_label

    print(f"terminal core: {core_label()}")
    size = int(args.mb * MB)
    print(f"load average before: {uptime()}")
    ratios = {}
    strips = None
    with tempfile.TemporaryDirectory(prefix="bbrowse-ingest-") as tmpdir:
        tmp = Path(tmpdir)
        for name, make in (("plain", plain_text), ("coloured", coloured_text)):
            data = make(size)
            path = tmp / f"{name}.txt"
            path.write_bytes(data)
            tmux_wall, tmux_cpu, tmux_screen = tmux_swallow(path, tmp)
            wall, cpu, core = ours_chunked(data)
            same = core.display == tmux_screen
            backlog_wall, skipped, backlog_core = ours_backlog(data)
            assert backlog_core.display == core.display, "the flood shortcut changed the screen"
            lines = data.count(b"\n")
            print(f"\n{name}: {len(data) / MB:g} MB, {lines} lines, screen {COLS}x{ROWS}, scrollback {SCROLLBACK}")
            print(f"  tmux (same run)              wall {rate(size, tmux_wall):7.1f} MB/s   "
                  f"server CPU {rate(size, tmux_cpu):7.1f} MB/s")
            print(f"  bbrowse core, 64 KiB chunks  wall {rate(size, wall):7.1f} MB/s   "
                  f"CPU {rate(size, cpu):7.1f} MB/s   same final screen as tmux: {'yes' if same else 'NO'}")
            print(f"  ratio to tmux                wall {tmux_wall / wall:7.2f}         CPU {tmux_cpu / cpu:7.2f}")
            print(f"  the {len(data) / MB:g} MB as one backlog (flood shortcut dropped {skipped / MB:.1f} MB): "
                  f"wall {rate(size, backlog_wall):.1f} MB/s")
            ratios[name] = (tmux_wall / wall, tmux_cpu / cpu)
            if args.through_service:
                seconds, total, service_core = asyncio.run(through_service(path, size))
                same = service_core.display == core.display
                print(f"  stdout/stream -> core (real service, PTY)  wall {rate(total, seconds):7.1f} MB/s  "
                      f"({total / MB:g} MB, same screen: {'yes' if same else 'NO'})")
            if name == "coloured" and args.frames > 0:
                strips = screen_to_strips(data[: 4 * MB], args.frames)
                print(f"\nfull {COLS}x{ROWS} screen of new coloured text into strips ({args.frames} frames): "
                      f"p50 {strips['p50']:.2f} ms, p90 {strips['p90']:.2f} ms wall; "
                      f"CPU p50 {strips['cpu_p50']:.2f} ms, p90 {strips['cpu_p90']:.2f} ms")
        if args.flood_mb > 0:
            yes = b"y\r\n" * (CHUNK // 3)
            repeat = max(1, int(args.flood_mb * MB) // len(yes))
            figures = asyncio.run(widget_flood(yes, repeat))
            total = repeat * len(yes)
            print(f"\nflood through TerminalView (headless app, 60 frames/s): `yes`, {total / MB:.0f} MB")
            print(f"  drained and drawn in {figures['seconds']:.2f} s ({rate(total, figures['seconds']):.1f} MB/s), "
                  f"CPU {figures['cpu']:.2f} s")
            print(f"  key -> send_input during the flood: p50 {figures['p50'] * 1000:.1f} ms, "
                  f"p99 {figures['p99'] * 1000:.1f} ms, max {figures['max'] * 1000:.1f} ms ({figures['keys']} keys)")
            plain = plain_text(int(args.flood_mb * MB / 2))
            figures = asyncio.run(widget_flood(plain, 1))
            print(f"flood through TerminalView: `cat` of {len(plain) / MB:.0f} MB of plain lines")
            seconds = figures["seconds"]
            print(f"  drained and drawn in {seconds:.2f} s ({rate(len(plain), seconds):.1f} MB/s), "
                  f"CPU {figures['cpu']:.2f} s")
            print(f"  key -> send_input during the flood: p50 {figures['p50'] * 1000:.1f} ms, "
                  f"p99 {figures['p99'] * 1000:.1f} ms, max {figures['max'] * 1000:.1f} ms ({figures['keys']} keys)")
    print(f"\nload average after: {uptime()}")
    for name, target in (("plain", 5), ("coloured", 2)):
        wall_ratio, cpu_ratio = ratios[name]
        verdict = "meets" if wall_ratio >= target else "misses"
        print(f"target {name} >= {target}x tmux: wall {wall_ratio:.1f}x ({verdict}), CPU {cpu_ratio:.1f}x")
    if strips is not None:
        print(f"target full screen into strips <= 4 ms p50: {strips['p50']:.2f} ms wall "
              f"({'meets' if strips['p50'] <= 4 else 'misses'}), {strips['cpu_p50']:.2f} ms CPU")


if __name__ == "__main__":
    main()
