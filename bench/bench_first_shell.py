"""The first session opened in a fresh app: how long the app stops answering, and when the shell's prompt shows.

    .venv/bin/python bench/bench_first_shell.py [--runs 3] [--idle 2.0]

Each run is a fresh Python process (nothing of the terminal core imported yet) running the real app headless
(Pilot) on a real `bbrowse serve`. It shows the sessions table, waits `--idle` seconds (a person reading the
table), opens a session and measures, from that moment: the longest gap between ticks of a 5 ms heartbeat task
(the app's loop held: keys and drawing wait that long) and the time until the shell pane shows its prompt.
Runs alternate with and without the warm-up (`bbrowse.tui.warm_up`, off: the app as it was); the baseline in
the same process is a second session opened the same way (everything then imported and warm).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE_RUN = r"""
import asyncio, json, sys, time
ROOT, IDLE, WARM_UP = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "on"
sys.path[:0] = [ROOT + "/tests", ROOT]
from conftest import start_service, stop_service
from pathlib import Path
import tempfile
from bbrowse.client import BrowserClient, ClientConfig
from bbrowse.config import ShellSettings, defaults
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.panes.shells import ShellTab
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui import warm_up

if not WARM_UP:  # the app as it was: nothing loaded before the first session is opened
    warm_up.warm_up_soon = lambda: None

PROMPT = "PROMPT>"
SHELL = ("env", f"PS1={PROMPT} ", "sh")


async def opened(pilot, app, browser):
    gaps = []
    running = True

    async def heartbeat():
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    beat = asyncio.ensure_future(heartbeat())
    started = time.perf_counter()
    app.push_screen(SessionScreen(browser))
    while True:
        tabs = app.screen.query(ShellTab) if isinstance(app.screen, SessionScreen) else []
        if tabs and "\n".join(tabs[0].terminal.core.display).rstrip().endswith(PROMPT):
            break
        await asyncio.sleep(0.005)
    took = time.perf_counter() - started
    running = False
    await beat
    app.pop_screen()
    await pilot.pause(0.3)
    return {"freeze": max(gaps) - 0.005, "prompt": took}


async def main(idle):
    service = start_service(Path(tempfile.mkdtemp(prefix="bench-first-shell-")))
    try:
        client = BrowserClient(service.url, service.token)
        first = await client.sessions.create(timeout_seconds=600)
        second = await client.sessions.create(timeout_seconds=600)
        app = BbrowseApp(target=Target(ClientConfig(service.url, service.token), "remote"),
                         settings=defaults().model_copy(update={"shell": ShellSettings(command=SHELL)}))
        async with app.run_test(size=(160, 45)) as pilot:
            while not isinstance(app.screen, SessionsScreen):
                await pilot.pause(0.05)
            await asyncio.sleep(idle)
            cold = await opened(pilot, app, first)
            warm = await opened(pilot, app, second)
        print(json.dumps({"cold": cold, "warm": warm}))
    finally:
        stop_service(service)


asyncio.run(main(IDLE))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle", type=float, default=2.0, help="seconds on the sessions table before opening")
    args = parser.parse_args()
    results: dict[str, list[dict]] = {"on": [], "off": []}
    for _ in range(args.runs):
        for warm in ("off", "on"):
            done = subprocess.run([sys.executable, "-c", ONE_RUN, str(ROOT), str(args.idle), warm],
                                  capture_output=True, text=True, timeout=300, cwd=tempfile.gettempdir())
            if done.returncode != 0:
                sys.exit(done.stderr)
            results[warm].append(json.loads(done.stdout.strip().splitlines()[-1]))
    rows = [("first session, no warm-up", results["off"], "cold"), ("first session, warm-up", results["on"], "cold"),
            ("second session (baseline)", results["on"] + results["off"], "warm")]
    for label, runs, kind in rows:
        freeze = statistics.median(r[kind]["freeze"] for r in runs) * 1000
        prompt = statistics.median(r[kind]["prompt"] for r in runs) * 1000
        print(f"{label:27} longest freeze p50 {freeze:6.0f} ms   prompt shown p50 {prompt:6.0f} ms  ({len(runs)} runs)")


if __name__ == "__main__":
    main()
