"""Start-up under tmux: launch → the sessions table connected to the embedded service (issue 25 item 11).

    .venv/bin/python bench/bench_startup.py [--runs 7] [--size 160x45] [--before DIR]

Each run starts `bbrowse` in a fresh tmux pane with no service configured, a fresh state directory and
config home (so it starts its own embedded service), and reads the pane every 10 ms until the sessions
screen says "No browser sessions yet" (the first listing from the service is drawn). Baseline in the
same run, alternating with it: Textual's hello-world (an App whose Static says "Hello, World!") until
that text is on screen. `--before DIR` adds a third contender: the `bbrowse` package in DIR (another
checkout, e.g. `git archive <commit> bbrowse | tar -x -C DIR`) run the same way, to compare two versions
in one run. Prints the medians, their ratios, and the CPU seconds the app and its service had used by
the ready moment (from /proc: a figure a loaded machine inflates less than the wall time). Python may
write bytecode (as it does for a user), and one launch of each contender warms it and the disk cache
first. Target: bbrowse ≤ 1.0 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BBROWSE = ROOT / ".venv" / "bin" / "bbrowse"
HELLO = (
    "from textual.app import App\n"
    "from textual.widgets import Static\n"
    "class Hello(App):\n"
    "    def compose(self):\n"
    "        yield Static('Hello, World!')\n"
    "Hello().run()\n"
)
READY = {"hello": "Hello, World!", "bbrowse": "No browser sessions yet", "before": "No browser sessions yet"}
TIMEOUT_SECONDS = 30.0


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, timeout=10).stdout


def stop_embedded(discovery: Path) -> None:
    """The run's embedded service ends before the next run starts (it is in a session of its own)."""
    try:
        pid = json.loads(discovery.read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    for _ in range(500):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@dataclass
class Run:
    """One launch: seconds to ready (nan: never), and the CPU seconds the app and its service had used by then."""

    elapsed: float = math.nan
    app_cpu: float = math.nan
    service_cpu: float = math.nan


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) process `pid` has used so far; nan once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def service_pid(discovery: Path) -> int | None:
    try:
        return int(json.loads(discovery.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


def one_run(name: str, size: str, socket: str, before: str | None = None) -> Run:
    home = tempfile.mkdtemp(prefix="bench-startup-")
    env = {
        "HOME": home, "XDG_CONFIG_HOME": f"{home}/config", "XDG_STATE_HOME": f"{home}/state",
        "XDG_DATA_HOME": f"{home}/data", "BBROWSE_STATE_DIR": f"{home}/bbrowse", "TERM": "xterm-256color",
    }
    if name == "before" and before:
        env["PYTHONPATH"] = before  # ahead of the editable install's finder, in the app and its service
        command = f"{shlex.quote(sys.executable)} -m bbrowse"
    elif name == "bbrowse":
        command = shlex.quote(str(BBROWSE))
    else:
        command = f"{shlex.quote(sys.executable)} -c {shlex.quote(HELLO)}"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    width, height = size.split("x")
    session = f"s{os.getpid()}"
    started = time.perf_counter()
    # In the run's own directory: `python -m` puts the working directory first on sys.path, which would
    # make --before run this checkout.
    tmux(socket, "new-session", "-d", "-s", session, "-x", width, "-y", height, "-c", home,
         f"env -u KERNEL_API_KEY -u KERNEL_BASE_URL -u BBROWSE_PROFILE -u PYTHONDONTWRITEBYTECODE {exports} {command}")
    run = Run()
    screen = ""
    discovery = Path(env["BBROWSE_STATE_DIR"]) / "serve.json"
    app_pid = int(tmux(socket, "display-message", "-p", "-t", session, "#{pane_pid}").strip() or 0)
    while time.perf_counter() - started < TIMEOUT_SECONDS:
        screen = tmux(socket, "capture-pane", "-p", "-t", session)
        if READY[name] in screen:
            run.elapsed = time.perf_counter() - started
            run.app_cpu = cpu_seconds(app_pid)
            pid = service_pid(discovery)
            run.service_cpu = cpu_seconds(pid) if pid else math.nan
            break
        time.sleep(0.01)
    elapsed = run.elapsed
    if math.isnan(elapsed):
        print(f"{name}: not ready; the screen was:\n{screen.rstrip()}", file=sys.stderr)
    tmux(socket, "send-keys", "-t", session, "C-q")
    for _ in range(300):  # up to 3 s for the app to leave (the embedded service stops in the background)
        if session not in tmux(socket, "list-sessions", "-F", "#{session_name}"):
            break
        time.sleep(0.01)
    tmux(socket, "kill-session", "-t", session)
    stop_embedded(discovery)
    shutil.rmtree(home, ignore_errors=True)
    return run


def median_of(values: Iterable[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return statistics.median(kept) if kept else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--size", default="160x45")
    parser.add_argument("--before", metavar="DIR", help="a directory holding another version's bbrowse package")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("bench_startup needs tmux")
    socket = f"bench-startup-{os.getpid()}"
    names = ("hello", "before", "bbrowse") if args.before else ("hello", "bbrowse")
    results: dict[str, list[Run]] = {name: [] for name in names}
    # A session that lives for the whole bench: the server never exits between runs (a run's new-session
    # racing the server's exit hung).
    tmux(socket, "new-session", "-d", "-s", "keep", "sleep 3600")
    try:
        # Warm the disk cache and write the bytecode: the first run is not what a user sees twice.
        for name in names:
            one_run(name, args.size, socket, args.before)
        for _ in range(args.runs):
            for name in names:
                results[name].append(one_run(name, args.size, socket, args.before))
    finally:
        tmux(socket, "kill-server")
    medians: dict[str, float] = {}
    for name, runs in results.items():
        done = [r for r in runs if not math.isnan(r.elapsed)]
        times = [r.elapsed for r in done] or [math.nan]
        medians[name] = statistics.median(times)
        cpu = f"app {median_of(r.app_cpu for r in done):.2f} CPU-s"
        if name != "hello":
            cpu += f", service {median_of(r.service_cpu for r in done):.2f} CPU-s"
        print(f"{name:8s} launch to ready under tmux: median {medians[name]:.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f}, {len(runs)} runs, "
              f"{len(runs) - len(done)} not ready within {TIMEOUT_SECONDS:.0f} s); by then {cpu}")
    for name in names[1:]:
        print(f"{name} / hello-world: {medians[name] / medians['hello']:.2f}x")
    if args.before:
        print(f"bbrowse / before: {medians['bbrowse'] / medians['before']:.2f}x")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("target: bbrowse <= 1.0 s")


if __name__ == "__main__":
    main()
