"""App-level figures for issue 4: key → rendered cell through the whole app, and cold start.

    .venv/bin/python bench/bench_app.py keys [--count 300] [--mode default|compat|both]
    .venv/bin/python bench/bench_app.py coldstart [--runs 5]

keys: the real app (Pilot, headless) on a real `bbrowse serve` (default mode, then `--kernel-compat`),
a session screen with a shell pane running `stty raw -echo; exec cat`, its output over attach. Each
sample posts one key event to the focused terminal and waits until the widget has drawn the row
holding that character (its `render_line` returned a strip containing it). Baseline in the same run:
the client-only round trip on the same path (POST one byte to `stdin` of the same kind of process,
wait for it on `attach`, both through the session's VM endpoint). Both type at 20 keys/s, a fast
typist's pace, so each key starts from an idle app as it does for a person.
Target (issue 11): overhead ≤ 1 ms at p50, in each mode.

coldstart: a fresh Python process runs `bbrowse` headless with no service configured (so it starts
the embedded service) and exits when the sessions table is first drawn; baseline: a bare Textual
hello-world exiting on its first frame, same way. Target ≤ 1.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

RAW_CAT = ("sh", "-c", "stty raw -echo; exec cat")


def pct(samples: list[float]) -> tuple[float, float]:
    ms = sorted(s * 1000 for s in samples)
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


async def client_round_trips(client, sid: str, count: int) -> list[float]:
    """The client-only round trip on the shell's path: `stdin` in, the byte back over `attach`, both
    through the session's VM endpoint, with no app around it."""
    proc = await client.processes.spawn(sid, RAW_CAT[0], RAW_CAT[1:], allocate_tty=True)
    samples = []
    async with client.processes.attach(sid, proc.process_id) as term:
        assert term.direct, "attach did not go through the session's VM endpoint"
        await asyncio.sleep(0.3)
        frames = aiter(term)
        for i in range(count):
            byte = bytes([97 + i % 26])
            await asyncio.sleep(0.05)  # the same typing pace as the app run
            started = time.perf_counter()
            await client.processes.stdin(sid, proc.process_id, byte)
            while byte not in await anext(frames):
                pass
            samples.append(time.perf_counter() - started)
    await client.processes.kill(sid, proc.process_id, "KILL")
    return samples


