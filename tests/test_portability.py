"""bbrowse on a machine that is not Linux (macOS): the commands and the app run without touching anything
Linux-only, and the local service says it cannot run here instead of crashing.

The platform is simulated in a subprocess (`sys.platform = "darwin"` before bbrowse is imported)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bbrowse"
# Linux-only modules and calls. fcntl/termios/pty are POSIX (macOS has them); these are not.
LINUX_ONLY_MODULES = {"pyghostty", "prctl", "inotify", "inotify_simple", "pyinotify", "resource"}
LINUX_ONLY_TEXT = ("/proc/", "/sys/fs/cgroup", "sched_setaffinity", "sched_getaffinity", "PR_SET_PDEATHSIG",
                   "prctl(", "memfd_create", "pidfd_open", "os.setns", "unshare(")
# Where they are allowed: the service (`bbrowse serve`, Linux only) and the libghostty core, which is
# imported only when pyghostty is installed (core.py falls back to the Python core otherwise).
ALLOWED = ("bbrowse/service/", "bbrowse/tui/terminal/ghostty_")
# Hits that do not run here: (file, text) -> why.
NOT_LOCAL = {("bbrowse/tui/shell_session.py", "/proc/"): "the busy probe is a command run on the remote instance"}


def _client_side_files() -> list[Path]:
    return [path for path in PACKAGE.rglob("*.py")
            if not str(path.relative_to(ROOT)).startswith(ALLOWED)]


def test_the_client_side_touches_nothing_linux_only() -> None:
    """A scan of every module outside the service: no Linux-only import, path or call (import-linter's
    contracts see only imports, and /proc is a string)."""
    found = []
    for path in _client_side_files():
        source = path.read_text()
        tree = ast.parse(source)
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            found += [f"{path.relative_to(ROOT)}: imports {name}" for name in names
                      if name.split(".")[0] in LINUX_ONLY_MODULES]
        docstrings = set()
        for node in ast.walk(tree):
            scopes = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            if isinstance(node, scopes) and ast.get_docstring(node):
                first = node.body[0]
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
        code = "\n".join(line for number, line in enumerate(source.splitlines(), 1) if number not in docstrings)
        name = str(path.relative_to(ROOT))
        found += [f"{name}: {text}" for text in LINUX_ONLY_TEXT if text in code and (name, text) not in NOT_LOCAL]
    assert not found, "\n".join(found)


_AS_MACOS = ("import importlib, sys; from bbrowse.cli import main; from bbrowse.commands import COMMANDS; "
             "[importlib.import_module(where.split(':')[0]) for where in COMMANDS.values()]; "
             "sys.platform = 'darwin'; sys.argv = ['bbrowse', *sys.argv[1:]]; "
             "main()")  # the platform is asked when a command runs (urllib wants macOS's _scproxy at import,
#                       and the commands are imported when named: loaded first, on Linux)


def _as_macos(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("KERNEL_", "BBROWSE_"))}
    environment.update(env or {})
    return subprocess.run([sys.executable, "-c", _AS_MACOS, *args], capture_output=True, text=True, timeout=60,
                          env=environment, cwd=ROOT)


def test_serve_refuses_off_linux_and_names_the_two_ways_on(tmp_path) -> None:
    done = _as_macos("serve", "--port", "0", env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c")})
    assert done.returncode == 2
    assert "needs Linux (this machine: darwin)" in done.stderr
    assert "KERNEL_API_KEY" in done.stderr and "kind = \"remote\"" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_terminal_core_falls_back_to_python_without_pyghostty() -> None:
    """pyghostty absent (as on macOS): the pane's core is the Python one, and says why."""
    code = ("import sys; sys.modules['pyghostty'] = None\n"
            "from bbrowse.tui.terminal.core import TerminalCore, core_label\n"
            "core = TerminalCore(20, 5); core.feed(b'\\x1b[31mhi'); core.take_dirty()\n"
            "print(type(core).__name__, core.row(0)[0], core_label())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={k: v for k, v in os.environ.items() if k != "BBROWSE_TERMINAL_CORE"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("PythonCore ('hi', (1, -1, 0)) Python core (pyghostty is not available")


def test_info_names_the_terminal_core_and_what_this_machine_lacks(tmp_path) -> None:
    """`bbrowse info` as a doctor: on macOS the local service is the missing piece (with the ways on), the
    pane's core is named; on Linux with nothing on PATH every program the service runs is listed with the
    package that brings it."""
    home = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s")}
    mac = _as_macos("info", env={**home, "BBROWSE_TERMINAL_CORE": "python"})
    assert mac.returncode == 0, mac.stderr
    assert re.search(r"terminal core +Python core \(BBROWSE_TERMINAL_CORE=python\)", mac.stdout)
    assert "missing: bbrowse serve" in mac.stdout and "KERNEL_API_KEY" in mac.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    linux = subprocess.run([sys.executable, "-m", "bbrowse", "info", "--json"], capture_output=True, text=True,
                           timeout=60, cwd=ROOT, env={**{k: v for k, v in os.environ.items()
                                                         if not k.startswith(("KERNEL_", "BBROWSE_"))},
                                                      **home, "PATH": str(empty)})
    assert linux.returncode == 0, linux.stderr
    missing = {item["what"]: item["how"] for item in json.loads(linux.stdout)["missing"]}
    assert set(missing) == {"chromium", "ffmpeg", "Xvfb", "xdotool", "xclip", "bwrap"}
    assert "sudo apt-get install xvfb" in missing["Xvfb"]


async def test_the_app_with_no_service_configured_says_so_on_one_screen(monkeypatch, tmp_path) -> None:
    """`bbrowse` on macOS with no profile: the start screen says the local service cannot run here and
    names the two ways on; the app keeps running (P picks a profile)."""
    from textual.widgets import Static

    from bbrowse.config import defaults
    from bbrowse.target import target_for
    from bbrowse.tui.app import BbrowseApp, StartingScreen

    monkeypatch.setenv("BBROWSE_STATE_DIR", str(tmp_path / "state"))  # no discovery file: nothing running
    monkeypatch.setattr(sys, "platform", "darwin")
    app = BbrowseApp(resolve=lambda: target_for(defaults().active_profile))
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(200):
            await pilot.pause(0.05)
            if app.connection_state == "failed":
                break
        assert isinstance(app.screen, StartingScreen) and app.connection_state == "failed"
        text = str(app.screen.query_one("#starting-message", Static).render())
        assert "needs Linux (this machine: darwin)" in text
        assert "KERNEL_API_KEY" in text and "bbrowse --profile work" in text and "Press P" in text
