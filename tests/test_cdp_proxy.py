"""`cdp_ws_url` through `bbrowse serve`, against a real Chromium that speaks CDP only over its pipe.

Playwright's `connect_over_cdp` and raw WebSocket clients drive the browser through the service, at
once, next to the service's own screenshots; the session `jwt` guards the door (every refusal is a
401 before the upgrade); Chromium itself listens on no TCP port; a Chromium that dies closes its
clients' sockets instead of leaving them hanging, and the same URL reaches its successor.
"""

from __future__ import annotations

import asyncio
import base64
import io
import itertools
import json
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import psutil
import pytest
import websockets
from browser_support import browser_process, needs_chromium
from browser_support import browser_session as new_session
from conftest import ServiceHandle, start_service, stop_service
from PIL import Image
from playwright.async_api import async_playwright

pytestmark = [pytest.mark.chromium, needs_chromium]

VIEWPORT = {"width": 800, "height": 600}
TITLE = "bbrowse cdp page"
PAGE = f"<!doctype html><title>{TITLE}</title><body style='margin:0;background:rgb(255,0,0)'>cdp"
RED, GREEN = (255, 0, 0), (0, 255, 0)
#: Bound on any one CDP exchange in these tests (generous: the machine is shared).
STEP_SECONDS = 20


@pytest.fixture(scope="module")
def page_url(pages) -> str:
    return pages.url("cdp-page.html", PAGE)


@pytest.fixture
async def browser_session(http: httpx.AsyncClient, page_url: str) -> AsyncIterator[dict]:
    """A fresh session showing the red page, for a test that changes what it shows or kills its browser."""
    async with new_session(http, start_url=page_url, viewport=VIEWPORT, timeout_seconds=600) as browser:
        yield browser


@pytest.fixture(scope="module")
async def shared_session(http: httpx.AsyncClient, page_url: str) -> AsyncIterator[dict]:
    """One red-page session for the tests that only read it (a Chromium start each saved). They leave it as
    they found it: none navigates or restyles the page, and a raw client's CDP sessions end with its socket."""
    async with new_session(http, start_url=page_url, viewport=VIEWPORT, timeout_seconds=600) as browser:
        yield browser


async def screenshot(http: httpx.AsyncClient, sid: str) -> Image.Image:
    r = await http.post(f"/browsers/{sid}/computer/screenshot", json={})
    assert r.status_code == 200, r.text
    return Image.open(io.BytesIO(r.content)).convert("RGB")


class RawCDP:
    """A plain WebSocket CDP client that keeps every message it receives, to check what reached it."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.received: list[dict[str, Any]] = []
        self.sent_ids: set[int] = set()
        self.events: list[dict[str, Any]] = []

    @classmethod
    async def connect(cls, url: str) -> RawCDP:
        return cls(await websockets.connect(url, max_size=None, compression=None))

    async def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict[str, Any]:
        """The whole reply (result or error) to one command; events meanwhile are kept in `events`."""
        msg_id = next(self.ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.sent_ids.add(msg_id)
        await self.ws.send(json.dumps(message))
        return await self.reply_to(msg_id)

    async def reply_to(self, msg_id: int | None) -> dict[str, Any]:
        async with asyncio.timeout(STEP_SECONDS):
            while True:
                message = json.loads(await self.ws.recv())
                self.received.append(message)
                if "id" not in message and "method" in message:
                    self.events.append(message)
                    continue
                if message.get("id") == msg_id:
                    return message

    async def attach_to_page(self) -> str:
        targets = (await self.call("Target.getTargets"))["result"]["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        attached = await self.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})
        return attached["result"]["sessionId"]

    async def evaluate(self, expression: str, session: str) -> Any:
        reply = await self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        return reply["result"]["result"]["value"]


def chromium_tree(service: ServiceHandle, sid: str) -> list[psutil.Process]:
    """The session's Chromium and every process under it."""
    main = browser_process(service, sid)
    return [main, *main.children(recursive=True)]


# Playwright ------------------------------------------------------------------


