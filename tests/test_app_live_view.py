"""The live view and interact mode of the Screenshot tab (Pilot) against a real service and a real Chromium.

A click on the picture must press the page's button at the matching pixel and the pane must then draw
it green; typed text, chords and the wheel must reach the page; the browser's mouse is marked; esc gives
the keys back to the app. What the page saw is read over the session's CDP endpoint, what the pane drew
from the half-cell canvas's own lines.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import time
import zlib
from collections.abc import AsyncIterator
from types import SimpleNamespace
from urllib.parse import urlsplit

import httpx
import pytest
from app_support import PaneScreen, make_app, screen_shown, wait_for
from browser_page import BUTTON_AT, FIELD, FIELD_AT, PageProbe, write_page
from browser_support import browser_session, needs_chromium
from PIL import Image as PILImage
from textual.app import App, ComposeResult
from textual.events import MouseScrollDown
from textual.widgets import Footer, Tabs

from bbrowse.client import BrowserClient
from bbrowse.client.screencast import Screencast
from bbrowse.client.threaded_screencast import ThreadedScreencast
from bbrowse.timeouts import bounded
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.panes.screenshot import ScreenshotPane
from bbrowse.tui.remote_input import PressKey, TypeText, translate_key
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.widgets.halfcell import CURSOR_CHAR, Geometry, HalfcellCanvas
from bbrowse.tui.widgets.image_view import ImageView
from bbrowse.tui.widgets.kitty import PLACEHOLDER, KittyCanvas

# pieces without a service ---------------------------------------------------------------


def test_pixels_and_cells_map_both_ways() -> None:
    geometry = Geometry(x=10, y=2, columns=160, rows=50, image_width=1280, image_height=800)
    assert geometry.pixel_at(10, 2) == (4, 8)  # a whole cell: its centre
    assert geometry.pixel_at(10.0001, 2.0001) == (0, 0)  # a pixel-precise pointer
    assert geometry.pixel_at(169, 51) == (1276, 792)
    assert geometry.pixel_at(9, 5) is None and geometry.pixel_at(170, 5) is None and geometry.pixel_at(20, 52) is None
    for pixel in [(0, 0), (640, 400), (1279, 799)]:
        cell = geometry.cell_of(*pixel)
        back = geometry.pixel_at(*cell)
        assert abs(back[0] - pixel[0]) < 8 and abs(back[1] - pixel[1]) < 16
    assert geometry.cell_of(1280, 0) is None


def test_keys_become_typed_text_or_x11_key_names() -> None:
    assert translate_key("a", "a") == TypeText("a")
    assert translate_key("A", "A") == TypeText("A")
    assert translate_key("space", " ") == TypeText(" ")
    assert translate_key("full_stop", ".") == TypeText(".")
    assert translate_key("é", "é") == TypeText("é")
    assert translate_key("enter", "\r") == PressKey("Return")
    assert translate_key("backspace", "\x7f") == PressKey("BackSpace")
    assert translate_key("ctrl+a", "\x01") == PressKey("Ctrl+a")
    assert translate_key("shift+tab", None) == PressKey("Shift+Tab")
    assert translate_key("ctrl+shift+left", None) == PressKey("Ctrl+Shift+Left")
    assert translate_key("alt+left", None) == PressKey("Alt+Left")
    assert translate_key("ctrl+minus", None) == PressKey("Ctrl+minus")
    assert translate_key("f5", None) == PressKey("F5")
    assert translate_key("pagedown", None) == PressKey("Page_Down")
    assert translate_key("ctrl+nosuchkey", None) is None


def payload_pixels(sent: str) -> tuple[int, int, bytes]:
    """Width, height and raw RGB pixels of the image transmitted by kitty graphics escape sequences."""
    commands = [part.split(";", 1) for part in sent.split("\x1b_G")[1:]]
    first = dict(item.split("=") for item in commands[0][0].split(","))
    data = "".join(body.removesuffix("\x1b\\") for control, body in (c for c in commands if len(c) == 2))
    return int(first["s"]), int(first["v"]), zlib.decompress(base64.b64decode(data))


async def test_kitty_frames_replace_one_image_and_an_unchanged_frame_sends_nothing() -> None:
    sent: list[str] = []

    class KittyApp(App):
        def compose(self) -> ComposeResult:
            yield KittyCanvas(write=sent.append)

    assert isinstance(ImageView(rendering="tgp")._inline, KittyCanvas)  # kitty terminals get this canvas
    app = KittyApp()
    async with app.run_test(size=(80, 24)) as pilot:
        canvas = app.query_one(KittyCanvas)
        red = PILImage.new("RGB", (160, 100), (255, 0, 0))
        canvas.show(red, size=(1280, 800))  # a scaled-down frame standing for the page
        await pilot.pause()
        assert len(sent) == 1 and f"i={canvas.image_id}," in sent[0] and "a=p,U=1" in sent[0]
        width, height, pixels = payload_pixels(sent[0])
        assert len(pixels) == width * height * 3 and pixels[:3] == b"\xff\x00\x00"
        assert (canvas.geometry.image_width, canvas.geometry.image_height) == (1280, 800)  # clicks map to the page
        cells = [canvas.render_line(y) for y in range(24)]
        placeholder_row = "".join(segment.text for segment in cells[canvas.geometry.y])
        assert PLACEHOLDER in placeholder_row
        colour = next(segment.style.color.triplet for segment in cells[canvas.geometry.y] if segment.style)
        assert (colour.red << 16 | colour.green << 8 | colour.blue) == canvas.image_id  # the cells name the image

        canvas.show(red.copy(), size=(1280, 800))  # the same pixels again: nothing goes to the terminal
        canvas.show(PILImage.new("RGB", (160, 100), (0, 255, 0)), size=(1280, 800))  # a new frame: same id
        await pilot.pause()
        assert len(sent) == 2 and f"i={canvas.image_id}," in sent[1]
        assert payload_pixels(sent[1])[2][:3] == b"\x00\xff\x00"
        assert [canvas.render_line(y) for y in range(24)] == cells  # no cell changes: Textual repaints nothing
        await canvas.remove()
        assert sent[-1] == f"\x1b_Ga=d,d=I,i={canvas.image_id},q=2\x1b\\"  # the image and its data freed


@pytest.mark.parametrize("rendering", ["sixel", "halfcell"])
async def test_a_scaled_down_frame_maps_clicks_to_the_page_in_every_rendering(rendering: str) -> None:
    class ViewApp(App):
        def compose(self) -> ComposeResult:
            yield ImageView(rendering=rendering)

    app = ViewApp()
    async with app.run_test(size=(40, 12)) as pilot:  # small: sixel encodes every pixel of the view
        view = app.query_one(ImageView)
        await pilot.pause()
        wanted = view.frame_pixels()  # what a screencast is asked for: the view's pixels
        assert wanted is not None and wanted[0] >= 40
        view.show(PILImage.new("RGB", (wanted[0], wanted[0] * 5 // 8), (0, 0, 255)), (640, 400), (1280, 800))
        await pilot.pause()
        geometry = view.geometry
        assert (geometry.image_width, geometry.image_height) == (1280, 800)
        middle = geometry.pixel_at(geometry.x + geometry.columns / 2, geometry.y + geometry.rows / 2)
        assert abs(middle[0] - 640) <= 1280 / geometry.columns and abs(middle[1] - 400) <= 800 / geometry.rows


# the live view against Chromium -----------------------------------------------------------


@pytest.fixture(scope="module")
async def browser(http: httpx.AsyncClient) -> AsyncIterator[dict]:
    async with browser_session(http, viewport={"width": 1280, "height": 800}, timeout_seconds=900) as browser:
        yield browser


@pytest.fixture
async def page(browser: dict, pages) -> AsyncIterator[PageProbe]:
    async with PageProbe.showing(browser["cdp_ws_url"], write_page(pages)) as probe:
        yield probe


def drawn_cell(canvas: HalfcellCanvas, x: int, y: int) -> tuple[str, tuple[int, int, int] | None]:
    """The character the canvas drew at (x, y) and its top half's colour."""
    position = 0
    for segment in canvas.render_line(y):
        if position <= x < position + len(segment.text):
            colour = segment.style.color if segment.style else None
            triplet = colour.triplet if colour is not None else None
            return segment.text[x - position], (tuple(triplet) if triplet else None)
        position += len(segment.text)
    return "", None


