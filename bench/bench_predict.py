"""Predicted echo: typing recorded shell command lines in the app's shell pane over a slow link.

A real `bbrowse serve --kernel-compat` behind `netem.BadLink` (a round trip of 50, 100 and 200 ms, half each
way), the app (Pilot) on a shell pane running bash, and the lines of `bench/traces/*.txt` typed into it at
`--rate` keys a second, each line once the prompt is back (a person reads the output first). A key's time is
from the key event to the first `render_line` of the pane whose strip holds the character at its place on
the line (the line's own column: predicted or echoed, whichever came first). Per round trip, with prediction
(`auto`) and the baseline in the same run, prediction off (`never`):

- the share of printable keys drawn within one frame (17 ms) of the key event, p50 and p90;
- mispredictions drawn (a guess the output contradicted after it was drawn), per printable key, and how long
  each stayed (key to the moment it was taken back; the paint follows within a frame);
- characters drawn on the `read -s` line after its prompt while the password (`%secret`) was typed: any
  one is a leak.

    .venv/bin/python bench/bench_predict.py [--rtt 50 100 200] [--rate 10] [--lines 0] [--trace FILE]

Targets (issue 24): >= 70 % of printable keys within 17 ms, <= 1 % mispredicted, each gone within one round
trip + one frame, 0 characters drawn while echo is off.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import start_service, stop_service  # noqa: E402
from netem import BadLink  # noqa: E402

from bbrowse.client import BrowserClient, ClientConfig, close_shared_clients  # noqa: E402
from bbrowse.tui.textual_private import notifications  # noqa: E402

PROMPT = "PROMPT>"
SHELL = ("env", f"PS1={PROMPT} ", "HISTFILE=", "bash", "--norc", "--noprofile", "-i")
FRAME = 1 / 60


def read_trace(path: Path) -> list[str]:
    return [line.rstrip("\n") for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def key_event(char: str):
    from textual import events

    from bbrowse.tui.textual_private import character_to_key

    key = char if char.isalnum() else character_to_key(char)
    return events.Key(key, char)


async def type_trace(url: str, token: str, browser, lines: list[str], mode: str, rate: float) -> dict:
    from bbrowse.config import ShellSettings, defaults
    from bbrowse.target import Target
    from bbrowse.tui.app import BbrowseApp
    from bbrowse.tui.panes.shells import ShellTab
    from bbrowse.tui.screens.session import SessionScreen

    settings = defaults().model_copy(update={"shell": ShellSettings(command=SHELL, predict=mode)})
    app = BbrowseApp(target=Target(ClientConfig(url, token), "remote"), settings=settings)
    delays: list[float] = []
    missed = 0
    leaked = 0
    async with app.run_test(size=(120, 40)) as pilot:
        app.push_screen(SessionScreen(browser))

        async def until(predicate, seconds: float = 60.0) -> bool:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                if predicate():
                    return True
                await asyncio.sleep(0.005)
            return False

        assert await until(lambda: bool(app.screen.query(ShellTab)))
        tab = app.screen.query_one(ShellTab)
        terminal = tab.terminal
        started = await until(lambda: tab.shell is not None and tab.shell.running)
        assert started, f"the shell did not start: {terminal.border_title}, {notifications(app)!r}"
        if not terminal.has_focus:
            await pilot.press("enter")
        core = terminal.core

        def at_prompt() -> bool:
            return core.line_text(core.cursor[1]) in (PROMPT, "password:")

        assert await until(at_prompt)
        watch: dict[int, tuple[int, str]] = {}  # key number -> (column, character) on the watched row
        seen: dict[int, float] = {}
        state = {"row": -1, "secret_from": None}
        original = terminal.render_line

        def render_line(y: int):
            nonlocal leaked
            strip = original(y)
            if y == state["row"]:
                text = strip.text
                now = time.perf_counter()
                for number, (col, char) in list(watch.items()):
                    if col < len(text) and text[col] == char:
                        seen.setdefault(number, now)
                        del watch[number]
                start = state["secret_from"]
                if start is not None and text[start:].strip():
                    leaked += 1
            return strip

        terminal.render_line = render_line  # type: ignore[method-assign]
        number = 0
        for line in lines:
            secret = line.startswith("%secret ")
            text = line[len("%secret "):] if secret else line
            await until(at_prompt, 30)
            await asyncio.sleep(0.3)  # a person reads the prompt
            row = core.cursor[1]
            start = core.cursor[0]
            state["row"] = row
            state["secret_from"] = start if secret else None
            started: dict[int, float] = {}
            for index, char in enumerate(text):
                number += 1
                if not secret and char != " ":
                    watch[number] = (start + index, char)
                started[number] = time.perf_counter()
                terminal.post_message(key_event(char))
                await asyncio.sleep(1 / rate)
            await asyncio.sleep(0.6)  # the echo of the last keys (baseline) before Enter
            for key, began in started.items():
                if key in seen:
                    delays.append(seen[key] - began)
                elif key in watch:
                    missed += 1
                    del watch[key]
            state["secret_from"] = None
            await pilot.press("enter")
        stats = terminal.predictor.stats
        result = {
            "delays": delays, "missed": missed, "leaked": leaked, "wrong_shown": stats.wrong_shown,
            "taken_back": list(stats.taken_back), "rtt": terminal.round_trip, "cases": list(stats.wrong_cases),
        }
        await pilot.press("ctrl+d")
    return result


def summary(result: dict) -> tuple[float, float, float]:
    delays = sorted(result["delays"])
    within = sum(1 for delay in delays if delay <= FRAME) / max(1, len(delays))
    p50 = statistics.median(delays) * 1000 if delays else float("nan")
    p90 = delays[int(len(delays) * 0.9)] * 1000 if delays else float("nan")
    return within, p50, p90


async def run(args: argparse.Namespace) -> None:
    lines = read_trace(args.trace)
    if args.lines:
        lines = lines[: args.lines]
    printable = sum(len(line.replace(" ", "")) for line in lines if not line.startswith("%secret "))
    state = Path(tempfile.mkdtemp(prefix="bbrowse-bench-predict-"))
    handle = start_service(state, extra_env={"BBROWSE_KERNEL_COMPAT": "1"})
    client = BrowserClient(handle.url, handle.token)
    browser = await client.sessions.create(timeout_seconds=3600)
    parts = urlsplit(handle.url)
    print(f"{len(lines)} lines, {printable} printable keys typed at {args.rate:g}/s; frame = {FRAME * 1000:.1f} ms")
    try:
        for rtt in args.rtt:
            link = BadLink((parts.hostname, parts.port), delay=rtt / 2000)
            try:
                results = {}
                for mode in ("never", "auto"):
                    results[mode] = await type_trace(link.url, handle.token, browser, lines, mode, args.rate)
                base, pred = results["never"], results["auto"]
                b_within, b_p50, b_p90 = summary(base)
                within, p50, p90 = summary(pred)
                measured = (pred["rtt"] or 0) * 1000
                wrong = pred["wrong_shown"] / max(1, len(pred["delays"]))
                worst = max(pred["taken_back"], default=0) * 1000
                print(f"\nround trip {rtt} ms (measured by the pane: {measured:.0f} ms)")
                print(f"  off (baseline): {b_within:6.1%} within a frame, p50 {b_p50:6.1f} ms, p90 {b_p90:6.1f} ms,"
                      f" {base['missed']} not drawn")
                print(f"  predicted:      {within:6.1%} within a frame, p50 {p50:6.1f} ms, p90 {p90:6.1f} ms,"
                      f" {pred['missed']} not drawn  (p50 ratio {p50 / b_p50:.2f})")
                print(f"  mispredicted drawn: {pred['wrong_shown']} ({wrong:.2%} of keys), longest shown {worst:.0f} ms"
                      f" (limit {rtt + FRAME * 1000:.0f} ms)")
                for case in pred["cases"]:
                    print(f"    {case}")
                print(f"  drawn while echo was off: {pred['leaked']} (baseline {base['leaked']})")
            finally:
                link.close()
    finally:
        await client.sessions.delete(browser.session_id)
        await close_shared_clients()
        stop_service(handle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rtt", type=int, nargs="+", default=[50, 100, 200], help="round trips, ms")
    parser.add_argument("--rate", type=float, default=10.0, help="keys a second")
    parser.add_argument("--lines", type=int, default=0, help="type only the first N lines (0: all)")
    parser.add_argument("--trace", type=Path, default=ROOT / "bench" / "traces" / "shell-lines.txt")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