async def test_playwright_connect_over_cdp_drives_the_browser(http: httpx.AsyncClient, browser_session: dict) -> None:
    sid = browser_session["session_id"]
    assert await screenshot(http, sid) is not None
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(browser_session["cdp_ws_url"], timeout=30_000)
        page = next(p for p in browser.contexts[0].pages if p.url == browser_session["start_url"])
        assert await page.title() == TITLE
        assert await page.evaluate("6 * 7") == 42

        # What Playwright does is what the service's own screenshot shows: one browser, one page.
        await page.evaluate("document.body.style.background = 'rgb(0, 255, 0)'")
        assert (await screenshot(http, sid)).getpixel((799, 599)) == GREEN

        second = await browser.contexts[0].new_page()
        await second.goto("data:text/html,<title>second page</title><p id=p>two</p>")
        assert await second.title() == "second page"
        assert await second.inner_text("#p") == "two"
        await second.close()
        await browser.close()
    # Playwright gone: the session's browser is still there and still answers.
    assert (await screenshot(http, sid)).getpixel((799, 599)) == GREEN


async def test_playwright_and_a_raw_client_at_once_while_screenshots_are_taken(
    http: httpx.AsyncClient, browser_session: dict
) -> None:
    sid, url = browser_session["session_id"], browser_session["cdp_ws_url"]
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(url, timeout=30_000)
        page = browser.contexts[0].pages[0]
        raw = await RawCDP.connect(url)
        try:
            raw_page = await raw.attach_to_page()

            async def playwright_side() -> list[int]:
                return [await page.evaluate(f"{i} * 2") for i in range(25)]

            async def raw_side() -> list[int]:  # its ids 1, 2, 3... are the ones Playwright uses too
                return [await raw.evaluate(f"{i} * 3", raw_page) for i in range(25)]

            async def screenshots() -> list[tuple[int, int]]:
                return [(await screenshot(http, sid)).size for _ in range(8)]

            doubled, tripled, sizes = await asyncio.gather(playwright_side(), raw_side(), screenshots())
            assert doubled == [i * 2 for i in range(25)]
            assert tripled == [i * 3 for i in range(25)]
            assert sizes == [(800, 600)] * 8

            # The raw client saw only its own replies, events only of its own sessions, and its browser
            # session as if it were the only one: no sessionId there.
            replies = [m for m in raw.received if "id" in m]
            assert {m["id"] for m in replies} <= raw.sent_ids
            assert {m["sessionId"] for m in raw.received if "sessionId" in m} <= {raw_page}
            assert "sessionId" not in (await raw.call("Browser.getVersion"))

            # Browser-level events reach it without a sessionId; Playwright's page events never do.
            await raw.call("Target.setDiscoverTargets", {"discover": True})
            other = await page.context.new_page()
            await other.goto("data:text/html,<title>third</title>")
            async with asyncio.timeout(STEP_SECONDS):
                while not any(e["method"] == "Target.targetCreated" for e in raw.events):
                    await raw.call("Browser.getVersion")
            created = [e for e in raw.events if e["method"] == "Target.targetCreated"]
            assert all("sessionId" not in e for e in created)
            assert all(e.get("sessionId") in (None, raw_page) for e in raw.events)
            await other.close()

            # A change the raw client makes lasts as long as it is connected: its sessions end with it.
            await raw.call("Emulation.setDeviceMetricsOverride",
                           {"width": 320, "height": 200, "deviceScaleFactor": 1, "mobile": False}, raw_page)
            assert (await screenshot(http, sid)).size == (320, 200)
        finally:
            await raw.ws.close()
        size = (await screenshot(http, sid)).size
        deadline = time.monotonic() + STEP_SECONDS
        while size != (800, 600) and time.monotonic() < deadline:  # the service notices the close a moment later
            await asyncio.sleep(0.05)
            size = (await screenshot(http, sid)).size
        assert size == (800, 600)

        # Playwright never noticed any of it.
        assert await page.evaluate("document.title") == TITLE
        await browser.close()


# raw protocol ----------------------------------------------------------------


async def test_malformed_messages_are_answered_and_the_client_carries_on(shared_session: dict) -> None:
    raw = await RawCDP.connect(shared_session["cdp_ws_url"])
    try:
        await raw.ws.send("this is not json")
        assert "valid JSON" in (await raw.reply_to(None))["error"]["message"]
        await raw.ws.send(json.dumps({"id": "seven", "method": "Browser.getVersion"}))
        assert "integer 'id'" in (await raw.reply_to(None))["error"]["message"]
        await raw.ws.send(json.dumps({"id": 70, "params": {}}))
        assert "'method'" in (await raw.reply_to(70))["error"]["message"]
        unknown = await raw.call("No.suchMethod")
        assert unknown["error"]["code"] == -32601
        assert "Chrome/" in (await raw.call("Browser.getVersion"))["result"]["product"]
    finally:
        await raw.ws.close()