def is_green(colour) -> bool:
    return colour is not None and colour[1] > 200 and colour[0] < 80


def is_red(colour) -> bool:
    return colour is not None and colour[0] > 200 and colour[1] < 80


async def open_live_view(pilot, app: BbrowseApp, session_id: str) -> ScreenshotPane:
    await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
    pane = ScreenshotPane(session_id, rendering="halfcell", auto_capture=False)
    await app.push_screen(PaneScreen(pane, "Screenshot", "screenshot"))
    pane.focus_default()
    return pane


async def wheel_down(pilot, pane: ScreenshotPane, cell: tuple[int, int]) -> None:
    """One wheel tick down over `cell` of the view, as the terminal reports it (Pilot has no wheel helper)."""
    await pilot._post_mouse_events([MouseScrollDown], pane.view, offset=cell)


def footer_text(app: BbrowseApp) -> str:
    return " ".join(str(key.render()) for key in app.screen.query_one(Footer).query("FooterKey"))


@pytest.mark.chromium
@needs_chromium
async def test_clicking_the_live_view_presses_the_button_and_the_pane_draws_it(
    service, browser: dict, page: PageProbe
) -> None:
    app = make_app(service)
    async with app.run_test(size=(160, 45)) as pilot:
        pane = await open_live_view(pilot, app, browser["session_id"])
        await pilot.press("i")
        assert pane.interacting and pane.live and pane.view.has_focus
        assert "interacting" in str(pane.query_one("#shot-status").render())
        await wait_for(pilot, lambda: "Leave interact" in footer_text(app), what="esc shown in the footer")
        await wait_for(pilot, lambda: pane.frames >= 2 and pane.view.geometry is not None, timeout=40)
        canvas = pane.view.query_one(HalfcellCanvas)
        geometry = pane.view.geometry
        assert (geometry.image_width, geometry.image_height) == (1280, 800)
        button = geometry.cell_of(*BUTTON_AT)  # where to click, in the view
        drawn_button = canvas.geometry.cell_of(*BUTTON_AT)  # where it is drawn, in the canvas
        assert is_red(drawn_cell(canvas, *drawn_button)[1])

        await pilot.click(pane.view, offset=button)
        await page.wait_for(page.button_on)
        assert await page.evaluate("clicks") == 1
        # at the pixel under the cell clicked: within one cell's worth of pixels of the button's centre
        down_x, down_y = await page.evaluate("downAt")
        assert abs(down_x - BUTTON_AT[0]) <= 1280 / geometry.columns
        assert abs(down_y - BUTTON_AT[1]) <= 800 / geometry.rows
        # the pane draws the change, and the browser's mouse is marked where the click went
        await wait_for(pilot, lambda: is_green(drawn_cell(canvas, drawn_button[0] + 2, drawn_button[1] + 1)[1]),
                       timeout=20, what="the button drawn green")
        await wait_for(pilot, lambda: pane.mouse is not None and abs(pane.mouse[0] - BUTTON_AT[0]) < 16
                       and drawn_cell(canvas, *canvas.geometry.cell_of(*pane.mouse))[0] == CURSOR_CHAR,
                       timeout=20, what="the mouse mark on the button")

        # typing: text through `type`, chords and special keys through `press_key`
        await pilot.click(pane.view, offset=geometry.cell_of(*FIELD_AT))
        await page.wait_for(lambda: page.evaluate("document.activeElement.id === 't'"))
        await pilot.press(*"hello", "space", "w")
        await page.wait_for(lambda: page.evaluate("document.getElementById('t').value === 'hello w'"))
        await pilot.press("ctrl+a", "backspace", "X")
        await page.wait_for(lambda: page.evaluate("document.getElementById('t').value === 'X'"))
        await pilot.press("enter")
        await page.wait_for(lambda: page.evaluate("lastKey === 'Enter'"))
        # the typed X is drawn: dark pixels in the field's first characters
        first_chars = [canvas.geometry.cell_of(FIELD[0] + 20 + dx, FIELD_AT[1]) for dx in range(0, 80, 8)]
        await wait_for(pilot, lambda: any(sum(drawn_cell(canvas, *cell)[1] or (255, 255, 255)) < 300
                                          for cell in first_chars), timeout=20, what="the X drawn")

        # the wheel scrolls the page
        await wheel_down(pilot, pane, geometry.cell_of(900, 600))
        await page.wait_for(lambda: page.evaluate("window.scrollY > 0"))

        # esc leaves: the keys are the app's again
        await pilot.press("escape")
        assert not pane.interacting and not pane.view.has_focus
        await pilot.press("a")
        assert not pane.live
        await pilot.press("x")  # nothing reaches the browser any more
        assert await page.field_value() == "X"

        # focus going elsewhere (a click on the tab bar) ends interact mode and stays where it went
        await pilot.press("i")
        assert pane.interacting
        tabs = app.screen.query_one(Tabs)
        await pilot.click(tabs)
        await wait_for(pilot, lambda: not pane.interacting, what="interact mode ended by the click")
        assert tabs.has_focus


