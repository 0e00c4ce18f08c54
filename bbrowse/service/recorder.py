"""Replays: a session's screen recorded to an H.264 MP4 through CDP screencast and ffmpeg.

Chromium sends a frame only when the page changes, so the recorder feeds the latest frame to ffmpeg on
a steady clock at the replay's `framerate`: the video lasts as long as the recording did. libx264 (mpeg4
without it), yuv420p, `+faststart`; ffmpeg's output is the session's log `recorder`. Replays outlive
their session (`<state dir>/replays/<session id>/`) until retention removes them; never while recording,
finalising, open for a download, or within IN_USE_GRACE_SECONDS of being looked up.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from bbrowse.service.browsers import BrowserManager
from bbrowse.service.cdp import CDPClosedError, CDPError
from bbrowse.service.child_process import append_fd
from bbrowse.service.chromium import ChromiumBrowser
from bbrowse.service.errors import ServiceError, browser_unavailable, conflict, not_found
from bbrowse.service.lifetime import watch_child
from bbrowse.service.sessions import Session, utcnow
from bbrowse.service.supervisor import SupervisorLog
from bbrowse.timeouts import bounded
from bbrowse.wire import ReplayStartRequest

log = logging.getLogger("bbrowse.recorder")

#: Frame rate when the request names none, and the most this machine is asked to encode.
DEFAULT_FRAMERATE = 15
MAX_LOCAL_FRAMERATE = 30
#: How long `stop` waits for ffmpeg to finish the file before answering (download then says 202).
STOP_WAITS_FOR_FILE_SECONDS = 10.0
#: Bound on ffmpeg finishing after its input ended; past it the replay is marked failed.
FINALISE_TIMEOUT_SECONDS = 120.0
#: Most frames written in one go when the clock ran ahead of ffmpeg (two seconds' worth).
MAX_CATCH_UP_SECONDS = 2
JPEG_QUALITY = 80
#: A replay looked up (listed, downloaded, viewed) this recently counts as in use for retention.
IN_USE_GRACE_SECONDS = 300.0
FFMPEG_INSTALL_HINT = "install ffmpeg (e.g. `sudo apt-get install ffmpeg`)"


class ReplayState(StrEnum):
    """Recording, then finalising (ffmpeg writing the index), then ready or failed; a download before it
    is ready answers 202 with `Retry-After`. `max_duration_in_seconds`, the session ending and Chromium
    dying all stop a recording the same way, keeping what was recorded."""

    RECORDING = "recording"
    FINALISING = "finalising"
    READY = "ready"
    FAILED = "failed"


@dataclass
class ReplayRecord:
    replay_id: str
    session_id: str
    path: Path
    framerate: int
    started_at: datetime = field(default_factory=utcnow)
    finished_at: datetime | None = None
    state: ReplayState = ReplayState.RECORDING
    error: str | None = None
    frames: int = 0
    finalised: asyncio.Event = field(default_factory=asyncio.Event)


@cache
def h264_encoder(ffmpeg: str) -> str:
    """`libx264` when this ffmpeg has it, else `mpeg4` (every ffmpeg build has that one)."""
    try:
        out = subprocess.run([ffmpeg, "-hide_banner", "-encoders"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "mpeg4"
    return "libx264" if b" libx264 " in out.stdout else "mpeg4"


def ffmpeg_args(encoder: str, framerate: int, width: int, height: int, output: Path) -> list[str]:
    codec = (
        ["-c:v", "libx264", "-preset", "veryfast", "-crf", "23"] if encoder == "libx264"
        else ["-c:v", "mpeg4", "-q:v", "4"]
    )
    return [
        "-hide_banner", "-nostats", "-loglevel", "warning", "-y",
        "-f", "image2pipe", "-c:v", "mjpeg", "-framerate", str(framerate), "-i", "pipe:0",
        "-vf", f"scale={width}:{height},format=yuv420p",
        *codec,
        "-r", str(framerate), "-movflags", "+faststart", "-f", "mp4", str(output),
    ]


class Recording:
    """One running recording: screencast frames in, a steady stream of JPEGs into ffmpeg out."""

    def __init__(self, record: ReplayRecord, browser: ChromiumBrowser, ffmpeg: str, log_path: Path,
                 max_duration: int | None) -> None:
        self.record = record
        self.browser = browser
        self.ffmpeg = ffmpeg
        self.log = SupervisorLog(log_path)
        self.max_duration = max_duration
        self.process: asyncio.subprocess.Process | None = None
        self.latest: bytes = b""
        self._partial = record.path.with_suffix(".partial.mp4")
        self._stopping = asyncio.Event()
        self._stopped = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._unsubscribe = lambda: None
        self._page_session = ""
        self._finaliser: asyncio.Task[None] | None = None
        #: Called once when the recording stops, whatever stopped it (frees the session for the next one).
        self.on_stopped: Callable[[], None] = lambda: None

    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            await self._abort()
            raise

    async def _start(self) -> None:
        cdp, page = await self.browser.ready()
        self._page_session = page.session_id
        viewport = self.browser.session.viewport
        width, height = max(2, viewport.width // 2 * 2), max(2, viewport.height // 2 * 2)
        encoder = await asyncio.to_thread(h264_encoder, self.ffmpeg)
        args = ffmpeg_args(encoder, self.record.framerate, width, height, self._partial)
        self.record.path.parent.mkdir(parents=True, exist_ok=True)
        self.log.note(f"replay {self.record.replay_id}: recording at {self.record.framerate} fps, "
                      f"{width}x{height}, {encoder}")
        out = append_fd(self.log_path)
        try:
            self.process = await asyncio.create_subprocess_exec(
                self.ffmpeg, *args, stdin=asyncio.subprocess.PIPE, stdout=out, stderr=out, start_new_session=True,
            )
            watch_child(self.process.pid)  # ends with the service even if that dies mid-recording
        finally:
            os.close(out)
        # The first frame comes from a screenshot: a still page may send no screencast frame at all.
        seed = await self.browser.call("Page.captureScreenshot", {"format": "jpeg", "quality": JPEG_QUALITY})
        self.latest = base64.b64decode(seed["data"])
        self._unsubscribe = cdp.on("Page.screencastFrame", self._on_frame)
        await self.browser.call("Page.startScreencast", {
            "format": "jpeg", "quality": JPEG_QUALITY, "maxWidth": viewport.width, "maxHeight": viewport.height,
            "everyNthFrame": 1,
        })
        self._spawn(self._feed())
        self._spawn(self._stop_when_browser_goes(cdp))
        if self.max_duration:
            self._spawn(self._stop_after(self.max_duration))

    @property
    def log_path(self) -> Path:
        return self.browser.session.supervisor_log("recorder")

    def _on_frame(self, params: dict[str, Any], session_id: str | None) -> None:
        if session_id != self._page_session or self._stopped:
            return
        self.latest = base64.b64decode(params["data"])
        cdp = self.browser.cdp
        if cdp is not None and not cdp.closed:
            ack = cdp.send("Page.screencastFrameAck", {"sessionId": params["sessionId"]}, session_id=session_id)
            self._spawn(_quietly(ack))

    async def _feed(self) -> None:
        """Write the latest frame at a steady `framerate`, catching up (boundedly) if ffmpeg lagged."""
        assert self.process is not None and self.process.stdin is not None
        stdin = self.process.stdin
        fps = self.record.framerate
        loop = asyncio.get_running_loop()
        start = loop.time()
        try:
            while not self._stopping.is_set():
                due = int((loop.time() - start) * fps) + 1
                for _ in range(min(due - self.record.frames, fps * MAX_CATCH_UP_SECONDS)):
                    stdin.write(self.latest)
                    self.record.frames += 1
                await stdin.drain()
                next_at = start + self.record.frames / fps
                with contextlib.suppress(TimeoutError):
                    await bounded(self._stopping.wait(), max(0.0, next_at - loop.time()))
        except (BrokenPipeError, ConnectionResetError):
            self.log.note(f"replay {self.record.replay_id}: ffmpeg stopped reading its input")
            self._spawn(self.stop("ffmpeg stopped reading"))

    async def _stop_after(self, seconds: int) -> None:
        await asyncio.sleep(seconds)
        await self.stop(f"max_duration_in_seconds ({seconds}s) reached")

    async def _stop_when_browser_goes(self, cdp) -> None:
        await cdp.wait_closed()
        await self.stop("the browser went away")

    async def stop(self, reason: str) -> None:
        """End the recording (idempotent) and start finalising the file; returns once ffmpeg has its input."""
        if self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        self.on_stopped()
        self.record.finished_at = utcnow()
        self.record.state = ReplayState.FINALISING
        self._unsubscribe()
        if self.browser.cdp is not None and not self.browser.cdp.closed:
            with contextlib.suppress(CDPError, CDPClosedError, ServiceError, TimeoutError):
                await self.browser.cdp.send("Page.stopScreencast", session_id=self._page_session, timeout=2)
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()
        self.log.note(f"replay {self.record.replay_id}: stopped ({reason}) after {self.record.frames} frames; "
                      "finalising")
        self._finaliser = asyncio.create_task(self._finalise(), name=f"finalise {self.record.replay_id}")

    async def _finalise(self) -> None:
        record = self.record
        try:
            if self.process is None:
                raise RuntimeError("ffmpeg never started")
            if self.process.stdin is not None:
                with contextlib.suppress(OSError):
                    self.process.stdin.close()
            try:
                code = await bounded(self.process.wait(), FINALISE_TIMEOUT_SECONDS)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
                raise RuntimeError(f"ffmpeg did not finish within {FINALISE_TIMEOUT_SECONDS:.0f}s") from None
            if code != 0 or not self._partial.exists() or self._partial.stat().st_size == 0:
                raise RuntimeError(f"ffmpeg exited with code {code}; see the supervised log `recorder`")
            self._partial.replace(record.path)
            record.state = ReplayState.READY
            self.log.note(f"replay {record.replay_id}: ready, {record.path.stat().st_size} bytes at {record.path}")
        except Exception as exc:
            record.state = ReplayState.FAILED
            record.error = str(exc)
            self.log.note(f"replay {record.replay_id}: failed: {exc}")
            with contextlib.suppress(OSError):
                self._partial.unlink()
        finally:
            record.finalised.set()
            self.log.close()

    async def _abort(self) -> None:
        """Start failed: undo everything, keep nothing."""
        self._stopped = True
        self._stopping.set()
        self._unsubscribe()
        for task in list(self._tasks):
            task.cancel()
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        with contextlib.suppress(OSError):
            self._partial.unlink()
        self.log.close()

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _quietly(awaitable) -> None:
    with contextlib.suppress(CDPError, CDPClosedError, TimeoutError):
        await awaitable


class ReplayManager:
    """Every replay the service made, by session; at most one recording per session at a time."""

    def __init__(self, root: Path, browsers: BrowserManager) -> None:
        self.root = root
        self.browsers = browsers
        self.ffmpeg = shutil.which("ffmpeg")
        self._replays: dict[str, dict[str, ReplayRecord]] = {}
        self._active: dict[str, Recording] = {}
        #: When each session's replays were last looked up (`clock`, Unix seconds), for `in_use`.
        self._looked_up: dict[str, float] = {}
        #: Retention's clock (set where the service is assembled, so a test that moves it moves this grace too).
        self.clock: Callable[[], float] = time.time

    def list(self, session: Session) -> list[ReplayRecord]:
        self._looked_up[session.session_id] = self.clock()
        return sorted(self._replays.get(session.session_id, {}).values(), key=lambda r: r.started_at)

    def get(self, session: Session, replay_id: str) -> ReplayRecord:
        record = self._replays.get(session.session_id, {}).get(replay_id)
        if record is None:
            raise not_found(f"replay {replay_id!r} not found in browser session {session.session_id}")
        self._looked_up[session.session_id] = self.clock()
        return record

    def find(self, replay_id: str) -> ReplayRecord | None:
        for session_id, replays in self._replays.items():
            if replay_id in replays:
                self._looked_up[session_id] = self.clock()
                return replays[replay_id]
        return None

    def in_use(self, session_id: str) -> bool:
        """Whether retention must leave this session's replays alone now: recording, finalising or just looked up.

        Safe to call from retention's worker thread (it only reads).
        """
        if session_id in self._active:
            return True
        looked_up = self._looked_up.get(session_id)
        if looked_up is not None and self.clock() - looked_up < IN_USE_GRACE_SECONDS:
            return True
        replays = self._replays.get(session_id, {})
        return any(r.state in (ReplayState.RECORDING, ReplayState.FINALISING) for r in list(replays.values()))

    def forget_session(self, session_id: str) -> None:
        """Retention removed the session's replay files: drop what memory still holds of them."""
        self._replays.pop(session_id, None)
        self._looked_up.pop(session_id, None)

    async def start(self, session: Session, request: ReplayStartRequest) -> ReplayRecord:
        browser = self.browsers.browser(session)
        if browser.binary is None:
            raise browser_unavailable(browser.missing_message())
        if self.ffmpeg is None:
            raise browser_unavailable(f"replays need ffmpeg, which is not installed: {FFMPEG_INSTALL_HINT}")
        running = self._active.get(session.session_id)
        if running is not None:
            raise conflict(f"replay {running.record.replay_id} is already recording in this session; stop it first")
        replay_id = str(uuid.uuid4())
        framerate = min(request.framerate or DEFAULT_FRAMERATE, MAX_LOCAL_FRAMERATE)
        record = ReplayRecord(
            replay_id=replay_id, session_id=session.session_id,
            path=self.root / session.session_id / f"{replay_id}.mp4", framerate=framerate,
        )
        recording = Recording(record, browser, self.ffmpeg, session.supervisor_log("recorder"),
                              request.max_duration_in_seconds)
        self._active[session.session_id] = recording  # reserve before awaiting: a concurrent start gets 409
        recording.on_stopped = lambda: self._forget(session.session_id, recording)
        try:
            await recording.start()
        except BaseException:
            self._forget(session.session_id, recording)
            raise
        self._replays.setdefault(session.session_id, {})[replay_id] = record
        log.info("session %s: replay %s started at %s fps", session.session_id, replay_id, framerate)
        return record

    def _forget(self, session_id: str, recording: Recording) -> None:
        if self._active.get(session_id) is recording:
            del self._active[session_id]

    async def stop(self, session: Session, replay_id: str, reason: str = "stop requested",
                   wait: float = STOP_WAITS_FOR_FILE_SECONDS) -> ReplayRecord:
        record = self.get(session, replay_id)
        recording = self._active.get(session.session_id)
        if recording is not None and recording.record is record:
            await recording.stop(reason)
        with contextlib.suppress(TimeoutError):
            await bounded(record.finalised.wait(), wait)
        return record

    async def on_delete(self, session: Session) -> None:
        recording = self._active.get(session.session_id)
        if recording is not None:
            await self.stop(session, recording.record.replay_id, reason="session ended",
                            wait=FINALISE_TIMEOUT_SECONDS)
