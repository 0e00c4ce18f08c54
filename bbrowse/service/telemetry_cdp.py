"""The CDP monitor of one session: the service's own DevTools client, beside the user's, turned into events.

It opens a client of its own on the browser's `CDPHub` (a browser session, as the CDP proxy's clients
have), discovers targets (tab opened, page crashed) and auto-attaches to every page, enabling there only
the domains the captured categories need: Runtime (console log and error, uncaught exceptions), Network
(request, response, loading failed) and Page (navigation, DOM content loaded, load). When Chromium dies
the monitor records a `system` `service_crashed` and a `monitor_disconnected`; when the service starts a
new Chromium it attaches again and records `monitor_reconnected`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

from bbrowse.service.cdp import CDPClosedError, CDPConnection, CDPError, CDPHub
from bbrowse.service.sessions import Session
from bbrowse.service.telemetry import TelemetryLog, mask_headers

log = logging.getLogger("bbrowse.telemetry")

#: How often the monitor looks for the session's (new) browser: quickly until the first one, to see its first page.
FIRST_POLL_SECONDS = 0.02
POLL_SECONDS = 0.1
#: Requests remembered for their response and failure events (url, method, type); bounded.
MAX_REQUESTS = 10_000
_DOMAINS = {"console": "Runtime", "network": "Network", "page": "Page"}


def remote_text(arg: Any) -> str:
    """A console argument (CDP RemoteObject) as the console would print it."""
    if not isinstance(arg, dict):
        return str(arg)
    if "value" in arg:
        value = arg["value"]
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return "null" if value is None else _json_text(value)
    for key in ("unserializableValue", "description"):
        if key in arg:
            return str(arg[key])
    return str(arg.get("type", ""))


_json_text = json.JSONEncoder(separators=(",", ":")).encode  # one encoder: `json.dumps` with options makes one a call


class CdpMonitor:
    """See the module docstring; one per capturing session, stopped with it."""

    def __init__(self, session: Session, telemetry: TelemetryLog) -> None:
        self.session = session
        self.telemetry = telemetry
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._targets: dict[str, dict[str, Any]] = {}  # target id -> info (url, type, nav_seq)
        self._sessions: dict[str, str] = {}  # CDP session id -> target id
        self._requests: dict[str, tuple[str, str, str]] = {}
        self._discovering = False

    @staticmethod
    def domains(categories: frozenset[str]) -> tuple[str, ...]:
        return tuple(domain for category, domain in _DOMAINS.items() if category in categories)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"telemetry {self.session.session_id}")

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    # following the browser ----------------------------------------------------------

    def _hub(self) -> CDPHub | None:
        hub = getattr(self.session.browser, "hub", None)
        return hub if isinstance(hub, CDPHub) and not hub.closed else None

    def _pid(self) -> int | None:
        process = getattr(self.session.browser, "process", None)
        return getattr(process, "pid", None)

    async def _run(self) -> None:
        last: CDPHub | None = None
        lost_at: float | None = None
        while not self._stopping:
            hub = self._hub()
            if hub is None or hub is last:
                await asyncio.sleep(FIRST_POLL_SECONDS if last is None else POLL_SECONDS)
                continue
            last = hub
            pid = self._pid()
            connection: CDPConnection | None = None
            try:
                connection = await CDPConnection.open(hub)
                if self.domains(self.telemetry.categories):
                    await self._watch(connection)
            except (CDPClosedError, CDPError, TimeoutError) as exc:
                log.debug("telemetry monitor of %s: %s", self.session.session_id, exc)
            if lost_at is not None:
                self.telemetry.add("monitor", "monitor_reconnected",
                                   {"reconnect_duration_ms": int((time.monotonic() - lost_at) * 1000)},
                                   kind="local_process")
            await hub.wait_closed()
            if connection is not None:
                await connection.close()
            if self._stopping or not self.session.active:
                return
            lost_at = time.monotonic()
            self.telemetry.add("system", "service_crashed",
                               {"service_name": "chromium", "phase": "running", "pid": pid,
                                "reason": hub.close_reason or None}, kind="local_process")
            self.telemetry.add("monitor", "monitor_disconnected", {"reason": "chrome_restarted"},
                               kind="local_process")
            self._targets.clear()
            self._sessions.clear()

    async def _watch(self, cdp: CDPConnection) -> None:
        cdp.on("Target.targetCreated", self._target_created)
        cdp.on("Target.targetInfoChanged", self._target_changed)
        cdp.on("Target.targetCrashed", self._target_crashed)
        cdp.on("Target.attachedToTarget", lambda params, _sid: self._attached(cdp, params))
        cdp.on("Target.detachedFromTarget", self._detached)
        cdp.on("Runtime.consoleAPICalled", self._console)
        cdp.on("Runtime.exceptionThrown", self._exception)
        cdp.on("Network.requestWillBeSent", self._request)
        cdp.on("Network.responseReceived", self._response)
        cdp.on("Network.loadingFailed", self._loading_failed)
        cdp.on("Page.frameNavigated", self._navigated)
        cdp.on("Page.domContentEventFired", lambda p, sid: self._lifecycle("page_dom_content_loaded", p, sid))
        cdp.on("Page.loadEventFired", lambda p, sid: self._lifecycle("page_load", p, sid))
        self._discovering = True
        try:
            await cdp.send("Target.setDiscoverTargets", {"discover": True})
        finally:
            self._discovering = False
        await cdp.send("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True})

    def _attached(self, cdp: CDPConnection, params: dict[str, Any]) -> None:
        info = params.get("targetInfo") or {}
        session_id = params.get("sessionId")
        if info.get("type") != "page" or not isinstance(session_id, str):
            return
        self._sessions[session_id] = info.get("targetId", "")
        self._targets.setdefault(info.get("targetId", ""), {"url": info.get("url", ""), "nav_seq": 0})
        task = asyncio.create_task(self._enable(cdp, session_id))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _enable(self, cdp: CDPConnection, session_id: str) -> None:
        for domain in self.domains(self.telemetry.categories):
            with contextlib.suppress(CDPError, CDPClosedError, TimeoutError):
                await cdp.send(f"{domain}.enable", session_id=session_id, timeout=10)

    def _detached(self, params: dict[str, Any], _sid: str | None) -> None:
        self._sessions.pop(params.get("sessionId", ""), None)

    # events ------------------------------------------------------------------------

    def _context(self, session_id: str | None, **extra: Any) -> dict[str, Any]:
        target_id = self._sessions.get(session_id or "", "")
        target = self._targets.get(target_id, {})
        context = {"session_id": session_id, "target_id": target_id or None, "target_type": "page",
                   "url": target.get("url") or None, "nav_seq": target.get("nav_seq")}
        context.update(extra)
        return context

    def _target_created(self, params: dict[str, Any], _sid: str | None) -> None:
        info = params.get("targetInfo") or {}
        if info.get("type") != "page":
            return
        target_id = info.get("targetId", "")
        self._targets.setdefault(target_id, {"url": info.get("url", ""), "nav_seq": 0})
        if self._discovering:
            return  # there before the monitor: not opened now
        self.telemetry.add("page", "page_tab_opened", {
            "target_id": target_id, "target_type": "page", "url": info.get("url") or None,
            "title": info.get("title") or None, "opener_id": info.get("openerId"),
        }, source_event="Target.targetCreated")

    def _target_changed(self, params: dict[str, Any], _sid: str | None) -> None:
        info = params.get("targetInfo") or {}
        target = self._targets.get(info.get("targetId", ""))
        if target is not None and info.get("url"):
            target["url"] = info["url"]

    def _target_crashed(self, params: dict[str, Any], _sid: str | None) -> None:
        target_id = params.get("targetId", "")
        target = self._targets.get(target_id)
        if target is None:
            return
        self.telemetry.add("page", "page_crashed", {
            "target_id": target_id, "target_type": "page", "url": target.get("url", ""),
            "status": params.get("status"), "error_code": params.get("errorCode"),
        }, source_event="Target.targetCrashed")

    def _console(self, params: dict[str, Any], sid: str | None) -> None:
        if not self.telemetry.wants("console"):
            return
        level = params.get("type", "log")
        args = [remote_text(arg) for arg in params.get("args") or []]
        data = self._context(sid, level=level, text=args[0] if args else "", args=args,
                             stack_trace=params.get("stackTrace"))
        kind = "console_error" if level == "error" else "console_log"
        self.telemetry.add("console", kind, data, source_event="Runtime.consoleAPICalled")

    def _exception(self, params: dict[str, Any], sid: str | None) -> None:
        details = params.get("exceptionDetails") or {}
        exception = details.get("exception") or {}
        message = str(exception.get("description") or remote_text(exception) if exception else "").split("\n")[0]
        prefix = str(details.get("text") or "Uncaught")
        text = f"{prefix} {message}".strip() if message and message not in prefix else prefix
        self.telemetry.add("console", "console_error", self._context(
            sid, text=text, line=details.get("lineNumber"), column=details.get("columnNumber"),
            source_url=details.get("url") or None, stack_trace=details.get("stackTrace"),
        ), source_event="Runtime.exceptionThrown")

    def _request(self, params: dict[str, Any], sid: str | None) -> None:
        request = params.get("request") or {}
        request_id = params.get("requestId", "")
        url, method, kind = request.get("url", ""), request.get("method", ""), params.get("type", "Other")
        if len(self._requests) >= MAX_REQUESTS:
            self._requests.pop(next(iter(self._requests)))
        self._requests[request_id] = (url, method, kind)
        if not self.telemetry.wants("network"):
            return
        redirect = params.get("redirectResponse")
        self.telemetry.add("network", "network_request", self._context(
            sid, url=url, method=method, headers=mask_headers(request.get("headers")),
            post_data=request.get("postData"), request_id=request_id, resource_type=kind,
            initiator_type=(params.get("initiator") or {}).get("type"), document_url=params.get("documentURL"),
            frame_id=params.get("frameId"), loader_id=params.get("loaderId"),
            is_redirect=True if redirect else None, redirect_url=(redirect or {}).get("url"),
        ), source_event="Network.requestWillBeSent")

    def _response(self, params: dict[str, Any], sid: str | None) -> None:
        if not self.telemetry.wants("network"):
            return
        response = params.get("response") or {}
        request_id = params.get("requestId", "")
        _, method, _ = self._requests.get(request_id, ("", "", ""))
        self.telemetry.add("network", "network_response", self._context(
            sid, url=response.get("url"), status=response.get("status"), status_text=response.get("statusText"),
            headers=mask_headers(response.get("headers")), mime_type=response.get("mimeType"),
            request_id=request_id, resource_type=params.get("type"), method=method or None,
            frame_id=params.get("frameId"), loader_id=params.get("loaderId"), timing=response.get("timing"),
        ), source_event="Network.responseReceived")

    def _loading_failed(self, params: dict[str, Any], sid: str | None) -> None:
        request_id = params.get("requestId", "")
        url, _, _ = self._requests.pop(request_id, ("", "", ""))
        self.telemetry.add("network", "network_loading_failed", self._context(
            sid, url=url or None, request_id=request_id, error_text=params.get("errorText"),
            canceled=params.get("canceled"), resource_type=params.get("type"),
        ), source_event="Network.loadingFailed")

    def _navigated(self, params: dict[str, Any], sid: str | None) -> None:
        frame = params.get("frame") or {}
        target = self._targets.get(self._sessions.get(sid or "", ""))
        if target is not None and not frame.get("parentId"):
            target["url"] = frame.get("url", "")
            target["nav_seq"] = int(target.get("nav_seq") or 0) + 1
        self.telemetry.add("page", "page_navigation", self._context(
            sid, url=frame.get("url"), frame_id=frame.get("id"), loader_id=frame.get("loaderId"),
            parent_frame_id=frame.get("parentId"), nav_seq=None,
        ), source_event="Page.frameNavigated")

    def _lifecycle(self, type_: str, params: dict[str, Any], sid: str | None) -> None:
        self.telemetry.add("page", type_, self._context(sid, cdp_timestamp=params.get("timestamp")),
                           source_event="Page.domContentEventFired" if type_ == "page_dom_content_loaded"
                           else "Page.loadEventFired")

