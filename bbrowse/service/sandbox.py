"""Each session a sandbox: Linux namespaces made by bubblewrap, as Kernel gives each session a VM of its own.

At session create `bwrap` starts one long-lived sandbox; processes join it through `nsenter`
(`command_prefix`) rather than a bwrap each, which is much cheaper (docs/decisions.md). The service's own
file calls run on worker threads that entered the sandbox's mount namespace, so every path resolves as it
does inside and nothing can point them at the host. Deleting a session SIGKILLs the sandbox's pid 1,
which ends every process in it, then removes `sandbox/`.
"""

from __future__ import annotations

import asyncio
import codecs
import concurrent.futures
import contextlib
import ctypes
import json
import logging
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bbrowse.service.errors import ServiceError, bad_request
from bbrowse.service.lifetime import watch_child
from bbrowse.timeouts import bounded

log = logging.getLogger("bbrowse.sandbox")

T = TypeVar("T")

#: The session's working directory inside its sandbox (host-side: the session's `work/`).
WORKDIR = "/workspace"
#: The user every sandbox has besides root, as Kernel's VMs do.
USER_NAME = "kernel"
USER_UID = 1000
USER_HOME = "/home/kernel"
#: The users of a sandbox besides root: uid and home.
USERS = {USER_NAME: (USER_UID, USER_HOME), "nobody": (65534, "/nonexistent")}
#: Chromium's profile in a sandbox: the sandbox's own, under its /root.
CHROMIUM_PROFILE = "/root/.config/chromium"
#: `BBROWSE_NO_SANDBOX=1` is `--no-sandbox`.
NO_SANDBOX_ENV = "BBROWSE_NO_SANDBOX"
#: Host directories a sandbox sees read-only (those missing on this host are skipped).
SYSTEM_DIRS = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys",
               # The system's font cache: without it every Chromium start rescans the fonts (seconds).
               "/var/cache/fontconfig")
#: The environment every process of a sandbox starts from (nothing of the service's own).
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: Bound on a sandbox starting (bwrap reporting its pid 1).
START_TIMEOUT_SECONDS = 10.0
#: Worker threads per sandbox for the service's file calls.
FS_THREADS = 4

#: Codecs the file calls may need, looked up now: a sandbox's worker thread cannot import anything (the
#: service's Python is not in the sandbox), and zip names are cp437.
for _codec in ("cp437", "utf-8", "latin-1", "ascii"):
    codecs.lookup(_codec)

_CLONE_FS = 0x200
_CLONE_NEWNS = 0x20000


@dataclass(frozen=True)
class SandboxSupport:
    """Whether sessions are sandboxed on this service, and if not, why (said once at start and in `info`)."""

    enabled: bool
    reason: str = ""
    bwrap: str = ""
    nsenter: str = ""
    unshare: str = ""
    setsid: str = ""
    version: str = ""

    def describe(self) -> str:
        if self.enabled:
            return f"on ({self.version}: own user, mount, PID, IPC and UTS namespaces per session)"
        return f"off: {self.reason}"