@pytest.mark.chromium
@needs_chromium
async def test_the_live_view_stops_when_the_session_is_deleted(service, http: httpx.AsyncClient) -> None:
    created = await http.post("/browsers", json={"timeout_seconds": 300})
    assert created.status_code == 200, created.text
    session_id = created.json()["session_id"]
    app = make_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await open_live_view(pilot, app, session_id)
        await pilot.press("i")
        await wait_for(pilot, lambda: pane.frames >= 1, timeout=40)
        assert (await http.delete(f"/browsers/{session_id}")).status_code in (200, 204)
        await wait_for(pilot, lambda: not pane.live, timeout=30, what="the live view stopped")
        assert not pane.interacting
        shown = str(pane.query_one("#shot-error").render())
        assert "(404)" in shown or "(410)" in shown
        assert "paused" in str(pane.query_one("#shot-status").render())


# pushed frames (Chromium's screencast through the session's cdp_ws_url) ----------------------------

ANIMATED = """<!doctype html><body style="margin:0"><canvas id="c" width="1280" height="800"></canvas><script>
const c = document.getElementById("c").getContext("2d"); let t = 0; window.animating = true;
function frame() { if (!window.animating) return; t += 9;
  c.fillStyle = `hsl(${t % 360},80%,50%)`; c.fillRect(0, 0, 1280, 800); requestAnimationFrame(frame); }
frame();
</script>"""


