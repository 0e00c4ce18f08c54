"""Shared fixtures: one real `bbrowse serve` on a loopback port for the whole test session.

The service runs as a separate process, exactly as users run it, with its state in a temporary
directory. Tests talk to it over real HTTP: raw httpx, bbrowse's client, or the official SDK.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from bbrowse.tui.textual_private import pilots_wait_until_settled, starve_idle_guess

# The suite runs with a home of its own, made afresh: nothing a test saves lands in the real one, and no
# dotfile of whoever runs it (a shell prompt, a bbrowse config, a downloads folder) changes what a test sees.
_HOME = Path(tempfile.mkdtemp(prefix="bbrowse-test-home-"))
os.environ["HOME"] = str(_HOME)
for _name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
              "BBROWSE_CONFIG_DIR", "BBROWSE_STATE_DIR", "BBROWSE_PROFILE", "BBROWSE_THEME",
              "KERNEL_API_KEY", "KERNEL_BASE_URL", "LC_ALL", "LC_CTYPE", "LANGUAGE",
              "BBROWSE_KERNEL_COMPAT", "BBROWSE_NO_SANDBOX"):
    os.environ.pop(_name, None)
# One UTF-8 locale for the suite and every program it starts (shells, `ls`, `less` in a PTY), whatever
# the machine's own is: CJK and box-drawing tests must not depend on it.
os.environ["LANG"] = "C.UTF-8"
# Pilot's waits count what the app has still to handle, instead of guessing from the CPU time (docs/decisions.md).
pilots_wait_until_settled()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--starved-cpu", action="store_true",
                     help="Textual's idle guess sees no CPU used, as in a process starved of CPU (run on purpose: a "
                          "Pilot test that passes only when the machine is idle fails)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--starved-cpu"):
        starve_idle_guess()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (pytest, the test modules, bbrowse, Textual) stays for the whole run: out of the
    collector's full passes, which would walk it at every one."""
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HOME, ignore_errors=True)


#: The files that take five seconds or more, longest first (`--durations=0` summed per file). With `--dist loadfile
#: --no-loadscope-reorder` (scripts/test.sh) workers take files in this order: long files start early and the
#: run ends on short ones (the rest, in their usual order) instead of one worker running a long file alone.
SLOW_FILES = (
    "test_app_shell.py", "test_net.py", "test_fuzz.py", "test_app_compat.py", "test_cli_compat.py",
    "test_terminal_widget.py", "test_app_keyboard.py", "test_app_files.py", "test_app_wall.py",
    "test_compat_kernel_vm.py", "test_replays.py", "test_compat_vm_session.py", "test_faults.py", "test_computer.py",
    "test_browsers.py", "test_app_live_view.py", "test_sessions.py", "test_auth.py", "test_cli_shell.py",
    "test_app_profiles.py", "test_cdp_proxy.py", "test_app_quit.py", "test_attach.py", "test_app_newcomer_polling.py",
    "test_cli_computer.py", "test_app_screenshot.py", "test_app_logs.py", "test_processes.py",
    "test_app_file_manager.py", "test_app_newcomer_screens.py", "test_cli_commands.py", "test_app_panes_shells.py",
    "test_integrity.py", "test_cli_embedded.py", "test_app_events.py", "test_app_prediction.py", "test_vm_auth.py",
    "test_terminal_core.py", "test_app_sessions.py", "test_compat_vm_streams.py", "test_themes.py", "test_load.py",
    "test_app_snapshots.py", "test_retention.py", "test_client.py", "test_app_replays.py", "test_startup.py",
    "test_cli_browser.py", "test_app_newcomer_reconnect.py", "test_app_panes_logs.py", "test_sandbox.py",
    "test_keep_alive.py", "test_logs.py", "test_telemetry.py", "test_app_panes_files.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's tests keep their order


@dataclass
class ServiceHandle:
    url: str
    token: str
    pid: int
    state_dir: Path
    process: subprocess.Popen

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def start_service(state_dir: Path, extra_env: dict[str, str] | None = None, port: int = 0,
                  ignored_signals: tuple[signal.Signals, ...] = (), extra_args: tuple[str, ...] = (),
                  verify: ssl.SSLContext | bool = True) -> ServiceHandle:
    """Start `bbrowse serve` on 127.0.0.1 and wait until it answers (with `ignored_signals` ignored, as a
    script's background job starts it; `extra_args` after `serve`, `verify` for an https service)."""

    # The service dies with the pytest worker that started it (a killed run leaves no service behind):
    # SIGTERM lets it close its Chromiums; SIGKILL when the test has it ignore SIGTERM.
    death = signal.SIGKILL if signal.SIGTERM in ignored_signals else signal.SIGTERM

    def before_exec() -> None:
        for number in ignored_signals:
            signal.signal(number, signal.SIG_IGN)
        _die_with_parent(death)

    state_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "BBROWSE_STATE_DIR": str(state_dir), **(extra_env or {})}
    env.pop("KERNEL_API_KEY", None)
    env.pop("KERNEL_BASE_URL", None)
    discovery = state_dir / "serve.json"
    discovery.unlink(missing_ok=True)
    log = open(state_dir / "serve.stdout", "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bbrowse", "serve", "--port", str(port), *extra_args],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=before_exec,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"bbrowse serve exited with {proc.returncode}: "
                               f"{(state_dir / 'serve.stdout').read_text()[-2000:]}")
        try:
            info = json.loads(discovery.read_text())
            if info.get("pid") == proc.pid:
                r = httpx.get(info["url"] + "/browsers", headers={"Authorization": f"Bearer {info['token']}"},
                              timeout=2, verify=verify)
                if r.status_code == 200:
                    return ServiceHandle(info["url"], info["token"], proc.pid, state_dir, proc)
        except (OSError, ValueError, httpx.HTTPError):
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("bbrowse serve did not answer within 30 s")