async def app_round_trips(service, browser, count: int) -> list[float]:
    from textual import events

    from bbrowse.config import ShellSettings, defaults
    from bbrowse.tui.panes.shells import ShellTab
    from bbrowse.tui.screens.session import SessionScreen

    settings = defaults().model_copy(update={"shell": ShellSettings(command=RAW_CAT)})  # the baseline's program
    app = _app(service, settings)
    samples: list[float] = []
    missed = 0
    async with app.run_test(size=(100, 30)) as pilot:
        app.push_screen(SessionScreen(browser))
        for _ in range(200):
            await pilot.pause(0.05)
            tabs = app.screen.query(ShellTab)
            if tabs and tabs.first().shell and tabs.first().shell.path == "attach":
                break
        tab = app.screen.query_one(ShellTab)
        assert tab.shell.path == "attach", tab.shell.path
        terminal = tab.terminal
        await pilot.pause(0.5)
        drawn: dict[str, float] = {}
        original = terminal.render_line

        def render_line(y: int):
            strip = original(y)
            text = strip.text
            for char in text:
                if char.isalpha() and char not in drawn:
                    drawn[char] = time.perf_counter()
            return strip

        terminal.render_line = render_line  # type: ignore[method-assign]
        for i in range(count):
            if i % 20 == 0:  # start a fresh line so every sample draws a new character
                terminal.reset()
                drawn.clear()
                await pilot.pause(0.05)
            char = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 20 + (i // 20 % 2) * 26]
            drawn.pop(char, None)
            await asyncio.sleep(0.05)  # typing pace (20 keys/s): each key starts from an idle app
            started = time.perf_counter()
            terminal.post_message(events.Key(char, char))
            deadline = started + 2.0
            while char not in drawn and time.perf_counter() < deadline:
                await asyncio.sleep(0.0002)
            if char not in drawn:
                missed += 1
                continue
            samples.append(drawn[char] - started)
    if missed:
        print(f"warning: {missed} keys were not drawn within 2 s")
    return samples


def _app(service, settings):
    from bbrowse.client import ClientConfig
    from bbrowse.target import Target
    from bbrowse.tui.app import BbrowseApp

    return BbrowseApp(target=Target(ClientConfig(service.url, service.token), "remote"), settings=settings)


async def keys_in(mode: str, count: int) -> None:
    from conftest import start_service, stop_service

    from bbrowse.client import BrowserClient, close_shared_clients

    env = {"BBROWSE_KERNEL_COMPAT": "1"} if mode == "compat" else {}
    service = start_service(Path(tempfile.mkdtemp(prefix="bench-app-")), extra_env=env)
    try:
        client = BrowserClient(service.url, service.token)
        browser = await client.sessions.create(timeout_seconds=600)
        baseline = await client_round_trips(client, browser.session_id, count)
        await close_shared_clients()
        through_app = await app_round_trips(service, browser, count)
    finally:
        stop_service(service)
    b50, b99 = pct(baseline)
    a50, a99 = pct(through_app)
    print(f"\n[{mode}] key -> rendered cell, {count} keys at 20/s (load average {os.getloadavg()[0]:.2f})")
    print(f"[{mode}] client-only round trip   ({len(baseline)}): p50 {b50:.2f} ms  p99 {b99:.2f} ms")
    print(f"[{mode}] key -> rendered cell app ({len(through_app)}): p50 {a50:.2f} ms  p99 {a99:.2f} ms")
    verdict = "meets" if a50 - b50 <= 1 else "MISSES"
    print(f"[{mode}] app overhead: p50 {a50 - b50:+.2f} ms (target <= 1 ms: {verdict}), ratio {a50 / b50:.2f}x")


async def keys(count: int, modes: list[str]) -> None:
    for mode in modes:
        await keys_in(mode, count)


HELLO = """
import time, sys
from textual.app import App
from textual.widgets import Static
class Hello(App):
    def compose(self):
        yield Static("hello")
    def on_mount(self):
        self.call_after_refresh(self.exit)
Hello().run(headless=True)
print(time.time() - float(sys.argv[1]))
"""

BBROWSE = """
import time, sys
from bbrowse.tui import app
from bbrowse.tui.screens import sessions
original = sessions.SessionsScreen._apply
def apply(self):
    original(self)
    self.app.call_after_refresh(self.app.exit)
sessions.SessionsScreen._apply = apply
original_run = app.BbrowseApp.run
app.BbrowseApp.run = lambda self, **kw: original_run(self, headless=True)
app.run_app()
print(time.time() - float(sys.argv[1]))
"""


def coldstart(runs: int) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KERNEL_API_KEY", "KERNEL_BASE_URL")}
    results: dict[str, list[float]] = {"hello": [], "bbrowse": []}
    for _ in range(runs):
        for name, code in (("hello", HELLO), ("bbrowse", BBROWSE)):
            state = tempfile.mkdtemp(prefix="bench-cold-")
            out = subprocess.run(
                [sys.executable, "-c", code, repr(time.time())],
                env={**env, "BBROWSE_STATE_DIR": state}, capture_output=True, text=True, timeout=60,
            )
            results[name].append(float(out.stdout.strip().splitlines()[-1]))
    for name, values in results.items():
        print(f"{name:8s} cold start to first drawn frame: median {statistics.median(values):.3f} s "
              f"(min {min(values):.3f}, max {max(values):.3f}, {runs} runs)")
    ratio = statistics.median(results["bbrowse"]) / statistics.median(results["hello"])
    print(f"bbrowse / hello-world: {ratio:.2f}x (target: bbrowse <= 1.5 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    k = sub.add_parser("keys")
    k.add_argument("--count", type=int, default=300)
    k.add_argument("--mode", choices=("default", "compat", "both"), default="both")
    c = sub.add_parser("coldstart")
    c.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.what == "keys":
        asyncio.run(keys(args.count, ["default", "compat"] if args.mode == "both" else [args.mode]))
    else:
        coldstart(args.runs)


if __name__ == "__main__":
    main()
