"""Start-up under tmux: launch → the sessions table connected to the embedded service (issue 25 item 11).

    .venv/bin/python bench/bench_startup.py [--runs 7] [--size 160x45] [--before DIR]

Each run starts `bbrowse` in a fresh tmux pane with no service configured, a fresh state directory and
config home (so it starts its own embedded service), and reads the pane every 10 ms until the sessions
screen says "No browser sessions yet" (the first listing from the service is drawn). Baseline in the
same run, alternating with it: Textual's hello-world (an App whose Static says "Hello, World!") until
that text is on screen. `--before DIR` adds a third contender: the `bbrowse` package in DIR (another
checkout, e.g. `git archive <commit> bbrowse | tar -x -C DIR`) run the same way, to compare two versions
in one run. Prints the medians and their ratios. Target: bbrowse ≤ 1.0 s.
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


def one_run(name: str, size: str, socket: str, before: str | None = None) -> float:
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
         f"env -u KERNEL_API_KEY -u KERNEL_BASE_URL -u BBROWSE_PROFILE {exports} {command}")
    elapsed = float("nan")
    screen = ""
    while time.perf_counter() - started < TIMEOUT_SECONDS:
        screen = tmux(socket, "capture-pane", "-p", "-t", session)
        if READY[name] in screen:
            elapsed = time.perf_counter() - started
            break
        time.sleep(0.01)
    if math.isnan(elapsed):
        print(f"{name}: not ready; the screen was:\n{screen.rstrip()}", file=sys.stderr)
    tmux(socket, "send-keys", "-t", session, "C-q")
    for _ in range(300):  # up to 3 s for the app to leave (the embedded service stops in the background)
        if session not in tmux(socket, "list-sessions", "-F", "#{session_name}"):
            break
        time.sleep(0.01)
    tmux(socket, "kill-session", "-t", session)
    stop_embedded(Path(env["BBROWSE_STATE_DIR"]) / "serve.json")
    shutil.rmtree(home, ignore_errors=True)
    return elapsed


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
    results: dict[str, list[float]] = {name: [] for name in names}
    # A session that lives for the whole bench: the server never exits between runs (a run's new-session
    # racing the server's exit hung).
    tmux(socket, "new-session", "-d", "-s", "keep", "sleep 3600")
    try:
        one_run("bbrowse", args.size, socket)  # warm the disk cache: the first run is not what a user sees twice
        for _ in range(args.runs):
            for name in names:
                results[name].append(one_run(name, args.size, socket, args.before))
    finally:
        tmux(socket, "kill-server")
    for name, values in results.items():
        done = [v for v in values if not math.isnan(v)] or [math.nan]
        print(f"{name:8s} launch to ready under tmux: median {statistics.median(done):.3f} s "
              f"(min {min(done):.3f}, max {max(done):.3f}, {len(values)} runs, "
              f"{len(values) - len(done)} not ready within {TIMEOUT_SECONDS:.0f} s)")
        results[name] = done
    for name in names[1:]:
        ratio = statistics.median(results[name]) / statistics.median(results["hello"])
        print(f"{name} / hello-world: {ratio:.2f}x")
    print("target: bbrowse <= 1.0 s")


if __name__ == "__main__":
    main()