# prctl, looked up before any fork: a child between fork and exec must not import (another thread may hold
# the import lock).
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None


def _die_with_parent(number: signal.Signals) -> None:
    """In a child before exec: have Linux send `number` when the thread that started it dies (no-op elsewhere)."""
    if _PRCTL is not None:
        _PRCTL(1, int(number), 0, 0, 0)  # PR_SET_PDEATHSIG


def stop_service(handle: ServiceHandle) -> None:
    if handle.process.poll() is None:
        os.killpg(handle.pid, signal.SIGTERM)
        try:
            handle.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(handle.pid, signal.SIGKILL)
            handle.process.wait(5)


class PageServer:
    """Test pages served over loopback HTTP, as a developer's local server: sessions are sandboxed and see
    none of this machine's files, but share its network (`file://` URLs of a test's temp files would not load)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="test pages", daemon=True)
        self.thread.start()

    def url(self, name: str, html: str) -> str:
        """Publish `html` as `name`; its URL."""
        (self.directory / name).write_text(html)
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def session_area(service: ServiceHandle, session_id: str, name: str) -> Path:
    """A fresh directory `/workspace/<name>` of a session, for tests that make files beside the service's own calls.

    A sandboxed session sees none of this machine's directories, so the path is the session's, and the test
    reaches the same files from outside through the session's folder: `str()` of the path (and of every
    path made from it) is the one inside, what the service is asked about; opening, stat, mkdir, symlink and
    the rest act on the host side of the same directory (`os.fspath`). Without a sandbox it is a plain path.
    """
    host_root = service.state_dir / "service" / "sessions" / session_id / "work" / name
    host_root.mkdir(parents=True)
    serve = json.loads((service.state_dir / "serve.json").read_text())
    if not str(serve.get("sandbox", "")).startswith("on"):
        return host_root
    inside_root = f"/workspace/{name}"

    def host_side(self: Path) -> str:
        return str(host_root) + str(self)[len(inside_root):]

    in_session = type("SessionPath", (type(Path()),), {"__fspath__": host_side})
    return in_session(inside_root)


@pytest.fixture(scope="session")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageServer]:
    server = PageServer(tmp_path_factory.mktemp("pages"))
    yield server
    server.close()


#: What `BBROWSE_CHROMIUM` is set to for a service with no Chromium (a supported mode: browser calls answer 503).
NO_CHROMIUM = "/nonexistent/chromium"


def _serve(tmp_path_factory: pytest.TempPathFactory, name: str,
           extra_env: dict[str, str] | None = None) -> Iterator[ServiceHandle]:
    """A session fixture's service: started in a fresh state directory, stopped after the run."""
    handle = start_service(tmp_path_factory.mktemp(name), extra_env=extra_env)
    yield handle
    stop_service(handle)


def _raw_http(handle: ServiceHandle) -> httpx.AsyncClient:
    """Raw HTTP to `handle` with its token: for asserting exact wire behaviour."""
    return httpx.AsyncClient(base_url=handle.url, headers=handle.headers, timeout=30)


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceHandle]:
    yield from _serve(tmp_path_factory, "bbrowse-state")


@pytest.fixture(scope="session")
def browserless_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceHandle]:
    """A second real service configured with no Chromium (a supported mode: processes, files and
    logs work, browser calls answer 503). For tests that create many sessions and never use their
    browser, such as paging, where launching 45 Chromiums would only cost minutes."""
    yield from _serve(tmp_path_factory, "bbrowse-nobrowser", {"BBROWSE_CHROMIUM": NO_CHROMIUM})


@pytest.fixture(scope="session")
def compat_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceHandle]:
    """A real service started with `--kernel-compat` (env `BBROWSE_KERNEL_COMPAT`): it behaves as Kernel's VM does
    (PTY output only over `attach`, read only while attached, one attach, 10 s retention, -1 after a signal,
    `{"message"}` errors under `/vm/`, no supervisor log source; README: "Default vs --kernel-compat")."""
    yield from _serve(tmp_path_factory, "bbrowse-compat", {"BBROWSE_KERNEL_COMPAT": "1"})


