"""Helpers for the CLI tests (no tests here): run `bbrowse` as a user would, in a subprocess or a real PTY.

`bb()` runs `python -m bbrowse ...` against the session's real service through KERNEL_BASE_URL /
KERNEL_API_KEY (the remote path), with its own state and config dirs so nothing touches the user's.
`PtyProcess` runs a command on a fresh pseudo-terminal that is its controlling terminal, so raw mode,
window sizes and SIGWINCH are the real thing. `bb_here()` runs a command in this process (same result as
`bb()`, no interpreter start): for tests whose subject is the command's code, not the process.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from pathlib import Path

BBROWSE = [sys.executable, "-m", "bbrowse"]
#: Generous: the CI machine is shared and a CLI start imports httpx and pydantic.
COMMAND_TIMEOUT = 90


def cli_env(service, home: Path | None = None, **extra: str) -> dict[str, str]:
    env = {**os.environ, "KERNEL_BASE_URL": service.url, "KERNEL_API_KEY": service.token, **extra}
    root = home or service.state_dir
    env.setdefault("BBROWSE_STATE_DIR", str(root / "cli-state"))
    env.setdefault("BBROWSE_CONFIG_DIR", str(root / "cli-config"))
    env.pop("BBROWSE_DEBUG", None)
    return env


def bb(service, *args: str, input: bytes | None = None, cwd: Path | None = None, env: dict | None = None,
       timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess[bytes]:
    """Run `bbrowse ARGS...`; stdout and stderr captured as bytes."""
    return subprocess.run([*BBROWSE, *args], input=input if input is not None else b"", capture_output=True,
                          env=env or cli_env(service), cwd=cwd, timeout=timeout)


def bb_here(service, *args: str, input: bytes = b"", env: dict | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """`bb()` in this process: `bbrowse.cli.main` with the same environment, stdin, stdout and stderr on real
    files (commands write to descriptors and ask `isatty`), and the exit status it ends with. What the run
    set process-wide (`--profile`/`--theme`) is put back, for the next test in this process."""
    from bbrowse.cli import main
    from bbrowse.config import Overrides, set_command_line

    with _environment(env or cli_env(service)), _std_files(input) as (stdout, stderr), \
            contextlib.chdir(cwd or os.getcwd()):
        try:
            main.main([*args], prog_name="bbrowse")
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
        finally:
            set_command_line(Overrides())
        sys.stdout.flush()
        sys.stderr.flush()
        out, err = _read_back(stdout), _read_back(stderr)
    return subprocess.CompletedProcess(["bbrowse", *args], code, out, err)


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _std_files(input: bytes) -> Iterator[tuple[io.BufferedRandom, io.BufferedRandom]]:
    files = [tempfile.TemporaryFile() for _ in range(3)]
    files[0].write(input)
    files[0].seek(0)
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = (io.TextIOWrapper(f, encoding="utf-8", write_through=True) for f in files)
    try:
        yield files[1], files[2]
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        for f in files:
            f.close()


def _read_back(file: io.BufferedRandom) -> bytes:
    file.flush()
    file.seek(0)
    return file.read()


def assert_one_line_error(result: subprocess.CompletedProcess[bytes], code: str, status: int | None = None,
                          exit_code: int = 1) -> str:
    """The failure a user sees: one `error: ...` line naming the code, no traceback, the right exit status."""
    err = result.stderr.decode()
    assert result.returncode == exit_code, (result.returncode, err)
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    expected = f"error: {code} ({status}): " if status is not None else f"error: {code}"
    assert lines[0].startswith(expected), lines[0]
    return lines[0]


def set_winsize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _take_controlling_tty() -> None:  # runs in the child, after setsid
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyProcess:
    """A child on a new PTY (its controlling terminal), read with bounded waits."""

    def __init__(self, argv: list[str], env: dict[str, str], rows: int = 24, cols: int = 80) -> None:
        self.master, slave = os.openpty()
        set_winsize(slave, rows, cols)
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True, preexec_fn=_take_controlling_tty)
        os.close(slave)
        self.output = bytearray()
        self.position = 0
        self.closed = False

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.master], [], [], max(timeout, 0))
        if not ready:
            return
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every process on the terminal has gone
            data = b""
        if data:
            self.output += data
        else:
            self.closed = True

    def expect(self, pattern: bytes, timeout: float = 60) -> re.Match[bytes]:
        """Wait for `pattern` in the output not yet consumed; consume up to the end of the match."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            match = regex.search(self.output, self.position)
            if match:
                self.position = match.end()
                return match
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.closed:
                raise AssertionError(f"{pattern!r} not seen; output so far: {bytes(self.output[-3000:])!r}")
            self._read(min(remaining, 1.0))

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def resize(self, rows: int, cols: int) -> None:
        """Like a terminal window resized: the foreground process group gets SIGWINCH."""
        set_winsize(self.master, rows, cols)

    def wait(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while not self.closed and time.monotonic() < deadline:
            self._read(min(deadline - time.monotonic(), 1.0))
        return self.proc.wait(max(deadline - time.monotonic(), 1))

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        os.close(self.master)
