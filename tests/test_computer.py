"""Computer controls against the real service and a real Chromium, driven by the official SDK.

Every test runs on a headless session (CDP `Input.*` events) and on a headful one (xdotool on the
session's own Xvfb display): the same calls must have the same effect on the page. What the page
saw is read back through the session's `cdp_ws_url` (its own event log, its input's value) and
through screenshots, so coordinates are checked to be the screenshot's pixels.

The official SDK sends computer calls to the session's VM endpoint (`base_url`, jwt); a few calls
go through the control plane with raw HTTP too.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import AsyncIterator

import browser_page
import httpx
import kernel
import pytest
from browser_support import browser_session, needs_chromium
from PIL import Image

pytestmark = [pytest.mark.chromium, needs_chromium]

VIEWPORT = {"width": 1024, "height": 700}
#: Bound on waiting for the page to show an effect (generous: the machine is shared).
WAIT_SECONDS = 15
RED, GREEN = (255, 0, 0), (0, 255, 0)
INPUT_AT = (60, 60)
BUTTON_AT = (140, 160)

PAGE = """<!doctype html><title>computer</title>
<style>
  body { margin: 0; }
  #tall { position: absolute; left: 0; top: 0; width: 4000px; height: 4000px; }
  #t { position: absolute; left: 40px; top: 40px; width: 400px; height: 40px; font-size: 18px; }
  #b { position: absolute; left: 40px; top: 120px; width: 200px; height: 80px; border: 0;
       background: rgb(255, 0, 0); }
  #b.on { background: rgb(0, 255, 0); }
</style>
<div id="tall"></div>
<input id="t" autocomplete="off">
<button id="b">off</button>
<script>
  window.events = [];
  const record = (e) => events.push({type: e.type, x: e.clientX, y: e.clientY, button: e.button,
      buttons: e.buttons, shift: e.shiftKey, ctrl: e.ctrlKey, alt: e.altKey, detail: e.detail, key: e.key});
  for (const type of ["mousedown", "mouseup", "click", "dblclick", "contextmenu", "keydown", "mousemove"]) {
    addEventListener(type, record, true);
  }
  addEventListener("contextmenu", (e) => e.preventDefault());
  document.getElementById("b").addEventListener("click", (e) => {
    e.target.classList.toggle("on");
    e.target.textContent = e.target.classList.contains("on") ? "on" : "off";
  });
</script>
"""


class PageProbe(browser_page.PageProbe):
    """The session's page seen through its `cdp_ws_url`: navigate, evaluate, read the events it recorded."""

    ready = "!!window.events"
    wait_seconds = WAIT_SECONDS

    async def events(self, kind: str) -> list[dict]:
        return await self.evaluate(f"events.filter(e => e.type === {json.dumps(kind)})")


@pytest.fixture(scope="module")
def page_url(pages) -> str:
    return pages.url("computer.html", PAGE)


@pytest.fixture(scope="module", params=["headless", "headful"])
async def browser(request: pytest.FixtureRequest, http: httpx.AsyncClient) -> AsyncIterator[dict]:
    """One session of each kind for the module (a Chromium start costs seconds)."""
    async with browser_session(http, headless=request.param == "headless", viewport=VIEWPORT,
                               timeout_seconds=900) as browser:
        yield browser


@pytest.fixture
async def page(browser: dict, page_url: str, http: httpx.AsyncClient) -> AsyncIterator[PageProbe]:
    """The test page, freshly loaded, seen through CDP."""
    shown = (await http.get(f"/browsers/{browser['session_id']}")).json()
    async with PageProbe.showing(shown["cdp_ws_url"], page_url) as probe:
        yield probe


def _sid(browser: dict) -> str:
    return browser["session_id"]


async def _pixel(sdk: kernel.Kernel, browser: dict, at: tuple[int, int]) -> tuple[int, int, int]:
    png = sdk.browsers.computer.capture_screenshot(_sid(browser)).read()
    return Image.open(io.BytesIO(png)).convert("RGB").getpixel(at)


def _near(pixel: tuple[int, int, int], colour: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 40 for a, b in zip(pixel, colour, strict=True))


# typing, clicking, keys ------------------------------------------------------------------------------


