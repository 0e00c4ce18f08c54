"""A service started with SIGINT and SIGQUIT ignored (a script's `bbrowse serve &`) still gives its children
signals that work: an ignored signal survives exec, so without care ctrl-c in a shell pane, ctrl-\\ and the
kill route's INT would end nothing."""

from __future__ import annotations

import base64
import signal
import time
from collections.abc import Iterator

import httpx
import pytest
from conftest import start_service, stop_service

NO_CHROMIUM = {"BBROWSE_CHROMIUM": "/nonexistent/chromium"}


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    handle = start_service(tmp_path_factory.mktemp("ignoring-state"), extra_env=NO_CHROMIUM,
                           ignored_signals=(signal.SIGINT, signal.SIGQUIT))
    try:
        with httpx.Client(base_url=handle.url, headers=handle.headers, timeout=30) as client:
            yield client
    finally:
        stop_service(handle)


@pytest.fixture
def sid(http: httpx.Client) -> Iterator[str]:
    sid = http.post("/browsers", json={"timeout_seconds": 300}).json()["session_id"]
    yield sid
    http.delete(f"/browsers/{sid}")


def spawn(http: httpx.Client, sid: str, *argv: str, tty: bool = False) -> dict:
    """Spawn `argv`; the route answers once the program is exec'd, so a signal after it reaches the program."""
    r = http.post(f"/browsers/{sid}/process/spawn",
                  json={"command": argv[0], "args": list(argv[1:]), "allocate_tty": tty})
    assert r.status_code == 200, r.text
    return r.json()


def exit_code(http: httpx.Client, sid: str, pid: str, timeout: float = 20) -> int | None:
    """The process's exit code once it has exited; None if it still runs after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = http.get(f"/browsers/{sid}/process/{pid}/status").json()
        if status["state"] == "exited":
            return status["exit_code"]
        time.sleep(0.05)
    return None


def test_kill_quit_from_the_session_ends_a_pipe_child(http: httpx.Client, sid: str) -> None:
    """`kill -QUIT <pid>`, typed in a shell of the session, ends a program spawned without a terminal."""
    child = spawn(http, sid, "sleep", "100.28")
    # By its command line: in the session's sandbox the program has a pid of that PID namespace, not the one
    # the spawn reports (this machine's).
    r = http.post(f"/browsers/{sid}/process/exec", json={"command": "pkill", "args": ["-QUIT", "-xf", "sleep 100.28"]})
    assert r.json()["exit_code"] == 0, r.text
    assert exit_code(http, sid, child["process_id"]) == 128 + signal.SIGQUIT


@pytest.mark.parametrize(("key", "number"), [(b"\x03", signal.SIGINT), (b"\x1c", signal.SIGQUIT)])
def test_ctrl_c_and_ctrl_backslash_end_a_program_on_a_pty(http: httpx.Client, sid: str, key: bytes,
                                                          number: signal.Signals) -> None:
    pid = spawn(http, sid, "sleep", "100", tty=True)["process_id"]
    r = http.post(f"/browsers/{sid}/process/{pid}/stdin", json={"data_b64": base64.b64encode(key).decode()})
    assert r.status_code == 200, r.text
    assert exit_code(http, sid, pid) == 128 + number