class AnimatedPage(PageProbe):
    ready = "window.animating === true"


@pytest.mark.chromium
@needs_chromium
async def test_pushed_frames_are_drawn_dropped_for_a_slow_reader_and_stop_on_a_still_page(
    service, browser: dict, pages
) -> None:
    client = BrowserClient(service.url, service.token)
    async with AnimatedPage.showing(browser["cdp_ws_url"], pages.url("animated.html", ANIMATED)) as page:
        # a reader four times slower than the page: it gets the newest frame each time, the rest are dropped
        # and Chromium, acknowledged only on each take, does not run ahead of it
        async with Screencast(client, browser["session_id"], max_width=160, max_height=100) as cast:
            taken = []
            while len(taken) < 4 or (cast.dropped == 0 and len(taken) < 40):
                frame = await bounded(cast.next_frame(), 20)  # no turn of the loop between the take and the check
                assert frame is not None and frame.number == cast.received  # the newest, never an older one
                taken.append(frame)
                await asyncio.sleep(0.25)
            assert cast.dropped > 0 and cast.taken == len(taken)
            assert cast.received <= cast.taken * 4 + 4, (cast.received, cast.taken)  # paced, not queued
            picture = PILImage.open(io.BytesIO(taken[-1].jpeg))
            assert picture.width <= 160 and picture.height <= 100  # scaled by Chromium, not by us
            assert (taken[-1].device_width, taken[-1].device_height) == (1280, 800)
            # a new size (the pane resized) with frames still unacknowledged: frames keep coming, at that size
            await cast.resize(80, 50)
            for _ in range(3):
                frame = await bounded(cast.next_frame(), 20)
            assert PILImage.open(io.BytesIO(frame.jpeg)).width <= 80

        app = make_app(service)
        async with app.run_test(size=(160, 45)) as pilot:
            pane = await open_live_view(pilot, app, browser["session_id"])
            await pilot.press("a")
            await wait_for(pilot, lambda: pane.source == "screencast" and pane.frames >= 5, timeout=30,
                           what="pushed frames drawn")
            await wait_for(pilot, lambda: "screencast │ 1280×800 px" in str(pane.query_one("#shot-status").render()),
                           what="the status line naming the screencast")
            assert pane.view.geometry.image_width == 1280  # clicks map to the page's pixels, not the frame's
            canvas = pane.view.query_one(HalfcellCanvas)
            middle = canvas.geometry.cell_of(320, 200)  # not the centre: the browser's mouse may be marked there
            colours = set()
            await wait_for(pilot, lambda: colours.add(drawn_cell(canvas, *middle)[1]) or len(colours) >= 3,
                           timeout=20, what="the animation drawn")
            # a still page sends nothing: no frame on the wire, nothing drawn
            await page.evaluate("window.animating = false")
            for _ in range(20):  # the frames already on their way land first
                wire = pane.wire_frames
                await pilot.pause(0.5)
                if pane.wire_frames == wire:
                    break
            wire, drawn = pane.wire_frames, pane.frames
            await pilot.pause(1.0)
            assert (pane.wire_frames, pane.frames) == (wire, drawn)
            await pilot.press("a")
            assert pane.source is None and "paused" in str(pane.query_one("#shot-status").render())