async def test_text_that_is_not_valid_unicode_reaches_the_client(shared_session: dict) -> None:
    """A lone surrogate (JavaScript strings may hold one) crosses as JSON escapes, never breaking the socket."""
    raw = await RawCDP.connect(shared_session["cdp_ws_url"])
    try:
        page = await raw.attach_to_page()
        assert await raw.evaluate("String.fromCharCode(0xD800) + 'é'", page) == "\ud800é"
        assert await raw.evaluate("'still here'", page) == "still here"
    finally:
        await raw.ws.close()


async def test_the_targets_a_client_lists_are_the_tab_and_no_browser_ui(shared_session: dict, page_url: str) -> None:
    """What `Target.getTargets` lists is the session's page, and no browser UI of its own (such as the omnibox's
    AI-mode popup, which Chromium lists as a `browser_ui` target at chrome://omnibox-popup.top-chrome/...)."""
    raw = await RawCDP.connect(shared_session["cdp_ws_url"])
    try:
        targets = (await raw.call("Target.getTargets"))["result"]["targetInfos"]
        assert [(t["type"], t["url"]) for t in targets] == [("page", page_url)], targets
    finally:
        await raw.ws.close()


async def test_a_client_can_take_a_screenshot_itself(shared_session: dict) -> None:
    raw = await RawCDP.connect(shared_session["cdp_ws_url"])
    try:
        page = await raw.attach_to_page()
        shot = await raw.call("Page.captureScreenshot", {"format": "png"}, page)
        image = Image.open(io.BytesIO(base64.b64decode(shot["result"]["data"]))).convert("RGB")
        assert image.size == (800, 600) and image.getpixel((10, 10)) == RED
    finally:
        await raw.ws.close()


# the browser going away ------------------------------------------------------


async def test_killed_chromium_closes_its_clients_and_the_same_url_reaches_the_next_one(
    http: httpx.AsyncClient, service: ServiceHandle, browser_session: dict
) -> None:
    sid, url = browser_session["session_id"], browser_session["cdp_ws_url"]
    raw = await RawCDP.connect(url)
    page = await raw.attach_to_page()
    assert await raw.evaluate("document.title", page) == TITLE
    victim = chromium_tree(service, sid)[0]
    os.kill(victim.pid, signal.SIGKILL)
    with pytest.raises(websockets.ConnectionClosed) as closed:
        async with asyncio.timeout(STEP_SECONDS):
            while True:
                await raw.ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
    assert "SIGKILL" in closed.value.rcvd.reason

    # Until a new Chromium runs, the door says why it is closed, then it opens onto the new one.
    assert (await http.post(f"/browsers/{sid}/computer/screenshot", json={})).status_code == 503
    assert (await screenshot(http, sid)).getpixel((10, 10)) == RED
    again = await RawCDP.connect(url)
    try:
        assert await again.evaluate("document.title", await again.attach_to_page()) == TITLE
    finally:
        await again.ws.close()


async def test_deleting_the_session_closes_its_clients(http: httpx.AsyncClient, page_url: str) -> None:
    r = await http.post("/browsers", json={"start_url": page_url})
    sid, url = r.json()["session_id"], r.json()["cdp_ws_url"]
    raw = await RawCDP.connect(url)
    await raw.call("Browser.getVersion")
    assert (await http.delete(f"/browsers/{sid}")).status_code == 204
    with pytest.raises(websockets.ConnectionClosed):
        async with asyncio.timeout(STEP_SECONDS):
            while True:
                await raw.ws.recv()
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(url)
    assert refused.value.response.status_code == 410


# no door besides the service ------------------------------------------------


async def test_chromium_listens_on_no_tcp_port(service: ServiceHandle, shared_session: dict) -> None:
    tree = chromium_tree(service, shared_session["session_id"])
    assert len(tree) >= 2  # the browser and its helpers (zygote, renderer, ...)
    main_args = tree[0].cmdline()
    assert "--remote-debugging-pipe" in main_args
    assert not any(arg.startswith("--remote-debugging-port") for arg in main_args)
    listening = []
    for proc in tree:
        try:
            listening += [(proc.pid, c.laddr) for c in proc.net_connections(kind="inet")
                          if c.status == psutil.CONN_LISTEN]
        except psutil.NoSuchProcess:
            continue
    assert listening == []


