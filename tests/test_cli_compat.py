"""The commands against `bbrowse serve --kernel-compat` (Kernel's VM where a client must cope): `bbrowse shell`
through a real PTY and through a pipe, `bbrowse ls` on an empty directory and a symlink, `bbrowse logs
--no-follow` where a `follow=false` stream never ends, keys and resizes refused after the exit, `bbrowse logs
--follow` keeping a session alive where a log stream is no activity (that one with a Chromium: its CDP keeps the
session; the others need none)."""

from __future__ import annotations

import contextlib
import json
import select
import shlex
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from cli_support import BBROWSE, PtyProcess, bb, bb_here, cli_env
from conftest import start_service, stop_service

PROMPT_SHELL = ("env", "PS1=PROMPT> ", "bash", "--norc", "--noprofile", "-i")


@pytest.fixture(scope="module")
def compat_sid(browserless_compat_service):
    created = bb(browserless_compat_service, "new", "--json", "--timeout", "600")
    assert created.returncode == 0, created.stderr
    sid = json.loads(created.stdout)["session_id"]
    yield sid
    bb(browserless_compat_service, "rm", sid)


def test_shell_exit_code_within_two_seconds_with_no_exit_frame(browserless_compat_service, compat_sid):
    """Compat ends an attach with no exit frame and no close (as Kernel's VM can): bbrowse shell still
    exits with the remote status, at once."""
    bbrowse = " ".join(shlex.quote(part) for part in BBROWSE)
    remote = " ".join(shlex.quote(part) for part in PROMPT_SHELL)
    term = PtyProcess(["sh", "-c", f'{bbrowse} shell {compat_sid} -- {remote}; echo "rc=$?"'],
                      cli_env(browserless_compat_service))
    try:
        term.expect(rb"PROMPT> ")
        term.send(b'echo "ready$((6*7))"\r')
        term.expect(rb"ready42\r\n")
        term.expect(rb"PROMPT> ")
        term.send(b"exit 3\r")
        sent = time.monotonic()
        term.expect(rb"rc=3\r\n", timeout=15)
        assert time.monotonic() - sent < 2.0
    finally:
        term.close()


def test_piped_shell_ls_and_logs_no_follow(browserless_compat_service, compat_sid):
    # piped: input fed at once although compat sends the stream's headers only with its first event,
    # and `cat` sees the real end of input
    piped = bb(browserless_compat_service, "shell", compat_sid, "--", "sh", "-c", "cat; echo after-eof",
               input=b"piped-in\n")
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, b"piped-in\nafter-eof\n", b"")

    base = f"/tmp/bbrowse-cli-compat-{time.monotonic_ns()}"
    script = f"mkdir -p {base}/empty && ln -s {base}/empty {base}/link && printf 'one\\n\\nthree\\npart' > {base}/x.log"
    made = bb_here(browserless_compat_service, "exec", compat_sid, "--", "sh", "-c", script)
    assert made.returncode == 0, made.stderr
    empty = bb_here(browserless_compat_service, "ls", compat_sid, f"{base}/empty")  # compat answers null
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, b"", b"")
    listed = bb_here(browserless_compat_service, "ls", compat_sid, base, "-l")
    rows = {line.split()[-1]: line.split()[0] for line in listed.stdout.decode().splitlines()}
    assert set(rows) == {"empty/", "link@", "x.log"}, listed.stdout  # the link lstat'd, shown as one
    assert rows["link@"] == "lrwxrwxrwx" and rows["empty/"][0] == "d", rows  # Go's L... and d... as ls has them

    logs = bb_here(browserless_compat_service, "logs", compat_sid, "--path", f"{base}/x.log", "--no-follow")
    assert (logs.returncode, logs.stdout) == (0, b"one\n\nthree\npart\n"), logs.stderr


def test_shell_input_and_resizes_refused_after_the_exit_show_the_exit_not_an_error(browserless_compat_service,
                                                                                   compat_sid):
    """Compat answers `stdin` and `resize` with 500 once the program is gone (as Kernel): keys typed and
    resizes made while bbrowse shell has not yet seen the exit end in the exit code, with no error line."""
    bbrowse = " ".join(shlex.quote(part) for part in BBROWSE)
    remote = " ".join(shlex.quote(part) for part in PROMPT_SHELL)
    term = PtyProcess(["sh", "-c", f'{bbrowse} shell {compat_sid} -- {remote}; echo "rc=$?"'],
                      cli_env(browserless_compat_service))
    try:
        term.expect(rb"PROMPT> ")
        term.send(b"exit 3\r")
        start = len(term.output)
        deadline = time.monotonic() + 15
        sizes = [(30, 100), (24, 80)]
        while b"rc=" not in term.output[start:] and not term.closed and time.monotonic() < deadline:
            term.send(b"x")  # past the exit, until bbrowse shell has seen it
            term.resize(*sizes[0])
            sizes.reverse()
            term._read(0.02)
        term.expect(rb"rc=3\r\n", timeout=15)
        after = bytes(term.output[start:])
        assert b"error" not in after.lower() and b"500" not in after, after
    finally:
        term.close()


