"""A virtual X display (Xvfb) for one headful session: Chromium draws there, xdotool clicks there."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bbrowse.service.child_process import append_fd, kill_group
from bbrowse.service.errors import browser_unavailable
from bbrowse.service.lifetime import die_with_service
from bbrowse.service.sandbox import Sandbox
from bbrowse.timeouts import bounded

#: Extra screen room under Xvfb, so a window whose viewport is the requested size fits on it.
SCREEN_MARGIN = 256
#: Bound on Xvfb naming its display after launch.
START_TIMEOUT_SECONDS = 20.0


class Xvfb:
    """A virtual X display for one headful session, a little larger than its viewport."""

    def __init__(self, binary: str, width: int, height: int, log_path: Path, sandbox: Sandbox | None = None) -> None:
        self.binary = binary
        #: Where it runs: the session's sandbox (its sockets in the sandbox's /tmp), else the host.
        self.sandbox = sandbox
        self.width = width
        self.height = height
        self.log_path = log_path
        self.process: asyncio.subprocess.Process | None = None
        self.display = ""

    async def start(self) -> str:
        read_fd, write_fd = os.pipe()
        out = append_fd(self.log_path)
        try:
            prefix = self.sandbox.command_prefix() if self.sandbox is not None else []
            env = self.sandbox.env(None) if self.sandbox is not None else None
            self.process = await asyncio.create_subprocess_exec(
                *prefix, self.binary, "-displayfd", str(write_fd), "-screen", "0", f"{self.width}x{self.height}x24",
                "-nolisten", "tcp", "-noreset",
                stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out,
                pass_fds=(write_fd,), start_new_session=True, preexec_fn=die_with_service, env=env,
            )
        finally:
            os.close(out)
            os.close(write_fd)
        try:
            number = await bounded(asyncio.to_thread(_read_line, read_fd), START_TIMEOUT_SECONDS)
        except TimeoutError:
            number = ""
        finally:
            os.close(read_fd)
        if not number.strip().isdigit():
            await self.stop()
            raise browser_unavailable(f"Xvfb did not start (see the xvfb log at {self.log_path})")
        self.display = f":{number.strip()}"
        return self.display

    async def stop(self) -> None:
        if self.process is not None:
            await kill_group(self.process)
            self.process = None


def _read_line(fd: int) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 64)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")