async def test_nothing_the_service_started_holds_its_port(service: ServiceHandle, shared_session: dict) -> None:
    """Under uvloop a spawn does not close the service's descriptors: an inheritable listening socket went to
    Xvfb, ffmpeg and Chromium, and would keep the port taken after the service died."""
    port = int(service.url.rsplit(":", 1)[1])
    assert chromium_tree(service, shared_session["session_id"])  # at least a browser runs now
    holders = []
    for proc in psutil.Process(service.pid).children(recursive=True):
        try:
            holders += [(proc.pid, proc.name()) for c in proc.net_connections(kind="inet") if c.laddr.port == port]
        except psutil.NoSuchProcess:
            continue
    assert holders == []


# the jwt ----------------------------------------------------------------------


def _claims_of(url: str) -> dict[str, Any]:
    return jwt.decode(url.split("jwt=", 1)[1], options={"verify_signature": False})


def _with_token(url: str, token: str | None) -> str:
    base = url.split("?", 1)[0]
    return base if token is None else f"{base}?jwt={token}"


async def _refusal(url: str, **kwargs: Any) -> tuple[int, str]:
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(url, **kwargs)
    return refused.value.response.status_code, refused.value.response.body.decode()


@pytest.fixture(scope="module")
async def two_urls(http: httpx.AsyncClient, shared_session: dict) -> AsyncIterator[tuple[str, str]]:
    """The `cdp_ws_url`s of two sessions (only connected to, never changed): the shared one and one more."""
    async with new_session(http, timeout_seconds=600) as other:
        yield shared_session["cdp_ws_url"], other["cdp_ws_url"]


@pytest.mark.parametrize("case", ["wrong session", "forged", "alg none", "tampered", "missing", "bearer only"])
async def test_cdp_ws_url_refuses_a_bad_jwt_before_the_upgrade(
    service: ServiceHandle, two_urls: tuple[str, str], case: str
) -> None:
    url, other_url = two_urls
    claims = _claims_of(url)
    extra: dict[str, Any] = {}
    if case == "wrong session":  # another session's valid token
        target = _with_token(url, other_url.split("jwt=", 1)[1])
    elif case == "forged":  # the right claims, signed with a secret that is not the service's
        target = _with_token(url, jwt.encode(claims, os.urandom(32), algorithm="HS256"))
    elif case == "alg none":
        target = _with_token(url, jwt.encode(claims, None, algorithm="none"))
    elif case == "tampered":  # the other session's signature on claims rewritten for this one
        header, _, signature = other_url.split("jwt=", 1)[1].split(".")
        body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
        target = _with_token(url, f"{header}.{body}.{signature}")
    elif case == "missing":
        target = _with_token(url, None)
    else:  # the API's bearer token opens nothing here
        target = _with_token(url, None)
        extra = {"additional_headers": service.headers}
    status, body = await _refusal(target, **extra)
    assert status == 401
    assert "jwt" in body
    # The real token still opens it.
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
        assert "result" in json.loads(await asyncio.wait_for(ws.recv(), STEP_SECONDS))


async def test_cdp_ws_url_refuses_an_expired_jwt(tmp_path: Path) -> None:
    # A service whose tokens live one second (no Chromium needed: the jwt is checked before the browser).
    handle = start_service(tmp_path / "state", extra_env={"BBROWSE_VM_TOKEN_SECONDS": "1",
                                                          "BBROWSE_CHROMIUM": "/nonexistent/chromium"})
    try:
        async with httpx.AsyncClient(base_url=handle.url, headers=handle.headers, timeout=30) as client:
            url = (await client.post("/browsers", json={})).json()["cdp_ws_url"]
        expires = _claims_of(url)["exp"]
        status, body = await _refusal(url)
        deadline = time.monotonic() + 30
        while status != 401 and time.monotonic() < deadline:  # valid (then 503: no Chromium) until it expires
            # Refused soon after it expires; the slack is for a round trip on a busy machine, not for the token.
            assert status == 503 and time.time() < expires + 5
            await asyncio.sleep(0.1)
            status, body = await _refusal(url)
        assert status == 401 and "expired" in body
    finally:
        stop_service(handle)
