"""The Chromium of one session: launch, supervise, relaunch after a crash, close.

Each session has its own Chromium (its own profile directory) started with `--remote-debugging-pipe`:
no TCP port, and the service holds the only door to it, a `cdp.CDPHub` on the pipe; `cdp_proxy`'s
WebSocket clients are further clients of the hub. Its output is the session's log `chromium`; it runs in
its own process group with a parent-death signal. Nothing restarts by itself, so a Chromium that crashes
at once cannot loop (`ChromiumBrowser`). Without a Chromium binary the session still has processes,
files and logs; headful sessions run under their own Xvfb.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bbrowse.service.cdp import CDPClosedError, CDPConnection, CDPError, CDPHub, PipeEnds
from bbrowse.service.child_process import describe_exit, kill_group
from bbrowse.service.chromium_command import chromium_args, missing_chromium_message
from bbrowse.service.chromium_tmpdir import ChromiumTmpdir
from bbrowse.service.errors import ServiceError, browser_unavailable
from bbrowse.service.lifetime import die_with_service
from bbrowse.service.sandbox import CHROMIUM_PROFILE as SANDBOX_PROFILE
from bbrowse.service.sandbox import sandbox_of
from bbrowse.service.sessions import Session
from bbrowse.service.supervisor import SupervisorLog
from bbrowse.service.xvfb import SCREEN_MARGIN, Xvfb
from bbrowse.timeouts import bounded

log = logging.getLogger("bbrowse.browsers")

#: Bound on Chromium answering its first command on the pipe after launch (it takes ~0.3 s).
LAUNCH_TIMEOUT_SECONDS = 20.0
#: How long a closed DevTools pipe waits for Chromium's exit status before its clients are told anyway.
PIPE_END_GRACE_SECONDS = 2.0
#: How long a create waits for `start_url` to load before answering anyway (slow or unreachable sites).
START_URL_LOAD_WAIT_SECONDS = 1.0


@dataclass
class PageTarget:
    """The page the service screenshots and records: a flattened CDP session on one tab."""

    target_id: str
    session_id: str


class ChromiumBrowser:
    """The Chromium of one session and the CDP connection the service keeps to it.

    The service's page session stays open, so a screenshot is one round trip. When Chromium dies the
    reason is logged and the hub's clients are told; the next request that needs the browser answers 503
    `browser_unavailable` with that reason and starts a new one in the background.
    """

    def __init__(self, session: Session, binary: str | None, xvfb_binary: str | None, configured: str | None) -> None:
        self.session = session
        self.binary = binary
        self.configured = configured
        self.xvfb_binary = xvfb_binary
        #: The session's sandbox, where Chromium and Xvfb run (None: on the host).
        self.sandbox = sandbox_of(session)
        # In a sandbox the profile is the sandbox's own (under its /root), and goes with it.
        self.profile_dir = (self.sandbox.host_path(SANDBOX_PROFILE) if self.sandbox is not None
                            else session.workdir.parent / "chromium-profile")
        self.log = SupervisorLog(session.supervisor_log("chromium"))
        self.process: asyncio.subprocess.Process | None = None
        #: This Chromium's own TMPDIR while it runs (`_spawn_and_connect`).
        self._tmpdir: ChromiumTmpdir | None = None
        #: The DevTools pipe of the running Chromium, shared by the service and the CDP proxy's clients.
        self.hub: CDPHub | None = None
        self.cdp: CDPConnection | None = None
        self.page: PageTarget | None = None
        self.xvfb: Xvfb | None = None
        #: Why the browser is not usable (crash, failed launch); reported by the next request.
        self.failure: str | None = None
        self._closing = False
        self._launching: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._page_lock = asyncio.Lock()

    # public -----------------------------------------------------------------

    async def start(self) -> None:
        """Launch for a new session; a failure is remembered and reported by the first browser request."""
        if self.binary is None:
            self.log.note(f"no Chromium: {self.missing_message()}")
            return
        self._launching = asyncio.create_task(self._launch(), name=f"chromium {self.session.session_id}")
        with contextlib.suppress(ServiceError):
            await asyncio.shield(self._launching)

    async def ready(self) -> tuple[CDPConnection, PageTarget]:
        """The live CDP connection and page, or 503 `browser_unavailable` with the reason.

        A browser found dead is reported once with why (exit code or signal) while a new one starts
        in the background, which the next request waits for.
        """
        if self._closing:
            raise browser_unavailable("the browser session is ending")
        if self.binary is None:
            raise browser_unavailable(self.missing_message())
        if self._launching is not None and not self._launching.done():
            await asyncio.shield(self._launching)
        if self._healthy():
            assert self.cdp is not None
            try:
                return self.cdp, await self._page_target()
            except CDPClosedError:
                pass  # went away just now: report it like any other death
            except (CDPError, TimeoutError) as exc:
                raise browser_unavailable(f"Chromium has no usable page: {exc!r}", status=502) from None
        raise await self._unavailable()

    async def devtools(self) -> CDPHub:
        """The live DevTools pipe (for the CDP proxy), or 503 `browser_unavailable` as `ready` says."""
        await self.ready()
        assert self.hub is not None
        return self.hub

    async def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """Send a command to the page; a crash mid-call becomes 503 with the exit reason."""
        cdp, page = await self.ready()
        try:
            return await cdp.send(method, params, session_id=page.session_id, timeout=timeout)
        except CDPClosedError:
            raise await self._unavailable() from None
        except TimeoutError:
            raise browser_unavailable(f"Chromium did not answer {method} within {timeout:.0f}s") from None
        except CDPError as exc:
            if "session" not in exc.error_message.lower() and "target" not in exc.error_message.lower():
                raise browser_unavailable(f"Chromium refused {method}: {exc.error_message}", status=502) from None
        # The tab went away (closed through CDP by a user): pick another one and retry once.
        self.page = None
        cdp, page = await self.ready()
        try:
            return await cdp.send(method, params, session_id=page.session_id, timeout=timeout)
        except (CDPClosedError, CDPError, TimeoutError) as exc:
            raise browser_unavailable(f"Chromium failed {method}: {exc}", status=502) from None

    async def _unavailable(self) -> ServiceError:
        reason = await self._reason_after_disconnect()
        self._relaunch_in_background(reason)
        return browser_unavailable(f"{reason}; a new Chromium is starting, retry in a moment")

    async def screenshot(self, clip: dict[str, int] | None = None) -> bytes:
        # optimizeForSpeed: a faster zlib level, same pixels; the capture and the PNG's decoding both take
        # less (the live view's frame rate hangs on both; figures: docs/decisions.md).
        params: dict[str, Any] = {"format": "png", "optimizeForSpeed": True}
        if clip is not None:
            metrics = await self.call("Page.getLayoutMetrics")
            viewport = metrics.get("cssVisualViewport") or metrics.get("visualViewport") or {}
            params["clip"] = {
                "x": clip["x"] + viewport.get("pageX", 0), "y": clip["y"] + viewport.get("pageY", 0),
                "width": clip["width"], "height": clip["height"], "scale": 1,
            }
        result = await self.call("Page.captureScreenshot", params)
        return base64.b64decode(result["data"])

    async def close(self) -> None:
        """Session teardown: stop Chromium's whole process group and Xvfb, remove the profile."""
        self._closing = True
        if self._launching is not None and not self._launching.done():
            self._launching.cancel()
            with contextlib.suppress(BaseException):
                await self._launching
        await self._stop_processes()
        for task in list(self._tasks):
            task.cancel()
        self.log.note("browser closed (session ended)")
        self.log.close()
        await asyncio.to_thread(shutil.rmtree, self.profile_dir, True)

    def missing_message(self) -> str:
        return missing_chromium_message(self.configured)

    # launch -----------------------------------------------------------------

    def _healthy(self) -> bool:
        return (
            self.process is not None and self.process.returncode is None
            and self.hub is not None and not self.hub.closed
            and self.cdp is not None and not self.cdp.closed
        )

    def _relaunch_in_background(self, reason: str) -> None:
        if self._closing or (self._launching is not None and not self._launching.done()):
            return
        self.log.note(f"starting a new Chromium (previous one: {reason})")
        self._launching = asyncio.create_task(self._launch(), name=f"chromium relaunch {self.session.session_id}")
        self._launching.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _launch(self) -> None:
        started = time.perf_counter()
        await self._stop_processes()
        self.failure = None
        try:
            await self._spawn_and_connect()
        except ServiceError as exc:
            self.failure = exc.message
            self.log.note(f"Chromium failed to start: {exc.message}")
            await self._stop_processes()
            raise
        except (OSError, ValueError, CDPError, CDPClosedError, TimeoutError) as exc:
            self.failure = f"Chromium failed to start: {exc}"
            self.log.note(self.failure)
            await self._stop_processes()
            raise browser_unavailable(self.failure) from exc
        assert self.process is not None
        self.log.note(f"Chromium ready in {time.perf_counter() - started:.2f}s (pid {self.process.pid})")

    async def _spawn_and_connect(self) -> None:
        assert self.binary is not None
        self.profile_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("DevToolsActivePort", "SingletonLock", "SingletonSocket", "SingletonCookie"):
            with contextlib.suppress(FileNotFoundError):
                (self.profile_dir / stale).unlink()
        prefix: list[str] = []
        if self.sandbox is not None:  # the sandbox's /tmp is its own, and goes with it
            prefix = self.sandbox.command_prefix()
            env = {**self.sandbox.env(None), "TMPDIR": "/tmp"}
            args = chromium_args(self.session, Path(SANDBOX_PROFILE), in_sandbox=True)
        else:
            # Its own TMPDIR, removed when it stops (see chromium_tmpdir: Chromium, killed, leaves its socket's).
            self._tmpdir = ChromiumTmpdir()
            env = {**os.environ, "TMPDIR": self._tmpdir.path}
            args = chromium_args(self.session, self.profile_dir)
        if not self.session.request.headless:
            env["DISPLAY"] = await self._ensure_display()
        self.log.note(f"launching {self.binary} {' '.join(args)}" + (" in the session's sandbox" if prefix else ""))
        ends = PipeEnds()

        def child_setup() -> None:  # pragma: no cover - runs in the child between fork and exec
            die_with_service()
            ends.child_setup()

        try:
            self.process = await asyncio.create_subprocess_exec(
                *prefix, self.binary, *args,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                start_new_session=True, env=env, pass_fds=PipeEnds.CHILD_FDS, preexec_fn=child_setup,
            )
        except BaseException:
            ends.close()
            raise
        ends.close_child_ends()
        try:
            self.hub = await CDPHub.connect(ends, f"chromium of {self.session.session_id}")
        except BaseException:
            ends.close()
            raise
        self._spawn_task(self._pump_output(self.process))
        self._spawn_task(self._watch(self.process, self.hub))
        self.hub.on_pipe_end = self._pipe_ended_soon(self.process, self.hub)
        try:
            await self.hub.call("Browser.getVersion", timeout=LAUNCH_TIMEOUT_SECONDS)
        except TimeoutError:
            raise browser_unavailable(
                f"Chromium did not answer on its DevTools pipe within {LAUNCH_TIMEOUT_SECONDS:.0f}s"
            ) from None
        except CDPClosedError:
            raise browser_unavailable(f"Chromium {await self._exit_during_startup()} during startup") from None
        self.cdp = await CDPConnection.open(self.hub)
        self.cdp.on("Target.detachedFromTarget", self._on_detached)
        self.page = None
        await self._fit_viewport(await self._page_target())
        if self.session.request.start_url:
            await self._open_start_url(self.session.request.start_url)

    async def _ensure_display(self) -> str:
        if self.xvfb is None or self.xvfb.process is None or self.xvfb.process.returncode is not None:
            if not self.xvfb_binary:
                raise browser_unavailable("headless: false needs Xvfb, which is not installed")
            viewport = self.session.viewport
            # Room for the window's tabs and toolbar around a viewport of exactly the requested size.
            self.xvfb = Xvfb(self.xvfb_binary, viewport.width + SCREEN_MARGIN, viewport.height + SCREEN_MARGIN,
                             self.session.supervisor_log("xvfb"), sandbox=self.sandbox)
            display = await self.xvfb.start()
            self.log.note(f"Xvfb running on display {display}")
        return self.xvfb.display

    async def _pump_output(self, process: asyncio.subprocess.Process) -> None:
        """Copy Chromium's output (stdout and stderr) into its log, line by line."""
        assert process.stdout is not None
        while True:
            line = await process.stdout.readline()
            if not line:
                break
            self.log.write(line)

    async def _exit_during_startup(self) -> str:
        """How a Chromium whose pipe ended during startup went (it may take a moment to be reaped)."""
        process = self.process
        if process is None:
            return "stopped"
        with contextlib.suppress(TimeoutError):
            await bounded(process.wait(), 5.0)
        return describe_exit(process.returncode) if process.returncode is not None else "closed its DevTools pipe"

    def _pipe_ended_soon(self, process: asyncio.subprocess.Process, hub: CDPHub) -> Callable[[], None]:
        """The pipe's end of file comes a moment before Chromium is reaped: close the hub with the exit
        reason `_watch` gives it (clients see "killed by SIGKILL"), or a plain one if the exit is slow."""

        def close_when_reaped() -> None:
            async def wait_then_close() -> None:
                with contextlib.suppress(TimeoutError):
                    await bounded(asyncio.shield(process.wait()), PIPE_END_GRACE_SECONDS)
                hub.close(f"Chromium {describe_exit(process.returncode)}" if process.returncode is not None
                          else "Chromium closed its DevTools pipe")

            self._spawn_task(wait_then_close())

        return close_when_reaped

    async def _watch(self, process: asyncio.subprocess.Process, hub: CDPHub) -> None:
        code = await process.wait()
        # Its pipe may be held open by a straggling child: the browser is gone, so are its clients.
        hub.close(f"Chromium {describe_exit(code)}")
        if self._closing or process is not self.process:
            return
        self.failure = f"Chromium {describe_exit(code)}"
        self.log.note(f"{self.failure} (pid {process.pid}); the next request will start a new one")
        log.warning("session %s: %s", self.session.session_id, self.failure)

    async def _reason_after_disconnect(self) -> str:
        """Why the browser is unusable; after a dropped socket, wait briefly for the exit to be reaped."""
        process = self.process
        if process is not None:
            with contextlib.suppress(TimeoutError):
                await bounded(process.wait(), 2.0)
            if process.returncode is not None:
                return f"Chromium {describe_exit(process.returncode)}"
            return "Chromium closed its DevTools pipe"
        return self.failure or "Chromium is not running"

    async def _page_target(self) -> PageTarget:
        """The tab to screenshot: the first page target, attached once and reused."""
        if self.page is not None:
            return self.page
        async with self._page_lock:
            if self.page is not None:
                return self.page
            assert self.cdp is not None
            targets = (await self.cdp.send("Target.getTargets")).get("targetInfos", [])
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                target_id = pages[0]["targetId"]
            else:
                target_id = (await self.cdp.send("Target.createTarget", {"url": "about:blank"}))["targetId"]
            attached = await self.cdp.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
            self.page = PageTarget(target_id=target_id, session_id=attached["sessionId"])
            return self.page

    async def _fit_viewport(self, page: PageTarget) -> None:
        """Size the window so the page's viewport is exactly the session's viewport.

        `--window-size` sizes the whole window, and the viewport is smaller by the (even headless)
        browser UI, whose height varies by version; so measure the difference and resize once.
        """
        assert self.cdp is not None
        want = self.session.viewport
        inner_w, inner_h, outer_w, outer_h = await self._window_sizes(page)
        if (inner_w, inner_h) == (want.width, want.height):
            return
        window = await self.cdp.send("Browser.getWindowForTarget", {"targetId": page.target_id})
        if window.get("bounds", {}).get("windowState", "normal") != "normal":
            await self.cdp.send("Browser.setWindowBounds",
                                {"windowId": window["windowId"], "bounds": {"windowState": "normal"}})
        bounds = {"width": want.width + outer_w - inner_w, "height": want.height + outer_h - inner_h}
        await self.cdp.send("Browser.setWindowBounds", {"windowId": window["windowId"], "bounds": bounds})
        inner_w, inner_h, _, _ = await self._window_sizes(page)
        if (inner_w, inner_h) != (want.width, want.height):
            self.log.note(f"viewport is {inner_w}x{inner_h} after resizing, emulating {want.width}x{want.height}")
            await self.cdp.send("Emulation.setDeviceMetricsOverride", {
                "width": want.width, "height": want.height, "deviceScaleFactor": 1, "mobile": False,
            }, session_id=page.session_id)

    async def _window_sizes(self, page: PageTarget) -> tuple[int, int, int, int]:
        assert self.cdp is not None
        result = await self.cdp.send("Runtime.evaluate", {
            "expression": "[innerWidth, innerHeight, outerWidth, outerHeight]", "returnByValue": True,
        }, session_id=page.session_id)
        inner_w, inner_h, outer_w, outer_h = result["result"]["value"]
        return int(inner_w), int(inner_h), int(outer_w), int(outer_h)

    def _on_detached(self, params: dict[str, Any], _session: str | None) -> None:
        if self.page is not None and params.get("sessionId") == self.page.session_id:
            self.page = None

    async def _open_start_url(self, url: str) -> None:
        """Navigate to `start_url` and wait a bounded time for it to load, so a first screenshot shows it."""
        assert self.cdp is not None and self.page is not None
        cdp, page = self.cdp, self.page
        loaded = asyncio.Event()
        unsubscribe = cdp.on(
            "Page.loadEventFired", lambda _p, sid: loaded.set() if sid == page.session_id else None
        )
        try:
            await cdp.send("Page.enable", session_id=page.session_id)
            result = await cdp.send(
                "Page.navigate", {"url": url}, session_id=page.session_id, timeout=START_URL_LOAD_WAIT_SECONDS
            )
            if result.get("errorText"):
                self.log.note(f"start_url {url!r} did not open: {result['errorText']}")
                return
            with contextlib.suppress(TimeoutError):
                await bounded(loaded.wait(), START_URL_LOAD_WAIT_SECONDS)
        except TimeoutError:
            self.log.note(f"start_url {url!r} is still loading; not waiting for it")
        except CDPError as exc:
            self.log.note(f"start_url {url!r} did not open: {exc}")
        finally:
            unsubscribe()
            with contextlib.suppress(CDPError, CDPClosedError, TimeoutError):
                await cdp.send("Page.disable", session_id=page.session_id, timeout=5)

    async def _stop_processes(self) -> None:
        if self.cdp is not None:
            with contextlib.suppress(Exception):
                await self.cdp.close()
            self.cdp = None
        if self.hub is not None:
            self.hub.close("the browser was stopped")
            self.hub = None
        self.page = None
        if self.process is not None:
            # Forget it first so its watcher knows this exit was asked for, not a crash.
            process, self.process = self.process, None
            await kill_group(process)
        if self._tmpdir is not None:
            self._tmpdir.remove()
            self._tmpdir = None
        if self._closing and self.xvfb is not None:
            await self.xvfb.stop()
            self.xvfb = None

    def _spawn_task(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