#: This service's sessions time out after half their timeout_seconds: the 10 s itself is test_sessions.py's
#: subject, not this module's (a fifth was too short for a machine at load 30: the test's own activity calls
#: came more than 2 s apart).
IDLE_SCALE = 0.5


def test_logs_follow_keeps_a_session_alive_past_its_timeout_and_lets_go_after(tmp_path):
    """On compat (as Kernel) a log stream is no activity: `bbrowse logs --follow` holds a CDP connection so
    a session with a 10 s timeout (5 s here) outlives it; once the command ends the timeout applies again."""
    compat_service = start_service(tmp_path / "state", {"BBROWSE_KERNEL_COMPAT": "1",
                                                        "BBROWSE_IDLE_TIMEOUT_SCALE": str(IDLE_SCALE)})
    timeout = 10 * IDLE_SCALE
    with contextlib.ExitStack() as stack:
        stack.callback(stop_service, compat_service)
        http = stack.enter_context(httpx.Client(base_url=compat_service.url, headers=compat_service.headers,
                                                timeout=30))
        sid = http.post("/browsers", json={"timeout_seconds": 10}).json()["session_id"]
        path = f"/tmp/bbrowse-keepalive-{time.monotonic_ns()}.log"

        def write_line() -> None:
            body = {"command": "sh", "args": ["-c", f"echo up >> {path}"]}
            assert http.post(f"/browsers/{sid}/process/exec", json=body).json()["exit_code"] == 0

        write_line()
        # PYTHONFAULTHANDLER: a command that does not end after ctrl-c is asked (SIGABRT) for its threads' stacks.
        # SIGINT as a command in the foreground has it: a suite started in the background by a script (an
        # asynchronous list of a non-interactive shell) hands its children SIGINT ignored.
        follow = subprocess.Popen([*BBROWSE, "logs", sid, "--path", path],
                                  env=cli_env(compat_service, PYTHONFAULTHANDLER="1"),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            # until the command shows a line (it follows, its keep-alive held), the test's own computer
            # calls are the session's activity: a slow start of the command is not what is tested
            deadline = time.monotonic() + 60
            while not select.select([follow.stdout], [], [], 0.2)[0] and time.monotonic() < deadline:
                assert http.post(f"/browsers/{sid}/computer/move_mouse",
                                 json={"x": 1, "y": 1, "smooth": False}).status_code == 200
                write_line()
            assert follow.stdout.readline() == b"up\n"
            time.sleep(1.5 * timeout)  # the thing under test is time itself: past the timeout
            assert follow.poll() is None, follow.communicate()
            assert http.get(f"/browsers/{sid}").status_code == 200
        finally:
            follow.send_signal(signal.SIGINT)
            try:
                follow.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                status = Path(f"/proc/{follow.pid}/status")
                masks = [line for line in status.read_text().splitlines() if line.startswith("Sig")] \
                    if status.exists() else []  # SigIgn, SigCgt: is SIGINT (bit 1) ignored, or caught?
                follow.send_signal(signal.SIGABRT)
                stacks = follow.communicate(timeout=30)[1].decode(errors="replace")
                pytest.fail(f"bbrowse logs --follow did not end within 30 s of ctrl-c; its signals {masks}; "
                            f"where it was:\n{stacks}")
        ended = time.monotonic()
        while http.get(f"/browsers/{sid}").status_code == 200 and time.monotonic() - ended < 30:
            time.sleep(0.1)
        assert http.get(f"/browsers/{sid}").status_code != 200, "the session outlived its timeout after logs ended"


def test_last_the_vm_going_away_is_said(browserless_compat_service, compat_sid):
    """Compat closes attach sockets with 1001 `browser shutting down` when the session's VM goes away
    (here: the session deleted; last in this module, which owns the session)."""
    bbrowse = " ".join(shlex.quote(part) for part in BBROWSE)
    remote = " ".join(shlex.quote(part) for part in PROMPT_SHELL)
    term = PtyProcess(["sh", "-c", f'{bbrowse} shell {compat_sid} -- {remote}; echo "rc=$?"'],
                      cli_env(browserless_compat_service))
    try:
        term.expect(rb"PROMPT> ")
        assert bb(browserless_compat_service, "rm", compat_sid).returncode == 0
        term.expect(rb"the session's VM is going away \(browser shutting down\)", timeout=30)
        term.expect(rb"rc=255\r\n", timeout=15)
    finally:
        term.close()