def probe(disabled: bool = False) -> SandboxSupport:
    """Can this host make a session's sandbox? Runs one throwaway bwrap (~20 ms) with every namespace used."""
    if disabled:
        return SandboxSupport(False, "--no-sandbox (sessions run on the host as the service's user)")
    tools = {name: shutil.which(name) or "" for name in ("bwrap", "nsenter", "unshare", "setsid")}
    missing = [name for name, found in tools.items() if not found]
    if missing:
        return SandboxSupport(False, f"{' and '.join(missing)} not installed (Debian: bubblewrap, util-linux); "
                                     "sessions run on the host")
    argv = [tools["bwrap"], "--unshare-user", "--uid", "0", "--gid", "0", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--", "true"]
    try:
        result = subprocess.run(argv, capture_output=True, timeout=10, check=False)
        version = subprocess.run([tools["bwrap"], "--version"], capture_output=True, text=True, timeout=10,
                                 check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return SandboxSupport(False, f"bwrap could not run ({exc}); sessions run on the host")
    if result.returncode != 0:
        why = result.stderr.decode(errors="replace").strip().splitlines()
        return SandboxSupport(False, f"this host cannot make namespaces ({why[-1] if why else 'bwrap failed'}); "
                                     "sessions run on the host")
    return SandboxSupport(True, bwrap=tools["bwrap"], nsenter=tools["nsenter"], unshare=tools["unshare"],
                          setsid=tools["setsid"], version=version or "bubblewrap")


def no_sandbox_from_env() -> bool:
    return os.environ.get(NO_SANDBOX_ENV, "").lower() not in ("", "0", "false", "no")


def sandbox_of(session: Any) -> Sandbox | None:
    """The session's sandbox, or None when sessions run on the host."""
    sandbox: Sandbox | None = session.sandbox
    return sandbox


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _passwd(host_group: str) -> tuple[str, str]:
    passwd = (f"root:x:0:0:root:/root:/bin/bash\n"
              f"{USER_NAME}:x:{USER_UID}:{USER_UID}:{USER_NAME}:{USER_HOME}:/bin/bash\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    group = f"root:x:0:\n{USER_NAME}:x:{USER_UID}:\n{host_group}nogroup:x:65534:\n"
    return passwd, group


class Sandbox:
    """One session's sandbox: started by `start`, joined by `command_prefix` and `run`, ended by `stop`.

    User, mount, PID, IPC and UTS namespaces (and network for an `offline` session): the host's system
    directories read-only, its own home, `/root`, `/tmp`, `/var/tmp` and working directory `/workspace`,
    kept host-side under the session's `sandbox/`.
    """

    def __init__(self, support: SandboxSupport, base: Path, workdir: Path, hostname: str, offline: bool) -> None:
        self.support = support
        #: Host-side folder of everything the sandbox writes but `/workspace` (removed with it).
        self.dir = base / "sandbox"
        self.workdir = workdir
        self.hostname = hostname
        self.offline = offline
        self.process: asyncio.subprocess.Process | None = None
        #: Host pid of the sandbox's pid 1 (bwrap's init).
        self.init_pid = 0
        self._mnt_fd = -1
        self._root_fd = -1
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    # start and stop -----------------------------------------------------------------------------------

    def _bwrap_args(self) -> list[str]:
        d = self.dir
        args = ["--unshare-user", "--uid", "0", "--gid", "0", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--hostname", self.hostname]
        if self.offline:
            args.append("--unshare-net")
        for path in SYSTEM_DIRS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += [
            "--ro-bind", str(d / "passwd"), "/etc/passwd", "--ro-bind", str(d / "group"), "/etc/group",
            "--ro-bind", str(d / "hostname"), "/etc/hostname",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/run",
            "--bind", str(d / "tmp"), "/tmp", "--bind", str(d / "var-tmp"), "/var/tmp",
            "--bind", str(d / "root"), "/root", "--bind", str(d / "home"), USER_HOME,
            "--bind", str(self.workdir), WORKDIR, "--chdir", WORKDIR,
        ]
        return args

    def _prepare(self) -> None:
        for sub in ("tmp", "var-tmp", "root", "home"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir / "tmp", 0o1777)
        os.chmod(self.dir / "var-tmp", 0o1777)
        os.chmod(self.dir / "root", 0o700)
        self.workdir.mkdir(parents=True, exist_ok=True)
        passwd, group = _passwd("")
        (self.dir / "passwd").write_text(passwd)
        (self.dir / "group").write_text(group)
        (self.dir / "hostname").write_text(self.hostname + "\n")

    async def start(self) -> None:
        self._prepare()
        # The arguments go through a pipe (`--args`), so no process inside sees the host paths on bwrap's
        # command line (its pid 1 is that bwrap).
        args_r, args_w = os.pipe()
        info_r, info_w = os.pipe()
        os.write(args_w, b"".join(a.encode() + b"\0" for a in self._bwrap_args()))
        os.close(args_w)
        try:
            self.process = await asyncio.create_subprocess_exec(
                self.support.bwrap, "--args", str(args_r), "--info-fd", str(info_w), "--", "sleep", "infinity",
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(args_r, info_w), start_new_session=True,
            )
        finally:
            os.close(args_r)
            os.close(info_w)
        watch_child(self.process.pid)
        try:
            info = await bounded(asyncio.to_thread(_read_json, info_r), START_TIMEOUT_SECONDS)
        except TimeoutError:
            info = {}
        finally:
            os.close(info_r)
        pid = info.get("child-pid") if isinstance(info, dict) else None
        # bwrap names its pid 1 before building the sandbox's filesystem: it is ready once the command runs.
        if not isinstance(pid, int) or not await _command_started(pid):
            why = b""
            if self.process.stderr is not None:
                with contextlib.suppress(TimeoutError):
                    why = await bounded(self.process.stderr.read(2000), 2.0)
            await self.stop()
            raise ServiceError(500, "internal_error",
                               f"the session's sandbox did not start: {why.decode(errors='replace').strip()}")
        self.init_pid = pid
        self._mnt_fd = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        self._root_fd = os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            FS_THREADS, thread_name_prefix=f"sandbox-{pid}", initializer=self.enter_thread)

    async def stop(self) -> None:
        """End every process of the sandbox (SIGKILL to its pid 1) and remove what it wrote."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        for fd in (self._mnt_fd, self._root_fd):
            if fd >= 0:
                os.close(fd)
        self._mnt_fd = self._root_fd = -1
        if self.init_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.init_pid, signal.SIGKILL)
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await self.process.wait()
            self.process = None
        await asyncio.to_thread(shutil.rmtree, self.dir, True)

    def host_path(self, inside: str) -> Path:
        """Where a path under the sandbox's /root is kept on the host (for the service's own files there)."""
        relative = Path(inside).relative_to("/root")
        return self.dir / "root" / relative

    # joining ----------------------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def user_for(self, as_user: str | None, as_root: bool) -> str | None:
        """None for root, or the sandbox user a process runs as (`kernel`, uid 1000: a nested user namespace,
        as only one uid maps into an unprivileged one); 400 for a user the sandbox has not."""
        if as_root or not as_user or as_user in ("root", "0"):
            return None
        for name, (uid, _home) in USERS.items():
            if as_user in (name, str(uid)):
                return name
        raise bad_request(f"no such user {as_user!r} in this session (it has root, {', '.join(USERS)})",
                          field="as_user")

    def command_prefix(self, cwd: str | None = None, user: str | None = None, *, session: bool = False,
                       tty: bool = False) -> list[str]:
        """`nsenter` (and for `kernel`, `unshare`) in front of a command line, to run it inside, in `cwd` (a
        path inside, resolved after entering) or the sandbox's working directory.

        `session`: the command leads a session of its own inside (`setsid`, with the PTY on its stdin as its
        controlling terminal when `tty`): its process group is one the sandbox can see, which a shell's job
        control needs (dash exits 2, "Cannot set tty process group", when its first group is nsenter's)."""
        if not self.init_pid:
            raise ServiceError(503, "internal_error", "the session's sandbox is not running")
        prefix = [self.support.nsenter, "-t", str(self.init_pid), "-U", "-m", "-p", "-i", "-u", "-r"]
        if self.offline:
            prefix.append("-n")
        prefix += ["-W", cwd] if cwd is not None else ["-w"]
        prefix.append("--")
        if session:
            prefix += [self.support.setsid, "--ctty"] if tty else [self.support.setsid]
        if user is not None and user in USERS:
            uid = USERS[user][0]
            prefix += [self.support.unshare, "-U", f"--map-user={uid}", f"--map-group={uid}", "--"]
        return prefix

    def env(self, user: str | None) -> dict[str, str]:
        """A fresh machine's environment: nothing of the service's own (its paths, its token)."""
        name = user or "root"
        home = USERS[user][1] if user is not None else "/root"
        env = {"PATH": PATH, "HOME": home, "USER": name, "LOGNAME": name, "SHELL": "/bin/bash",
               "HOSTNAME": self.hostname}
        for keep in ("LANG", "LC_ALL", "TZ"):
            if keep in os.environ:
                env[keep] = os.environ[keep]
        return env

    # the service's own file calls, inside ------------------------------------------------------------

    def enter_thread(self) -> None:
        """Make the calling thread (one of the service's own, single-use or a worker) see the sandbox's
        filesystem from now on: its own root and working directory, in the sandbox's mount namespace."""
        libc = _libc()
        if libc.unshare(_CLONE_FS) != 0 or libc.setns(self._mnt_fd, _CLONE_NEWNS) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"cannot enter the session's sandbox: {os.strerror(code)}")
        os.fchdir(self._root_fd)
        os.chroot(".")
        os.chdir(WORKDIR)

    def submit(self, func: Callable[..., T], *args: object) -> asyncio.Future[T]:
        """Run a blocking call on a thread that sees the sandbox's filesystem (paths are the inside ones)."""
        if self._executor is None:
            raise ServiceError(410, "session_gone", "the session's sandbox has ended")
        return asyncio.get_running_loop().run_in_executor(self._executor, func, *args)

    def call(self, func: Callable[..., T], *args: object) -> T:
        """`run`, waited for on the calling thread (short calls only: a watch's set-up)."""
        if self._executor is None:
            raise ServiceError(503, "internal_error", "the session's sandbox is not running")
        if threading.current_thread().name.startswith(f"sandbox-{self.init_pid}"):
            return func(*args)
        return self._executor.submit(func, *args).result()


async def _command_started(init_pid: int) -> bool:
    """Wait (bounded) until bwrap's init `init_pid` has a child that exec'd `sleep`: the sandbox is built."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT_SECONDS
    while loop.time() < deadline:
        started = _runs_sleep(init_pid)
        if started is not None:
            return started
        await asyncio.sleep(0.002)
    return False


def _runs_sleep(init_pid: int) -> bool | None:
    """True once a child of `init_pid` runs `sleep`; False if `init_pid` is gone; None meanwhile (/proc reads)."""
    try:
        with open(f"/proc/{init_pid}/task/{init_pid}/children") as f:
            children = f.read().split()
    except OSError:
        return False
    for child in children:
        with contextlib.suppress(OSError), open(f"/proc/{child}/comm") as f:
            if f.read().strip() == "sleep":
                return True
    return None


def _read_json(fd: int) -> Any:
    """bwrap's `--info-fd` JSON (it keeps the descriptor open: read until the object is whole)."""
    data = b""
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
        with contextlib.suppress(ValueError):
            return json.loads(data)
    return json.loads(data) if data else {}


class SandboxManager:
    """Session hooks: a sandbox made at create (before the browser), ended and removed at delete (last)."""

    def __init__(self, support: SandboxSupport) -> None:
        self.support = support

    async def on_create(self, session: Any) -> None:
        if not self.support.enabled:
            return
        offline = bool(getattr(session.request, "offline", False))
        sandbox = Sandbox(self.support, session.workdir.parent, session.workdir,
                          hostname=f"bbrowse-{session.session_id[:8]}", offline=offline)
        await sandbox.start()
        session.sandbox = sandbox

    async def on_delete(self, session: Any) -> None:
        sandbox, session.sandbox = session.sandbox, None
        if sandbox is not None:
            await sandbox.stop()
