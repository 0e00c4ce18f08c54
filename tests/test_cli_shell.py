"""`bbrowse shell` in a real PTY (raw mode, window size, ctrl-c, `~.`, exit status) and through pipes."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest
from cli_support import BBROWSE, PtyProcess, assert_one_line_error, bb, bb_here, cli_env
from conftest import session_area

#: Output of `stty size` on its own line: "ROWS COLS".
SIZE_LINE = rb"[\r\n](\d+) (\d+)\r\n"


def line(pattern: bytes) -> bytes:
    """A whole output line (bash may put a bracketed-paste escape and a bare CR before it)."""
    return rb"[\r\n]" + pattern + rb"\r\n"


def shell_in_pty(service, session_id: str, *, after: str = "", rows: int = 24, cols: int = 80,
                 command: tuple[str, ...] = ()) -> PtyProcess:
    """`bbrowse shell SID [-- COMMAND]` run by `sh` on a PTY, then `echo rc=$?` and `after` on the same terminal."""
    bbrowse = " ".join(shlex.quote(part) for part in BBROWSE)
    remote = (" -- " + " ".join(shlex.quote(part) for part in command)) if command else ""
    script = f'{bbrowse} shell {shlex.quote(session_id)}{remote}; echo "rc=$?"; {after}'
    return PtyProcess(["sh", "-c", script], cli_env(service), rows=rows, cols=cols)


def ready(term: PtyProcess, timeout: float = 60) -> None:
    """Wait until the remote shell runs what is typed, by what it prints, never by its prompt.

    A prompt holds the user, the host name and the working directory, so its width (and where bash
    wraps it) depends on the machine; `$((6*7))` is expanded by the shell only, so the typed line
    (echoed back) does not match, the output does.
    """
    term.send(b'echo "ready$((6*7))"\r')
    term.expect(line(rb"ready42"), timeout=timeout)


def stty_size(term: PtyProcess) -> tuple[int, int]:
    term.send(b"stty size\r")
    match = term.expect(SIZE_LINE)
    return int(match.group(1)), int(match.group(2))


@pytest.fixture
def session_id(browserless_module_session_id: str) -> str:
    """The module's session, on the service with no Chromium (a shell needs no browser): its tests leave
    nothing another sees."""
    return browserless_module_session_id


@pytest.fixture
def own_session_id(browserless_service) -> Iterator[str]:
    with httpx.Client(base_url=browserless_service.url, headers=browserless_service.headers, timeout=60) as http:
        r = http.post("/browsers", json={"timeout_seconds": 600})
        assert r.status_code == 200, r.text
        yield r.json()["session_id"]
        http.delete(f"/browsers/{r.json()['session_id']}")


def test_interactive_shell_size_resize_ctrl_c_exit_code_and_terminal_restored(browserless_service, session_id):
    term = shell_in_pty(browserless_service, session_id, after="stty -a", rows=30, cols=100)
    try:
        ready(term)

        assert stty_size(term) == (30, 100)

        term.resize(40, 120)
        for _ in range(30):  # the new size travels: SIGWINCH -> bbrowse -> resize -> remote PTY
            if stty_size(term) == (40, 120):
                break
        else:
            raise AssertionError("the remote terminal never got the new window size")

        started = time.monotonic()
        # The line printed by the very process ctrl-c must stop, already in the foreground with SIGINT's default
        # action: a ctrl-c that reaches bash's forked child before it execs `sleep` (bash's own handler still in
        # place) is lost, and the sleep runs its 100 s (seen once in CI).
        term.send(b"sh -c 'echo sleeping-now; exec sleep 100'\r")
        term.expect(line(rb"sleeping-now"))
        term.send(b"\x03")
        # Ask for the status until the shell answers: a line typed while ctrl-c is still being handled may be
        # flushed with the interrupted input (ctrl-u clears a partial one). The first answer is the sleep's.
        for _ in range(10):
            term.send(b'\x15echo "status:$?"\r')
            try:
                status = term.expect(line(rb"status:(\d+)"), timeout=5)
                break
            except AssertionError:
                continue
        else:
            raise AssertionError("the shell never came back after ctrl-c")
        assert status.group(1) == b"130"
        assert time.monotonic() - started < 60

        term.send(b"exit 3\r")
        term.expect(rb"rc=3\r\n")
        assert term.wait() == 0
        settings = term.output[term.position:].decode(errors="replace").split()  # `stty -a` after bbrowse
        assert "speed" in settings, settings
        assert "icanon" in settings and "-icanon" not in settings, settings
        assert "echo" in settings and "-echo" not in settings, settings
    finally:
        term.close()


def test_tilde_dot_after_newline_disconnects_with_255(browserless_service, session_id):
    term = shell_in_pty(browserless_service, session_id)
    try:
        ready(term)
        term.send(b"echo before-escape\r")
        term.expect(line(rb"before-escape"))
        ready(term)
        term.send(b"~.")
        term.expect(rb"Connection to session .* closed\.")
        term.expect(rb"rc=255\r\n")
        assert term.wait() == 0
    finally:
        term.close()


def test_tilde_inside_a_line_is_sent_as_typed(browserless_service, session_id):
    term = shell_in_pty(browserless_service, session_id)
    try:
        ready(term)
        term.send(b"echo a~.b ~~x\r")
        term.expect(line(rb"a~\.b ~~x"))
        ready(term)
        term.send(b"~~X")  # `~~` at the start of a line sends one `~`: the remote line editor echoes "~X"
        term.expect(rb"(?<!~)~X")
        # ctrl-u drops the line (bash's readline can miss a ctrl-c that lands within ms of the echo)
        term.send(b"\x15")
        ready(term)
        term.send(b"exit\r")
        term.expect(rb"rc=\d+\r\n")
    finally:
        term.close()


def test_piped_stdin_runs_the_default_shell(browserless_service, session_id):
    created = bb_here(browserless_service, "exec", session_id, "--", "sh", "-c", "echo hi > piped-marker.txt")
    assert created.returncode == 0, created.stderr
    result = bb_here(browserless_service, "shell", session_id, input=b"ls\n")
    assert result.returncode == 0, result.stderr
    assert b"piped-marker.txt" in result.stdout.splitlines()


def test_pipe_mode_exit_status_and_separate_streams(browserless_service, session_id):
    result = bb_here(browserless_service, "shell", session_id, input=b"echo to-out; echo to-err >&2; exit 7\n")
    assert result.returncode == 7
    assert result.stdout == b"to-out\n"
    assert result.stderr == b"to-err\n"


def test_pipe_mode_is_binary_safe_and_ends_input(browserless_service, session_id):
    data = os.urandom(600_000) + b"\x00\x03\x04\n0\n~.\n"
    result = bb_here(browserless_service, "shell", session_id, "--", "sha256sum", input=data)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0].decode() == hashlib.sha256(data).hexdigest()


def test_pipe_mode_ends_when_the_program_exits_even_if_input_stays_open(browserless_service, session_id):
    proc = subprocess.Popen([*BBROWSE, "shell", session_id, "--", "sh", "-c", "echo done; exit 4"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=cli_env(browserless_service))
    try:
        assert proc.wait(60) == 4  # stdin is still open: nothing was written to it, nor closed
        assert proc.stdout.read() == b"done\n"
    finally:
        proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_shell_unknown_session_is_one_line_not_found(browserless_service):
    assert_one_line_error(bb_here(browserless_service, "shell", "no-such-session", input=b"ls\n"), "not_found", 404)


def test_shell_unknown_command_exits_127_in_pipe_mode(browserless_service, session_id):
    result = bb_here(browserless_service, "shell", session_id, "--", "no-such-program-xyz", input=b"")
    assert result.returncode == 127
    assert b"not found" in result.stderr


def _bbrowse_child(term: PtyProcess) -> int:
    """The pid of `bbrowse shell`, the child of the `sh` running on the PTY."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = subprocess.run(["pgrep", "-P", str(term.proc.pid)], capture_output=True).stdout.split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError("bbrowse shell did not start")