class WebSocketRefusingProxy:
    """A loopback HTTP proxy in front of the service that passes requests and refuses WebSocket upgrades
    (403), as some corporate proxies do: the session's cdp_ws_url, made from the address the app used, is
    then refused while every REST call works."""

    def __init__(self, target_url: str) -> None:
        parts = urlsplit(target_url)
        self.target = (parts.hostname, parts.port)
        self.server: asyncio.Server | None = None
        self.refused = 0

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc_info) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            if b"upgrade: websocket" in head.lower():
                self.refused += 1
                writer.write(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                await writer.drain()
                return
            up_reader, up_writer = await asyncio.open_connection(*self.target)
            up_writer.write(head)

            async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
                with contextlib.suppress(OSError):
                    while chunk := await source.read(65536):
                        sink.write(chunk)
                        await sink.drain()
                sink.close()

            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


@pytest.mark.chromium
@needs_chromium
async def test_a_threaded_screencast_connects_and_receives_while_the_callers_loop_is_held(
    service, browser: dict, pages
) -> None:
    """The wall's screencasts live on the I/O thread: their handshake and first frames need nothing of the app's
    loop (busy laying 16 tiles out as the wall opens); frames cross over when asked for, paced as before."""
    client = BrowserClient(service.url, service.token)
    async with AnimatedPage.showing(browser["cdp_ws_url"], pages.url("animated.html", ANIMATED)):
        cast = ThreadedScreencast(client, browser["session_id"], max_width=160, max_height=100,
                                  cdp_ws_url=browser["cdp_ws_url"])
        starting = asyncio.ensure_future(cast.start())
        await asyncio.sleep(0)  # the start is handed to the I/O loop...
        held_until = time.monotonic() + 30
        while cast.received == 0 and time.monotonic() < held_until:
            time.sleep(0.01)  # noqa: ASYNC251 (...and this loop is held meanwhile, as by a long layout)
        assert cast.received > 0, "no frame arrived while the caller's loop was held"
        await starting
        taken = [await bounded(cast.next_frame(), 20) for _ in range(4)]
        assert all(frame is not None and PILImage.open(io.BytesIO(frame.jpeg)).width <= 160 for frame in taken)
        assert cast.taken == 4 and cast.received <= cast.taken * 4 + 4, (cast.received, cast.taken)
        waiting = asyncio.ensure_future(cast.next_frame())
        await asyncio.sleep(0)
        waiting.cancel()  # a tile stopped while waiting: the screencast is not broken by it
        assert await bounded(cast.next_frame(), 20) is not None
        await cast.stop()
        assert not cast.running and await cast.next_frame() is None


@pytest.mark.chromium
@needs_chromium
async def test_the_live_view_polls_screenshots_where_cdp_is_refused(service, browser: dict, page: PageProbe) -> None:
    proxy = WebSocketRefusingProxy(service.url)
    async with proxy as url:
        app = make_app(SimpleNamespace(url=url, token=service.token))
        async with app.run_test(size=(120, 40)) as pilot:
            pane = await open_live_view(pilot, app, browser["session_id"])
            await pilot.press("a")
            await wait_for(pilot, lambda: pane.source == "polling" and pane.frames >= 2, timeout=30,
                           what="frames from polled screenshots")
            assert proxy.refused >= 1 and pane.wire_frames == 0
            await wait_for(pilot, lambda: "polling (CDP refused the connection (403))" in str(
                pane.query_one("#shot-status").render()) and "capture " in str(pane.query_one("#shot-status").render()),
                what="the status line saying why it polls")
            assert pane.error is None  # a refused screencast is no failure: the pictures keep coming
            canvas = pane.view.query_one(HalfcellCanvas)
            assert is_red(drawn_cell(canvas, *canvas.geometry.cell_of(*BUTTON_AT))[1])
