"""Chromium's DevTools pipe reaches fds 3 and 4 of the child whatever the service's other files are doing at
the instant of the spawn.

A spawn that keeps fds 3 and 4 for Chromium (`pass_fds`) needs them open in the service at the fork. They
held the first files the service opened; after its log had rotated, fd 4 went to any file a worker thread
had open for a moment, and one closed by that thread at the instant of the fork failed the spawn with
EBADF (once in 5,050 soak cycles: "Chromium failed to start: [Errno 9] Bad file descriptor"). Now
`bbrowse serve` holds 3 and 4 from its start. The case runs in a fresh interpreter, as the service's
process starts, so the test worker's own descriptors stay untouched.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SPAWN = textwrap.dedent(r"""
    import os, subprocess
    from bbrowse.service import cdp

    getattr(cdp, "reserve_devtools_fds", lambda: None)()  # what `bbrowse serve` does first
    files = [os.open("/dev/null", os.O_RDONLY) for _ in range(2)]  # its log, a file a worker thread reads
    ends = cdp.PipeEnds()

    fork_exec = subprocess._fork_exec
    def fork_while_other_threads_close_their_files(*args):
        for fd in files:
            os.close(fd)
        return fork_exec(*args)
    subprocess._fork_exec = fork_while_other_threads_close_their_files

    script = 'ls /proc/$$/fd | tr "\n" " "; echo; echo pong >&4; read line <&3; echo "got $line"'
    child = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             pass_fds=cdp.PipeEnds.CHILD_FDS, preexec_fn=ends.child_setup)
    ends.close_child_ends()
    os.write(ends.write_fd, b"ping\n")
    print("read:", os.read(ends.read_fd, 100).decode().strip())
    out = child.communicate(timeout=20)[0].decode().splitlines()
    print("fds:", out[0])
    print(out[1])
""")


def test_the_devtools_pipe_reaches_3_and_4_while_the_services_other_files_close() -> None:
    run = subprocess.run([sys.executable, "-c", SPAWN], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = dict(line.split(": ", 1) for line in run.stdout.splitlines() if ": " in line)
    assert lines["read"] == "pong"  # Chromium's side writes fd 4
    assert "got ping" in run.stdout  # and reads fd 3
    assert {3, 4} <= {int(fd) for fd in lines["fds"].split()}