def test_sigterm_restores_the_terminal_and_hangs_up(browserless_service, session_id):
    term = shell_in_pty(browserless_service, session_id, after="stty -a")
    try:
        ready(term)
        term.send(b"echo $$\r")
        remote_shell = int(term.expect(line(rb"(\d+)")).group(1))
        # The pid is the session's (its own PID namespace in the sandbox): looked up there, not in this /proc.
        shell_alive = ("exec", session_id, "--", "test", "-e", f"/proc/{remote_shell}")
        assert bb_here(browserless_service, *shell_alive).returncode == 0
        os.kill(_bbrowse_child(term), signal.SIGTERM)
        term.expect(rb"rc=143\r\n")
        assert term.wait() == 0
        settings = term.output[term.position:].decode(errors="replace").split()
        assert "icanon" in settings and "-icanon" not in settings, settings
        deadline = time.monotonic() + 30
        while (alive := bb_here(browserless_service, *shell_alive).returncode) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)  # hung up, not left behind
        assert alive == 1
    finally:
        term.close()


def test_session_deleted_under_the_shell_ends_it_and_restores_the_terminal(browserless_service, own_session_id):
    term = shell_in_pty(browserless_service, own_session_id, after="stty -a")
    try:
        ready(term)
        assert bb(browserless_service, "rm", own_session_id).returncode == 0
        match = term.expect(rb"rc=(\d+)\r\n")
        assert int(match.group(1)) != 0
        assert term.wait() == 0
        settings = term.output[term.position:].decode(errors="replace").split()
        assert "icanon" in settings and "-icanon" not in settings, settings
    finally:
        term.close()


