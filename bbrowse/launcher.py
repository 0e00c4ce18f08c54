"""Finding or starting the embedded `bbrowse serve` for the app and the CLI.

The app never imports the service: it reads the discovery file a running service writes
(`serve.json`, 0600: url, pid, token; see `bbrowse.discovery`, which also says what a file of an
unknown format version does) and reuses that service when it answers, or starts
`python -m bbrowse serve` as a child process on 127.0.0.1 with a random port and token.

The service runs in a session of its own, never tied to the thread that started it (the app starts
it from a worker thread, and PR_SET_PDEATHSIG would fire when that thread ends). A caller that
started it stops it with `stop()`, or with `stop(wait=False)` when quitting: the service then
finishes by itself (recordings finalised, browsers closed) while the terminal is already back. If
the starter dies without stopping it, the service keeps running and is found again through its
discovery file.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bbrowse import discovery
from bbrowse.paths import serve_file, state_dir

if TYPE_CHECKING:
    import httpx

READY_TIMEOUT_SECONDS = 20.0


class LaunchError(RuntimeError):
    """The embedded service could not be started; the message says why and where its log is."""


@dataclass
class EmbeddedService:
    url: str
    token: str
    pid: int
    #: Set when this process started the service and must stop it.
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def owned(self) -> bool:
        return self.process is not None

    @property
    def running(self) -> bool:
        """The process is alive (an owned service: its child; a reused one: its pid)."""
        if self.process is not None:
            return self.process.poll() is None
        return _pid_alive(self.pid)

    def stop(self, timeout: float = 5.0, *, wait: bool = True) -> None:
        """Stop the service if this process started it; a reused one is left running.

        `wait=False` only asks (SIGTERM) and returns at once: the service shuts down in the background,
        finalising its recordings, however long that takes.
        """
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        if not wait:
            return
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)


def answers(url: str, token: str, timeout: float = 1.0) -> bool:
    """Whether the service at `url` answers a listing with this token (the app asks it of a lost service)."""
    return _answers(url, token, timeout)


def _answers(url: str, token: str, timeout: float = 1.0, client: httpx.Client | None = None) -> bool:
    """`client`: one kept across polls (a new one makes an SSL context each time: ~0.1 s of CPU)."""
    import httpx  # here: a service is started before httpx is loaded

    if client is None:  # over plain HTTP, one without a TLS context (making one loads the CA store)
        with httpx.Client(verify=not url.startswith("http://")) as own:
            return _answers(url, token, timeout, own)
    try:
        response = client.get(
            f"{url}/browsers", params={"limit": 1}, headers={"Authorization": f"Bearer {token}"}, timeout=timeout
        )
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # someone else's process: not ours to reuse
    return not _ended_unreaped(pid)


def _ended_unreaped(pid: int) -> bool:
    """The process has ended and waits for its parent to reap it: a service the running app started and
    `bbrowse serve --stop` stopped is such a zombie until the app looks, yet signal 0 still reaches it."""
    import psutil  # here, not at start-up: only a service found running is asked about

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.AccessDenied:
        return False


def read_discovery(path: Path | None = None) -> dict | None:
    """The running service's discovery record; None when absent, damaged or of a format version unknown here."""
    return discovery.read_discovery(path or serve_file())


def find_running() -> EmbeddedService | None:
    """A local service this user already runs, if its discovery file is current and it answers."""
    info = read_discovery()
    if info is None or not _pid_alive(int(info["pid"])):
        return None
    if not _answers(info["url"], info["token"]):
        return None
    return EmbeddedService(url=info["url"], token=info["token"], pid=int(info["pid"]))


def local_service_unavailable() -> str | None:
    """Why `bbrowse serve` cannot run on this machine (None: it can). It needs Linux today: PTYs and
    /proc for its guardian and sandbox, Xvfb for headful sessions."""
    if sys.platform.startswith("linux"):
        return None
    return (
        f"bbrowse serve, the local browser service, needs Linux (this machine: {sys.platform}).\n"
        "Two ways on:\n"
        "Kernel's cloud: export KERNEL_API_KEY=<your key> and run bbrowse again.\n"
        "A bbrowse serve on a Linux machine: a profile in ~/.config/bbrowse/config.toml,\n"
        "[profiles.work] kind = \"remote\", base_url = \"http://host:7780\",\n"
        "token_env = \"WORK_TOKEN\"; then bbrowse --profile work."
    )


def start_embedded(extra_args: list[str] | None = None, *, detached: bool = False) -> EmbeddedService:
    """Start `bbrowse serve` on 127.0.0.1 with a random port and token; wait until it answers.

    The app keeps the process (`owned`) and stops it when it quits. Scriptable commands start it
    `detached`: it then outlives the command (so `bbrowse new` followed by `bbrowse sessions` sees the
    session) and is stopped with `bbrowse serve --stop`.
    """
    unavailable = local_service_unavailable()
    if unavailable:
        raise LaunchError(unavailable)
    token = secrets.token_urlsafe(32)
    log_path = state_dir() / "embedded-serve.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "BBROWSE_TOKEN": token}
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(log_fd, "ab") as log:
        process = subprocess.Popen(
            # -P: not the working directory first on sys.path, where a folder named bbrowse (a state
            # directory, say) would shadow the package and the service would not start.
            [sys.executable, "-P", "-m", "bbrowse", "serve", "--host", "127.0.0.1", "--port", "0", *(extra_args or [])],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    import httpx

    # The service it started speaks plain HTTP on 127.0.0.1: no TLS context (making one loads the CA store).
    with httpx.Client(verify=False) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise LaunchError(f"bbrowse serve exited with code {process.returncode}; see {log_path}")
            info = read_discovery()
            # It listens before it writes the file: the one listing waits in its backlog until it is served
            # (a service that dies meanwhile resets the connection, and the loop sees it exit).
            wait = max(0.5, deadline - time.monotonic())
            if info and info.get("pid") == process.pid and _answers(info["url"], token, wait, client):
                return EmbeddedService(
                    url=info["url"], token=token, pid=process.pid, process=None if detached else process
                )
            time.sleep(0.02)
    process.kill()
    raise LaunchError(f"bbrowse serve did not answer within {READY_TIMEOUT_SECONDS:.0f} s; see {log_path}")


def find_or_start(*, detached: bool = False) -> EmbeddedService:
    return find_running() or start_embedded(detached=detached)


def find_or_start_soon() -> Future[EmbeddedService]:
    """`find_or_start()` in a thread of its own, for the app: the service starts while the app loads."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bbrowse-embedded")
    pending = pool.submit(find_or_start)
    pool.shutdown(wait=False)
    return pending


def stop_running(timeout: float = 10.0) -> int | None:
    """Stop the service named by the discovery file (`bbrowse serve --stop`); its pid, or None if none ran."""
    running = find_running()
    if running is None:
        return None
    os.kill(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _pid_alive(running.pid):
        time.sleep(0.05)
    return running.pid