async def _focus_input(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    """Click into the input and wait until it has the focus, as a person waits for the caret before typing."""
    sdk.browsers.computer.click_mouse(_sid(browser), x=INPUT_AT[0], y=INPUT_AT[1])
    await page.wait_for(lambda: page.evaluate("document.activeElement.id === 't'"))


async def test_typed_text_arrives_in_the_clicked_input(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    await _focus_input(sdk, browser, page)
    text = "Hello, wörld 1! ~<&>\"' 日本"
    sdk.browsers.computer.type_text(_sid(browser), text=text)
    await page.wait_for_field(text)


async def test_a_click_on_the_button_changes_the_page_and_the_screenshot(
    sdk: kernel.Kernel, browser: dict, page: PageProbe
) -> None:
    assert _near(await _pixel(sdk, browser, BUTTON_AT), RED)
    sdk.browsers.computer.click_mouse(_sid(browser), x=BUTTON_AT[0], y=BUTTON_AT[1])
    await page.wait_for(lambda: page.evaluate("document.getElementById('b').textContent === 'on'"))
    [click] = await page.events("click")
    assert (click["x"], click["y"]) == BUTTON_AT  # the screenshot's pixels are the page's pixels
    deadline = time.monotonic() + WAIT_SECONDS
    while not _near(await _pixel(sdk, browser, BUTTON_AT), GREEN):  # (a hovered button is a shade darker)
        assert time.monotonic() < deadline, "the screenshot never showed the clicked (green) button"
        await asyncio.sleep(0.05)


async def test_double_right_and_held_modifier_clicks(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    sid = _sid(browser)
    sdk.browsers.computer.click_mouse(sid, x=300, y=400, num_clicks=2)
    await page.wait_for(lambda: page.events("dblclick"))
    sdk.browsers.computer.click_mouse(sid, x=310, y=410, button="right")
    [menu] = await page.wait_for(lambda: page.events("contextmenu"))
    assert (menu["x"], menu["y"], menu["button"]) == (310, 410, 2)
    sdk.browsers.computer.click_mouse(sid, x=320, y=420, hold_keys=["Shift"])
    clicks = await page.wait_for(lambda: page.evaluate("events.filter(e => e.type === 'click' && e.x === 320)"))
    assert clicks[0]["shift"] is True


async def test_press_and_release_are_separate_calls(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    sid = _sid(browser)
    sdk.browsers.computer.click_mouse(sid, x=500, y=500, click_type="down")
    await page.wait_for(lambda: page.events("mousedown"))
    assert await page.events("mouseup") == []
    sdk.browsers.computer.click_mouse(sid, x=500, y=500, click_type="up")
    await page.wait_for(lambda: page.events("mouseup"))


async def test_key_combinations_edit_the_input(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    sid = _sid(browser)
    await _focus_input(sdk, browser, page)
    sdk.browsers.computer.type_text(sid, text="abc def")
    await page.wait_for_field("abc def")
    # (Not Ctrl++: on a headful session that is the browser's zoom, as it would be for a person.)
    sdk.browsers.computer.press_key(sid, keys=["BackSpace", "BackSpace", "Ctrl+a", "x", "Shift+y", "minus", "+"])
    await page.wait_for_field("xY-+")
    sdk.browsers.computer.press_key(sid, keys=["Home", "Delete", "End", "Left", "KP_5"])
    await page.wait_for_field("Y-5+")
    keys = [e["key"] for e in await page.events("keydown")]
    assert "Home" in keys and "Delete" in keys and "Control" in keys


async def test_keys_held_for_a_duration(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    sid = _sid(browser)
    await _focus_input(sdk, browser, page)
    started = time.monotonic()
    sdk.browsers.computer.press_key(sid, keys=["Shift", "q"], duration=300)
    assert time.monotonic() - started >= 0.3
    await page.wait_for(lambda: page.evaluate("document.getElementById('t').value.startsWith('Q')"))
    sdk.browsers.computer.press_key(sid, keys=["w"], hold_keys=["Shift"])
    await page.wait_for(lambda: page.evaluate("document.getElementById('t').value.startsWith('QW')"))


# pointer -------------------------------------------------------------------------------------------


async def test_move_and_read_back_the_pointer(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    sid = _sid(browser)
    sdk.browsers.computer.move_mouse(sid, x=200, y=150, smooth=False)
    position = sdk.browsers.computer.get_mouse_position(sid)
    assert (position.x, position.y) == (200, 150)
    moves = await page.wait_for(lambda: page.evaluate("events.filter(e => e.type === 'mousemove' && e.x === 200)"))
    assert moves[-1]["y"] == 150
    await page.evaluate("events.length = 0")
    started = time.monotonic()
    sdk.browsers.computer.move_mouse(sid, x=700, y=500, duration_ms=300)
    assert time.monotonic() - started >= 0.25  # a smooth move takes the time asked for
    position = sdk.browsers.computer.get_mouse_position(sid)
    assert (position.x, position.y) == (700, 500)
    moves = await page.wait_for(lambda: page.evaluate(
        "(() => { const m = events.filter(e => e.type === 'mousemove'); "
        "return m.length && m[m.length - 1].x === 700 && m[m.length - 1].y === 500 ? m : null })()"))
    assert len(moves) >= 5, moves  # it went through the points between


async def test_drag_presses_moves_and_releases(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    sid = _sid(browser)
    # 40 ms a step: more than two frames, so Chromium (which merges moves arriving within one frame) sees
    # steps of each segment however fast xdotool or CDP deliver them.
    sdk.browsers.computer.drag_mouse(sid, path=[[100, 300], [200, 300], [200, 380]], smooth=False,
                                     steps_per_segment=4, step_delay_ms=40)
    [down] = await page.wait_for(lambda: page.events("mousedown"))
    [up] = await page.wait_for(lambda: page.events("mouseup"))
    assert (down["x"], down["y"]) == (100, 300) and (up["x"], up["y"]) == (200, 380)
    held = {(m["x"], m["y"]) for m in await page.evaluate(
        "events.filter(e => e.type === 'mousemove' && e.buttons === 1)")}
    # Chromium may merge moves that arrive within one frame: some of each segment's steps, not all, are seen.
    assert any(100 < x < 200 and y == 300 for x, y in held), held
    assert any(x == 200 and 300 < y <= 380 for x, y in held), held
    sdk.browsers.computer.drag_mouse(sid, path=[[300, 300], [400, 420]], duration_ms=200)
    await page.wait_for(lambda: page.evaluate("events.filter(e => e.type === 'mouseup').length === 2"))
    position = sdk.browsers.computer.get_mouse_position(sid)
    assert (position.x, position.y) == (400, 420)


async def test_scroll_turns_the_wheel_where_the_pointer_is(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    sid = _sid(browser)
    sdk.browsers.computer.scroll(sid, x=300, y=300, delta_y=3)
    await page.wait_for(lambda: page.evaluate("scrollY >= 300"))
    sdk.browsers.computer.scroll(sid, x=300, y=300, delta_x=2, delta_y=-3)
    await page.wait_for(lambda: page.evaluate("scrollY === 0 && scrollX >= 200"))


# clipboard, cursor, batch ----------------------------------------------------------------------------


async def test_clipboard_round_trip_and_paste(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    sid = _sid(browser)
    text = "clipboard ✓ round trip"
    sdk.browsers.computer.write_clipboard(sid, text=text)
    assert sdk.browsers.computer.read_clipboard(sid).text == text
    await _focus_input(sdk, browser, page)
    sdk.browsers.computer.press_key(sid, keys=["Ctrl+v"])
    await page.wait_for_field(text)


async def test_what_the_page_copies_is_read_from_the_clipboard(
    sdk: kernel.Kernel, browser: dict, page: PageProbe
) -> None:
    sid = _sid(browser)
    await _focus_input(sdk, browser, page)
    sdk.browsers.computer.type_text(sid, text="copied from the page")
    await page.wait_for_field("copied from the page")
    sdk.browsers.computer.press_key(sid, keys=["Ctrl+a", "Ctrl+c"])
    deadline = time.monotonic() + WAIT_SECONDS
    while sdk.browsers.computer.read_clipboard(sid).text != "copied from the page":
        assert time.monotonic() < deadline, "the page's copy never reached the clipboard"
        await asyncio.sleep(0.05)


async def test_cursor_visibility_is_accepted(sdk: kernel.Kernel, browser: dict) -> None:
    assert sdk.browsers.computer.set_cursor_visibility(_sid(browser), hidden=True).ok is True
    assert sdk.browsers.computer.set_cursor_visibility(_sid(browser), hidden=False).ok is True


async def test_batch_runs_actions_in_order(sdk: kernel.Kernel, browser: dict, page: PageProbe) -> None:
    sid = _sid(browser)
    sdk.browsers.computer.batch(sid, actions=[
        {"type": "click_mouse", "click_mouse": {"x": INPUT_AT[0], "y": INPUT_AT[1]}},
        {"type": "type_text", "type_text": {"text": "batched"}},
        {"type": "sleep", "sleep": {"duration_ms": 20}},
        {"type": "press_key", "press_key": {"keys": ["BackSpace"]}},
        {"type": "set_cursor", "set_cursor": {"hidden": False}},
        {"type": "move_mouse", "move_mouse": {"x": BUTTON_AT[0], "y": BUTTON_AT[1], "smooth": False}},
        {"type": "click_mouse", "click_mouse": {"x": BUTTON_AT[0], "y": BUTTON_AT[1]}},
        {"type": "scroll", "scroll": {"x": 10, "y": 10, "delta_y": 1}},
        {"type": "drag_mouse", "drag_mouse": {"path": [[500, 500], [520, 520]], "smooth": False, "step_delay_ms": 0}},
    ])
    await page.wait_for(lambda: page.evaluate(
        "document.getElementById('t').value === 'batche' && document.getElementById('b').textContent === 'on'"))
    await page.wait_for(lambda: page.evaluate("scrollY > 0"))


async def test_a_bad_action_stops_the_batch_before_anything_runs(
    sdk: kernel.Kernel, browser: dict, page: PageProbe
) -> None:
    with pytest.raises(kernel.BadRequestError) as refused:
        sdk.browsers.computer.batch(_sid(browser), actions=[
            {"type": "click_mouse", "click_mouse": {"x": BUTTON_AT[0], "y": BUTTON_AT[1]}},
            {"type": "press_key", "press_key": {"keys": ["Ctrl+nosuchkey"]}},
        ])
    assert any(d["message"].startswith("actions.1.press_key.keys.0:") for d in refused.value.body["details"])
    await asyncio.sleep(0.3)  # what would have run had the batch started
    assert await page.evaluate("document.getElementById('b').textContent") == "off"


# errors ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "body", "field"),
    [
        ("click_mouse", {"x": VIEWPORT["width"], "y": 10}, "x"),
        ("click_mouse", {"x": 10, "y": -1}, "y"),
        ("click_mouse", {"x": 10, "y": 10, "button": "fourth"}, "button"),
        ("click_mouse", {"x": 10, "y": 10, "hold_keys": ["Hyperspace"]}, "hold_keys.0"),
        ("click_mouse", {"x": "10", "y": 10}, "x"),
        ("move_mouse", {"x": 10, "y": VIEWPORT["height"] + 5}, "y"),
        ("move_mouse", {"x": 10, "y": 10, "duration_ms": 10}, "duration_ms"),
        ("drag_mouse", {"path": [[10, 10]]}, "path"),
        ("drag_mouse", {"path": [[10, 10], [5000, 10]]}, "path.1"),
        ("scroll", {"x": 10, "y": 10}, "delta_y"),
        ("type", {"text": 5}, "text"),
        ("press_key", {"keys": []}, "keys"),
        ("press_key", {"keys": ["Return", "Ctrl+"]}, "keys.1"),
        ("press_key", {"keys": ["NoSuchKey"]}, "keys.0"),
        ("press_key", {"keys": ["a"], "duration": -1}, "duration"),
        ("press_key", {"keys": ["a"], "surprise": 1}, "surprise"),
        ("clipboard/write", {}, "text"),
        ("cursor", {"hidden": "yes"}, "hidden"),
        ("batch", {"actions": [{"type": "click_mouse", "scroll": {"x": 1, "y": 1, "delta_y": 1}}]}, "actions.0"),
    ],
)
async def test_bad_input_is_400_naming_the_field(
    http: httpx.AsyncClient, browser: dict, action: str, body: dict, field: str
) -> None:
    r = await http.post(f"/browsers/{_sid(browser)}/computer/{action}", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "bad_request"
    assert any(d["message"].startswith(f"{field}:") for d in r.json()["details"]), r.json()


async def test_unknown_session_is_404_on_both_planes(http: httpx.AsyncClient, sdk: kernel.Kernel) -> None:
    r = await http.post("/browsers/no-such-session/computer/click_mouse", json={"x": 1, "y": 1})
    assert r.status_code == 404 and r.json()["code"] == "not_found"


async def test_control_plane_and_vm_endpoint_both_serve_computer_routes(
    http: httpx.AsyncClient, browser: dict, page: PageProbe
) -> None:
    sid = _sid(browser)
    r = await http.post(f"/browsers/{sid}/computer/click_mouse", json={"x": BUTTON_AT[0], "y": BUTTON_AT[1]})
    assert r.status_code == 200 and r.content == b""
    await page.wait_for(lambda: page.evaluate("document.getElementById('b').textContent === 'on'"))
    shown = (await http.get(f"/browsers/{sid}")).json()
    jwt = shown["cdp_ws_url"].split("jwt=", 1)[1]
    async with httpx.AsyncClient(timeout=30) as bare:  # no bearer token: the jwt alone opens the VM endpoint
        r = await bare.post(f"{shown['base_url']}/computer/get_mouse_position", params={"jwt": jwt})
        assert r.status_code == 200 and r.json() == {"x": BUTTON_AT[0], "y": BUTTON_AT[1]}
        r = await bare.post(f"{shown['base_url']}/computer/get_mouse_position")
        assert r.status_code == 401


def test_key_names_resolve_like_xdotool() -> None:
    from bbrowse.service.computer_keys import parse_combo

    assert parse_combo("Ctrl+Shift+Tab", "k", False).xdotool == "Control_L+Shift_L+Tab"
    assert parse_combo("ctrl+-", "k", False).xdotool == "Control_L+minus"
    assert parse_combo("Ctrl++", "k", False).xdotool == "Control_L+plus"
    assert parse_combo("enter", "k", False).xdotool == "Return"
    assert parse_combo("é", "k", False).xdotool == "U00E9"
    assert parse_combo("XF86AudioMute", "k", True).keys[0].x11_only


def test_page_file_is_plain_html(page_url: str) -> None:
    assert httpx.get(page_url).text.startswith("<!doctype html>")
