"""A test page in a session's real Chromium, seen and steered through the session's `cdp_ws_url` (no tests here).

The page has a big button that turns from red to green on each click and a text field with a large
font, so a change shows in a screenshot and in a half-cell picture of it; the page also counts wheel
events and remembers the last key it saw. Used by the CLI, live-view and benchmark code.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Self

import websockets

if TYPE_CHECKING:
    from tests.conftest import PageServer

RED, GREEN = (255, 0, 0), (0, 255, 0)
#: The button, in page pixels (x, y, width, height); its centre is where clicks go.
BUTTON = (40, 40, 400, 240)
BUTTON_AT = (BUTTON[0] + BUTTON[2] // 2, BUTTON[1] + BUTTON[3] // 2)
#: The text field (x, y, width, height): large black text on white.
FIELD = (40, 340, 800, 160)
FIELD_AT = (FIELD[0] + FIELD[2] // 2, FIELD[1] + FIELD[3] // 2)
WAIT_SECONDS = 20

PAGE = f"""<!doctype html><title>bbrowse test page</title>
<style>
  html, body {{ margin: 0; background: #fff; }}
  #tall {{ position: absolute; left: 0; top: 0; width: 10px; height: 5000px; }}
  #b {{ position: absolute; left: {BUTTON[0]}px; top: {BUTTON[1]}px; width: {BUTTON[2]}px; height: {BUTTON[3]}px;
       border: 0; background: rgb(255, 0, 0); }}
  #b.on {{ background: rgb(0, 255, 0); }}
  #t {{ position: absolute; left: {FIELD[0]}px; top: {FIELD[1]}px; width: {FIELD[2]}px; height: {FIELD[3]}px;
       font: 120px monospace; color: #000; background: #fff; border: 2px solid #888; padding: 0 8px;
       caret-color: transparent; outline: none; }}
</style>
<div id="tall"></div>
<button id="b"></button>
<input id="t" autocomplete="off" spellcheck="false">
<script>
  window.clicks = 0; window.wheels = 0; window.lastKey = ""; window.buttons = [];
  addEventListener("mousedown", (e) => {{ window.buttons.push(e.button); window.downAt = [e.clientX, e.clientY]; }},
                   true);
  addEventListener("contextmenu", (e) => e.preventDefault());
  document.getElementById("b").addEventListener("click", (e) => {{
    window.clicks += 1; e.target.classList.toggle("on");
  }});
  addEventListener("wheel", () => {{ window.wheels += 1; }}, {{passive: true}});
  addEventListener("keydown", (e) => {{ window.lastKey = (e.ctrlKey ? "Ctrl+" : "") + e.key; }}, true);
</script>
"""


def write_page(pages: PageServer) -> str:
    """Publish the page on the test's loopback page server (`pages` fixture); its URL."""
    return pages.url("bbrowse-test-page.html", PAGE)


class PageProbe:
    """The session's page over CDP: navigate, evaluate, wait.

    Made for the page above; a test with a page of its own subclasses it and says, in `ready`, what
    that page's script defines once it has run.
    """

    #: A JavaScript expression, true once the test page has loaded and its script has run.
    ready = "'clicks' in window"
    #: Bound on waiting for a CDP answer, and `wait_for`'s default bound.
    wait_seconds: float = WAIT_SECONDS

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.session_id = ""

    @classmethod
    @contextlib.asynccontextmanager
    async def showing(cls, cdp_ws_url: str, url: str) -> AsyncIterator[Self]:
        """A probe on the session's page, freshly loaded with `url`, while the block runs (a `page` fixture's body)."""
        async with websockets.connect(cdp_ws_url, max_size=None, ping_interval=None) as ws:
            probe = await cls.attach(ws)
            await probe.open(url)
            yield probe

    @classmethod
    async def attach(cls, ws: websockets.ClientConnection) -> Self:
        probe = cls(ws)
        targets = (await probe.send("Target.getTargets"))["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        attached = await probe.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})
        probe.session_id = attached["sessionId"]
        return probe

    async def send(self, method: str, params: dict | None = None) -> dict:
        msg_id = next(self.ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if self.session_id:
            message["sessionId"] = self.session_id
        await self.ws.send(json.dumps(message))
        deadline = time.monotonic() + self.wait_seconds
        while True:
            reply = json.loads(await asyncio.wait_for(self.ws.recv(), max(0.1, deadline - time.monotonic())))
            if reply.get("id") == msg_id:
                assert "error" not in reply, reply
                return reply["result"]

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                      "awaitPromise": True})
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    async def open(self, url: str) -> None:
        """Load `url` and wait until its page is on the screen, as a person waits before scrolling or clicking.

        The old document is marked, so a reload of the same URL is not mistaken for done while the old page
        still answers. Loaded is not shown: Chromium drops input that reaches a new document before its first
        frame is presented, and under load that frame comes well after `readyState` is complete (a wheel sent
        then was lost, whole or in part, 11 times in 280 on a busy machine; 0 in 240 after the paint entry).
        """
        await self.evaluate("window.bbrowseOldPage = true")
        await self.send("Page.navigate", {"url": url})
        await self.wait_for(lambda: self.evaluate(
            f"!window.bbrowseOldPage && location.href === {json.dumps(url)} && document.readyState === 'complete'"
            f" && {self.ready} && performance.getEntriesByType('paint').length > 0"))
        # Focus the page's document (a headful window may have its focus in the toolbar).
        await self.evaluate("window.focus(); document.activeElement && document.activeElement.blur(); true")

    async def wait_for(self, probe: Callable[[], Awaitable[Any]], timeout: float | None = None) -> Any:
        """Poll the page (bounded, by `wait_seconds` unless `timeout` is given) until `probe()` is truthy; its value."""
        deadline = time.monotonic() + (self.wait_seconds if timeout is None else timeout)
        while True:
            value = await probe()
            if value:
                return value
            assert time.monotonic() < deadline, "the page did not show the effect in time"
            await asyncio.sleep(0.05)

    async def button_on(self) -> bool:
        return bool(await self.evaluate("document.getElementById('b').classList.contains('on')"))

    async def field_value(self) -> str:
        return await self.evaluate("document.getElementById('t').value")

    async def wait_for_field(self, expected: str) -> None:
        """Wait until the test page's input holds `expected`; on timeout say what it holds instead."""
        try:
            await self.wait_for(lambda: self.evaluate(f"document.getElementById('t').value === {json.dumps(expected)}"))
        except AssertionError:
            held = await self.field_value()
            raise AssertionError(f"expected the input to hold {expected!r}; it holds {held!r}") from None


async def open_probe(cdp_ws_url: str) -> tuple[websockets.ClientConnection, PageProbe]:
    """A CDP connection to the session's browser and a probe on its page (close the connection after)."""
    ws = await websockets.connect(cdp_ws_url, max_size=None, ping_interval=None)
    return ws, await PageProbe.attach(ws)