#: A shell with a fixed prompt, so nothing depends on the host, the user or the temp path.
PROMPT_SHELL = ("env", "PS1=PROMPT> ", "bash", "--norc", "--noprofile", "-i")


@pytest.fixture(scope="module")
def compat_session(browserless_compat_service):
    """A session on --kernel-compat without Chromium: a shell needs no browser."""
    created = bb(browserless_compat_service, "new", "--json", "--timeout", "900")
    assert created.returncode == 0, created.stderr
    sid = json.loads(created.stdout)["session_id"]
    yield sid
    bb(browserless_compat_service, "rm", sid)


def drop_cli_connections(service, term: PtyProcess) -> None:
    """The service drops every connection `bbrowse shell` has to it (attach and HTTP alike)."""
    from socket_drop import DropUnsupportedError, client_connections, drop_connections

    try:
        assert drop_connections(service.pid, client_connections(_bbrowse_child(term))) >= 1
    except DropUnsupportedError as exc:
        pytest.skip(f"cannot drop the service's socket here: {exc}")


#: A line exactly as wide as the terminal the editor test ends with (120 columns): drawn on one row only
#: at that width, so its bytes tell the nudged width's repaint (119) from the real width's.
WIDE_LINE = "W" * 119 + "Z\n"
WIDE_LINE_DRAWN_WHOLE = rb"W{119}Z\r\n"


@pytest.mark.parametrize("editor", ["vim", "less"])
def test_against_kernel_compat_output_resize_editor_reattach_and_exit_code(browserless_compat_service, compat_session,
                                                                           editor):
    """Kernel's VM gives a PTY's output only over attach: all of it must come that way, survive the
    service dropping the connection (the editor repaints), and end with the remote exit status."""
    if shutil.which(editor) is None:
        pytest.skip(f"{editor} is not installed")
    # the sandbox sees no tmp_path
    page = session_area(browserless_compat_service, compat_session, f"page-{editor}") / "page.txt"
    page.write_text(WIDE_LINE + "".join(f"page line {i}\n" for i in range(200)))
    term = shell_in_pty(browserless_compat_service, compat_session, rows=30, cols=100, command=PROMPT_SHELL)
    try:
        term.expect(rb"PROMPT> ")
        ready(term)
        assert stty_size(term) == (30, 100)
        term.resize(40, 120)
        for _ in range(30):
            if stty_size(term) == (40, 120):
                break
        else:
            raise AssertionError("the remote terminal never got the new window size")

        term.send((f"vim -u NONE -N -n {page}\r" if editor == "vim" else f"less {page}\r").encode())
        term.expect(rb"page line 0")
        term.expect(rb"page line 30")  # the whole first screen is drawn

        drop_cli_connections(browserless_compat_service, term)
        # Drawn again: the size nudge after the reattach (one column less, then the real size back).
        if editor == "vim":
            term.expect(rb"page line 0", timeout=30)
        else:
            # less 590 drops a key that comes while it repaints (measured with less alone on a PTY: `q`
            # right after a size change, 99 of 100 lost; 10 ms later, 0 of 30), so type as a person
            # would: once the page is drawn at the real width again (the wide line whole on one row)
            # and less shows its prompt.
            term.expect(WIDE_LINE_DRAWN_WHOLE + rb"page line 0", timeout=30)
            term.expect(rb"\r\n:\x1b\[K", timeout=30)

        if editor == "vim":
            term.send(b"iedited-after-drop \x1b:wq\r")
        else:
            term.send(b"q")
        term.expect(rb"PROMPT> ")  # the editor has gone (keys typed before would be its typeahead)
        ready(term)
        term.send(b"exit 5\r")
        term.expect(rb"rc=5\r\n")
        assert term.wait() == 0
    finally:
        term.close()
    if editor == "vim":
        assert page.read_text().startswith("edited-after-drop " + WIDE_LINE + "page line 0\n")


def test_against_kernel_compat_a_signal_ends_the_shell_with_a_failure(browserless_compat_service, compat_session):
    """Kernel reports -1 for a process ended by a signal; bbrowse exits 1 (the signal is not known)."""
    term = shell_in_pty(browserless_compat_service, compat_session, command=PROMPT_SHELL)
    try:
        term.expect(rb"PROMPT> ")
        ready(term)
        term.send(b"kill -9 $$\r")
        term.expect(rb"rc=1\r\n")
    finally:
        term.close()


def test_against_kernel_compat_pipe_mode_keeps_its_streams(browserless_compat_service, compat_session):
    """No PTY in pipe mode: stdout/stream carries the output there, under Kernel's rules too."""
    result = bb(browserless_compat_service, "shell", compat_session, input=b"echo to-out; echo to-err >&2; exit 7\n")
    assert (result.returncode, result.stdout, result.stderr) == (7, b"to-out\n", b"to-err\n")
