"""Without KERNEL_* in the environment, commands use the embedded service: started detached by the first
command, reused by the next, stopped by `bbrowse serve --stop`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time

from cli_support import BBROWSE, COMMAND_TIMEOUT
from conftest import NO_CHROMIUM, start_service, stop_service


def run(env: dict, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*BBROWSE, *args], env=env, capture_output=True, timeout=COMMAND_TIMEOUT,
                          stdin=subprocess.DEVNULL)


def embedded_env(tmp_path, **extra: str) -> dict[str, str]:
    """The commands' environment with no remote service named: they use the embedded one of `tmp_path`/state."""
    env = {k: v for k, v in os.environ.items() if k not in ("KERNEL_BASE_URL", "KERNEL_API_KEY", "BBROWSE_DEBUG")}
    return {**env, "BBROWSE_STATE_DIR": str(tmp_path / "state"), "BBROWSE_CONFIG_DIR": str(tmp_path / "config"),
            **extra}


def alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_new_then_sessions_through_the_detached_embedded_service_then_serve_stop(tmp_path):
    state = tmp_path / "state"
    # no Chromium: the subject is the service the commands start, find and stop, not its browsers
    env = embedded_env(tmp_path, BBROWSE_CHROMIUM=NO_CHROMIUM)
    pid = None
    try:
        before = json.loads(run(env, "info", "--json").stdout)
        assert before["service"]["kind"] == "embedded" and before["service"]["url"] is None
        assert not (state / "serve.json").exists()  # info only looks; it starts nothing

        created = run(env, "new", "--name", "embedded-one")
        assert created.returncode == 0, created.stderr
        sid = created.stdout.decode().strip()
        pid = json.loads((state / "serve.json").read_text())["pid"]

        listed = run(env, "sessions", "--json")  # a new command: the service outlived the first one
        assert listed.returncode == 0, listed.stderr
        assert [(b["session_id"], b.get("name")) for b in json.loads(listed.stdout)] == [(sid, "embedded-one")]

        info = json.loads(run(env, "info", "--json").stdout)
        assert info["service"]["kind"] == "embedded" and info["service"]["pid"] == pid
        assert info["service"]["status"] == "ok" and info["service"]["url"].startswith("http://127.0.0.1:")

        stopped = run(env, "serve", "--stop")
        assert stopped.returncode == 0
        assert stopped.stdout.decode().strip() == f"stopped bbrowse serve (pid {pid})"
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)

        again = run(env, "serve", "--stop")
        assert again.returncode == 0 and again.stdout.decode().strip() == "no bbrowse serve is running"
    finally:
        if pid is not None and alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


def test_serve_stop_answers_once_the_service_ends_though_the_app_that_started_it_has_not_reaped_it(tmp_path):
    """The app that started the embedded service is its parent (here: this test) and reaps it only when it next
    looks; until then the ended service is a zombie that signal 0 still reaches. `bbrowse serve --stop` says
    it stopped as soon as the service has ended, not after its 10 s wait, and the next one finds none."""
    service = start_service(tmp_path / "state", extra_env={"BBROWSE_CHROMIUM": NO_CHROMIUM})
    env = embedded_env(tmp_path)
    try:
        started = time.monotonic()
        stopped = run(env, "serve", "--stop")
        took = time.monotonic() - started
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.decode().strip() == f"stopped bbrowse serve (pid {service.pid})"
        assert not alive(service.pid) and service.process.returncode is None  # ended, not reaped by its parent
        assert took < 5.0, took  # well within the 10 s --stop allows a service to end
        again = run(env, "serve", "--stop")
        assert again.returncode == 0 and again.stdout.decode().strip() == "no bbrowse serve is running"
    finally:
        stop_service(service)
