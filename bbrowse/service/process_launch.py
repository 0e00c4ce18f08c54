"""Starting one child: argv, environment, working directory, user, and its stdio (a PTY or pipes).

Why `subprocess.Popen` and not `asyncio.create_subprocess_exec`: asyncio's default loop calls this
same Popen (the fork/exec costs the same), but here we need exact control of the descriptors — a
PTY slave that becomes the child's controlling terminal, our own non-blocking pipe ends that the
event loop reads with `add_reader` — plus `user`/`group`/`extra_groups` for `as_user`, and exit
notification through a pidfd on the event loop (see `processes.py`), which works the same under
asyncio and uvloop and needs no child-watcher thread. Everything here runs on the event loop and
returns as soon as the child has exec'd (or failed to, which is reported as a 400, not a 500).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pwd
import shutil
import signal
import struct
import subprocess
import termios
import time
from dataclasses import dataclass
from pathlib import Path

from bbrowse.service.errors import bad_request, forbidden
from bbrowse.service.lifetime import die_with_service, watch_child
from bbrowse.service.sandbox import WORKDIR, Sandbox
from bbrowse.wire import ExecRequest

#: `TERM` a PTY-backed process gets unless its request's `env` sets one.
PTY_TERM = "xterm-256color"

#: Variables of the service's own environment a child never inherits (they would leak the token).
PRIVATE_ENV = ("BBROWSE_TOKEN",)

#: Signals every child starts with at their default action. A service started as a script's background
#: job (`bbrowse serve &`) inherits SIGINT and SIGQUIT ignored, and an ignored signal survives exec: ctrl-\
#: in a shell pane and `kill -QUIT` ended nothing (SIGINT escaped only because uvicorn happens to catch it,
#: and a caught signal is reset at exec).
DEFAULT_ACTION_SIGNALS = (signal.SIGINT, signal.SIGQUIT)


@dataclass(frozen=True)
class Identity:
    """Who the child runs as when it is not the service's own user."""

    name: str
    uid: int
    gid: int
    home: str
    groups: tuple[int, ...]

    @classmethod
    def of(cls, pw: pwd.struct_passwd) -> Identity:
        try:
            groups = tuple(os.getgrouplist(pw.pw_name, pw.pw_gid))
        except OSError:
            groups = (pw.pw_gid,)
        return cls(pw.pw_name, pw.pw_uid, pw.pw_gid, pw.pw_dir, groups)


@dataclass
class Child:
    """A started child and the parent's ends of its stdio (all non-blocking, all ours to close)."""

    popen: subprocess.Popen
    tty: bool
    #: PTY master: output is read from it, input written to it. None for pipes.
    master: int | None = None
    stdin: int | None = None
    stdout: int | None = None
    stderr: int | None = None

    #: In a sandbox: the program's own process (host pid), which leads its session there; `popen` is the
    #: `nsenter` that started it and reports its exit. Signals, the guardian and the status go to this one.
    leader: int | None = None

    @property
    def pid(self) -> int:
        return self.leader or self.popen.pid