@pytest.fixture(scope="session")
def browserless_compat_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceHandle]:
    """`compat_service` with no Chromium: Kernel's VM behaviour for processes, PTYs, files and logs, for tests of
    those that need no browser (a Chromium start each saved)."""
    yield from _serve(tmp_path_factory, "bbrowse-compat-nobrowser",
                      {"BBROWSE_KERNEL_COMPAT": "1", "BBROWSE_CHROMIUM": NO_CHROMIUM})


@pytest.fixture(scope="session")
async def browserless_compat_http(browserless_compat_service: ServiceHandle) -> AsyncIterator[httpx.AsyncClient]:
    async with _raw_http(browserless_compat_service) as client:
        yield client


@pytest.fixture(scope="session")
def unsandboxed_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceHandle]:
    """A real service started with `--no-sandbox` (env `BBROWSE_NO_SANDBOX`) and no Chromium: sessions run on the
    host, as the service's user. For tests that need the service to see this machine's files, not a browser."""
    yield from _serve(tmp_path_factory, "bbrowse-nosandbox",
                      {"BBROWSE_NO_SANDBOX": "1", "BBROWSE_CHROMIUM": NO_CHROMIUM})


@pytest.fixture(scope="session")
async def unsandboxed_http(unsandboxed_service: ServiceHandle) -> AsyncIterator[httpx.AsyncClient]:
    async with _raw_http(unsandboxed_service) as client:
        yield client


@pytest.fixture(scope="session")
async def compat_http(compat_service: ServiceHandle) -> AsyncIterator[httpx.AsyncClient]:
    """Raw HTTP with the right token to the `--kernel-compat` service (control plane)."""
    async with _raw_http(compat_service) as client:
        yield client


@pytest.fixture(scope="session")
async def browserless_http(browserless_service: ServiceHandle) -> AsyncIterator[httpx.AsyncClient]:
    async with _raw_http(browserless_service) as client:
        yield client


@pytest.fixture(scope="session")
async def http(service: ServiceHandle) -> AsyncIterator[httpx.AsyncClient]:
    """Raw HTTP with the right token: for asserting exact wire behaviour."""
    async with _raw_http(service) as client:
        yield client


@pytest.fixture
def sdk(service: ServiceHandle):
    """The official Kernel Python SDK pointed at the local service; a client of its own for each test.

    The SDK's `Stream` and its generator refer to each other, so a stream neither read to its end nor
    closed is freed by the cyclic garbage collector, at any allocation, in any thread, and closing its
    response takes its connection pool's lock. When that thread is inside the same pool, holding that
    lock, it waits on itself forever (httpcore's sync pool; encode/httpcore#990, seen here once: a stream
    left by one test hung a later test's call, and with it every test after it on that worker). The
    tests close their streams; a client per test also keeps a stream one test forgets out of the next
    test's pool.
    """
    from kernel import Kernel

    client = Kernel(api_key=service.token, base_url=service.url, max_retries=0)
    yield client
    client.close()


@pytest.fixture(scope="module")
async def module_session_id(http: httpx.AsyncClient) -> AsyncIterator[str]:
    """One session for a whole module, for tests that exercise files, logs or processes rather than
    sessions: creating a session starts its Chromium, which costs seconds."""
    r = await http.post("/browsers", json={"timeout_seconds": 600})
    assert r.status_code == 200, r.text
    sid = r.json()["session_id"]
    yield sid
    await http.delete(f"/browsers/{sid}")


@pytest.fixture(scope="module")
async def browserless_module_session_id(browserless_http: httpx.AsyncClient) -> AsyncIterator[str]:
    """One session for a whole module on the service with no Chromium, for tests whose subject is not the
    browser (files, processes, logs of files, the CLI's commands): no Chromium start at all."""
    r = await browserless_http.post("/browsers", json={"timeout_seconds": 600})
    assert r.status_code == 200, r.text
    sid = r.json()["session_id"]
    yield sid
    await browserless_http.delete(f"/browsers/{sid}")


@pytest.fixture
def browserless_sdk(browserless_service: ServiceHandle):
    """The official SDK as `sdk` gives it (a client per test), on the service with no Chromium."""
    from kernel import Kernel

    client = Kernel(api_key=browserless_service.token, base_url=browserless_service.url, max_retries=0)
    yield client
    client.close()


@pytest.fixture
async def session_id(http: httpx.AsyncClient) -> AsyncIterator[str]:
    """A fresh browser session for one test, deleted afterwards."""
    r = await http.post("/browsers", json={"timeout_seconds": 600})
    assert r.status_code == 200, r.text
    sid = r.json()["session_id"]
    yield sid
    await http.delete(f"/browsers/{sid}")