def _lookup_user(spec: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwuid(int(spec)) if spec.isdigit() else pwd.getpwnam(spec)
    except (KeyError, OverflowError):
        raise bad_request(f"no such user {spec!r} on this machine", field="as_user") from None


def resolve_identity(request: ExecRequest) -> Identity | None:
    """The user to switch to, or None to run as the service's user; 403 when the service may not switch."""
    if request.as_root and request.as_user:
        raise bad_request("give either as_root or as_user, not both", field="as_user")
    euid = os.geteuid()
    if request.as_root:
        if euid != 0:
            raise forbidden(
                f"as_root needs bbrowse serve to run as root; it runs as {_user_name(euid)} (uid {euid})"
            )
        return None
    if not request.as_user:
        return None
    pw = _lookup_user(request.as_user)
    if pw.pw_uid == euid:
        return None
    if euid != 0:
        raise forbidden(
            f"as_user {request.as_user!r} needs bbrowse serve to run as root; "
            f"it runs as {_user_name(euid)} (uid {euid}) and can only run processes as that user"
        )
    return Identity.of(pw)


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def child_env(request: ExecRequest, identity: Identity | None, tty: bool) -> dict[str, str]:
    """The service's environment, plus the target user's HOME/USER/LOGNAME, TERM for a PTY, then `env`."""
    env = dict(os.environ)
    for name in PRIVATE_ENV:
        env.pop(name, None)
    if identity is not None:
        env.update(HOME=identity.home, USER=identity.name, LOGNAME=identity.name)
    if tty:
        env["TERM"] = PTY_TERM
    env.update(request.env)
    return env


def _can_enter(path: str, identity: Identity) -> bool:
    """Whether `identity` may chdir into `path` (search permission on every component; ACLs ignored)."""
    target = Path(path)
    try:
        for part in [*reversed(target.parents), target]:
            st = os.stat(part)
            if identity.uid == st.st_uid:
                bit = 0o100
            elif st.st_gid in identity.groups:
                bit = 0o010
            else:
                bit = 0o001
            if not st.st_mode & bit:
                return False
    except OSError:
        return False
    return True


def resolve_cwd(request: ExecRequest, default: Path, identity: Identity | None = None) -> str:
    """`cwd` as asked, else the session's working directory.

    A process run as another user (`as_user`) that cannot enter the session's directory starts in
    that user's home instead, or in `/`, rather than failing on a directory it was never told about.
    """
    cwd = request.cwd or str(default)
    if request.cwd is None and identity is not None and not _can_enter(cwd, identity):
        cwd = identity.home if os.path.isdir(identity.home) and _can_enter(identity.home, identity) else "/"
    if not os.path.isdir(cwd):
        what = "does not exist" if not os.path.exists(cwd) else "is not a directory"
        raise bad_request(f"working directory {cwd} {what}", field="cwd")
    return cwd


def _set_winsize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def set_winsize(master: int, rows: int, cols: int) -> None:
    """Resize the terminal; the kernel sends SIGWINCH to the terminal's foreground process group."""
    _set_winsize(master, rows, cols)


def _restore_default_signals() -> None:  # pragma: no cover - runs in the child between fork and exec
    for number in DEFAULT_ACTION_SIGNALS:
        signal.signal(number, signal.SIG_DFL)


def _service_ignores_a_signal() -> bool:
    """Whether this service was started with one of `DEFAULT_ACTION_SIGNALS` ignored (read per spawn: cheap)."""
    return any(signal.getsignal(number) == signal.SIG_IGN for number in DEFAULT_ACTION_SIGNALS)


def _take_controlling_tty() -> None:  # pragma: no cover - runs in the child between fork and exec
    # start_new_session already made the child a session leader; fd 0 is the PTY slave.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    _restore_default_signals()
    # A PTY child is forked anyway (this preexec_fn), so it also gets the parent-death signal for free. Pipe
    # children keep the vfork path (cheaper: docs/decisions.md); the guardian (`lifetime.watch_child`, for
    # every child) ends both kinds, and their sessions, when the service dies.
    die_with_service()


def _inside_checks(cwd: str, command: str, path: str) -> tuple[str | None, str | None]:
    """Run in the sandbox (see `Sandbox.call`): what is wrong with `cwd`, and the command's path."""
    if not os.path.isdir(cwd):
        return ("does not exist" if not os.path.exists(cwd) else "is not a directory"), None
    return None, shutil.which(command, path=path) if "/" not in command else (
        command if os.path.isfile(command) and os.access(command, os.X_OK) else None)


def sandboxed_argv(request: ExecRequest, sandbox: Sandbox, tty: bool) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a process run inside the session's sandbox.

    The working directory and the command are checked inside first, so a missing one is the same 400
    as on the host rather than an exit code of `nsenter`."""
    user = sandbox.user_for(request.as_user, request.as_root)
    env = sandbox.env(user)
    if tty:
        env["TERM"] = PTY_TERM
    env.update(request.env)
    cwd = request.cwd or WORKDIR
    problem, found = sandbox.call(_inside_checks, cwd, request.command, env.get("PATH", ""))
    if problem is not None:
        raise bad_request(f"working directory {cwd} {problem}", field="cwd")
    if found is None:
        raise bad_request(
            f"command {request.command!r} not found" + ("" if "/" in request.command else " on PATH"),
            field="command",
        )
    return [*sandbox.command_prefix(cwd, user, session=True, tty=tty), request.command, *request.args], env


async def launch(
    request: ExecRequest, default_cwd: Path, *, tty: bool = False, rows: int = 24, cols: int = 80,
    sandbox: Sandbox | None = None,
) -> Child:
    """Start the child in its own session (so its whole process group can be signalled); with a `sandbox`,
    inside it (`nsenter` leads the session and forks the command into the sandbox's PID namespace; awaited
    until the program leads its own there, the service answering other requests meanwhile)."""
    user_kwargs: dict = {}
    if sandbox is not None:
        argv, env = sandboxed_argv(request, sandbox, tty)
        cwd = "/"
    else:
        identity = resolve_identity(request)
        cwd = resolve_cwd(request, default_cwd, identity)
        env = child_env(request, identity, tty)
        argv = [request.command, *request.args]
        if identity is not None:
            user_kwargs = {"user": identity.uid, "group": identity.gid, "extra_groups": list(identity.groups)}

    parent_fds: list[int] = []
    child_fds: list[int] = []
    try:
        if tty:
            master, slave = os.openpty()
            parent_fds.append(master)
            child_fds.append(slave)
            _set_winsize(master, rows, cols)  # before exec: the program's first look sees the size
            stdio = {"stdin": slave, "stdout": slave, "stderr": slave}
        else:
            in_r, in_w = os.pipe()
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            parent_fds += [in_w, out_r, err_r]
            child_fds += [in_r, out_w, err_w]
            stdio = {"stdin": in_r, "stdout": out_w, "stderr": err_w}
        popen = _popen(argv, request, cwd, env, stdio, tty, user_kwargs, take_tty=sandbox is None)
    except BaseException:
        for fd in parent_fds + child_fds:
            os.close(fd)
        raise
    for fd in child_fds:
        os.close(fd)
    watch_child(popen.pid)
    leader = None
    try:
        if sandbox is not None and (leader := await forked_child(popen.pid, controls_tty=tty)) is not None:
            watch_child(leader)
    except BaseException:  # the request went away meanwhile: nothing is left running that no one knows of
        with contextlib.suppress(OSError):
            forked = _first_child(popen.pid)  # leads a session of its own once setsid has run
            if forked is not None:
                os.killpg(forked, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(popen.pid, signal.SIGKILL)
        for fd in parent_fds:
            os.close(fd)
        raise
    for fd in parent_fds:
        os.set_blocking(fd, False)
    if tty:
        return Child(popen, tty=True, master=parent_fds[0], leader=leader)
    return Child(popen, tty=False, stdin=parent_fds[0], stdout=parent_fds[1], stderr=parent_fds[2], leader=leader)


#: Bound on nsenter forking the program into the sandbox's PID namespace (it takes well under a millisecond).
FORK_WAIT_SECONDS = 2.0
#: /proc/PID/stat states of a process that has ended: zombie, dead.
ENDED_STATES = frozenset({"Z", "X", "x"})


async def forked_child(pid: int, controls_tty: bool = False) -> int | None:
    """The process `pid` (nsenter) forked, once it leads its own session (`setsid` has run: before that a
    signal to its process group reaches nobody) and, with `controls_tty`, holds the PTY as its controlling
    terminal (before that a ctrl-c written to the PTY signals nobody). None if it ended first (the program
    could not start, its exit code says why) or none came in time.

    Nothing reaps `pid` until its process is registered, after this: a `pid` that has ended stays a zombie
    while this waits, so its end is read from its state, not from its disappearance. It waits between looks
    with the event loop free: on a machine short of CPU the fork can take a second or more."""
    deadline = time.monotonic() + FORK_WAIT_SECONDS
    delay = 0.00005
    child: int | None = None
    while time.monotonic() < deadline:
        try:
            if child is None:
                child = _first_child(pid)
                if child is None and _stat_fields(pid)[0] in ENDED_STATES:
                    return None  # nsenter ended, and its child with it
            if child is not None:
                state, session, tty_nr = _stat_fields(child)
                if state in ENDED_STATES or (session == child and (not controls_tty or tty_nr != 0)):
                    return child
        except OSError:
            return child
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.005)
    return child


def _first_child(pid: int) -> int | None:
    with open(f"/proc/{pid}/task/{pid}/children") as f:  # /proc: answered from memory, never blocks
        children = f.read().split()
    return int(children[0]) if children else None


def _stat_fields(pid: int) -> tuple[str, int, int]:
    """State, session id and controlling terminal (0: none) of `pid`, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        state, _ppid, _pgrp, session, tty_nr = f.read().rsplit(b")", 1)[1].split()[:5]
    return state.decode(), int(session), int(tty_nr)


def _pty_child_in_sandbox() -> None:  # pragma: no cover - runs in the child between fork and exec
    # The program takes the PTY as its controlling terminal itself, inside (`setsid --ctty`), not nsenter.
    _restore_default_signals()
    die_with_service()


def _child_setup(tty: bool, take_tty: bool = True):
    """What runs in the child before exec. A pipe child keeps CPython's vfork path (no `preexec_fn`, see
    `_take_controlling_tty`) unless the service has a signal ignored that the child must not inherit."""
    if tty:
        return _take_controlling_tty if take_tty else _pty_child_in_sandbox
    return _restore_default_signals if _service_ignores_a_signal() else None


def _popen(argv, request: ExecRequest, cwd: str, env: dict, stdio: dict, tty: bool, user_kwargs: dict,
           take_tty: bool = True):
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            close_fds=True,
            start_new_session=True,
            preexec_fn=_child_setup(tty, take_tty),
            **stdio,
            **user_kwargs,
        )
    except FileNotFoundError as exc:
        if exc.filename == cwd:
            raise bad_request(f"working directory {cwd} does not exist", field="cwd") from None
        raise bad_request(
            f"command {request.command!r} not found" + ("" if "/" in request.command else " on PATH"),
            field="command",
        ) from None
    except PermissionError as exc:
        if exc.filename == cwd:
            raise bad_request(f"working directory {cwd} is not accessible to the process's user", field="cwd") from None
        message = f"command {request.command!r} is not executable (permission denied)"
        raise bad_request(message, field="command") from None
    except ValueError as exc:  # NUL bytes, '=' in an env name, ...
        field = "env" if "env" in str(exc).lower() else "args"
        raise bad_request(str(exc), field=field) from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise bad_request(f"could not start {request.command!r}: {exc}", field="command") from None

