"""The screenshot pane against a real local service (Pilot): real Chromium when it is installed, the
service's own `browser_unavailable` answer when it has none, and an SVG snapshot with a fixed PNG.

Images are drawn with half-cell blocks here (forced), with textual-image's default 10×20 px cells, so
what the tests see does not depend on the terminal running them.
"""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from app_support import (
    PaneScreen,
    accept_save_dialog,
    make_app,
    screen_shown,
    use_downloads_dir,
    wait_for,
    wait_for_notification,
)
from browser_support import needs_chromium
from conftest import ServiceHandle
from PIL import Image as PILImage
from textual.app import App, ComposeResult
from textual_image._terminal import CellSize, get_cell_size

from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.panes.screenshot import CaptureFailed, FrameReady, LiveSource, ScreenshotPane, parse_region
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.widgets.image_view import decode_image
from bbrowse.wire import ScreenshotRegion


@pytest.fixture(autouse=True)
def fixed_cell_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cell size textual-image scales by: fixed, whatever terminal runs the tests."""
    monkeypatch.setattr(get_cell_size, "_result", CellSize(10, 20), raising=False)







@pytest.fixture
def session_id(module_session_id: str) -> str:
    """The module's session (one Chromium for the capture tests; what they capture is its blank page)."""
    return module_session_id


async def open_pane(pilot, app: BbrowseApp, session_id: str) -> ScreenshotPane:
    await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
    pane = ScreenshotPane(session_id, rendering="halfcell")
    await app.push_screen(PaneScreen(pane, "Screenshot", "screenshot"))
    pane.focus_default()
    return pane


def status(pane: ScreenshotPane) -> str:
    return str(pane.query_one("#shot-status").render())


def error_box(pane: ScreenshotPane) -> str:
    return str(pane.query_one("#shot-error").render()) if pane.query_one("#shot-error").has_class("shown") else ""


def test_parse_region() -> None:
    assert parse_region("") is None
    assert parse_region("  ") is None
    assert parse_region("1,2,30,40") == ScreenshotRegion(x=1, y=2, width=30, height=40)
    assert parse_region("1 2 30 40") == ScreenshotRegion(x=1, y=2, width=30, height=40)
    for bad in ("1,2,3", "a,b,c,d", "0,0,0,10", "-1,0,5,5", "1,2,3,4,5"):
        with pytest.raises(ValueError):
            parse_region(bad)


@pytest.mark.chromium
@needs_chromium
async def test_capture_shows_the_image_live_view_region_and_save(
    service, session_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = make_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await open_pane(pilot, app, session_id)
        # the first capture happens when the pane is first shown
        await wait_for(pilot, lambda: pane.image is not None or pane.error is not None, timeout=40)
        assert pane.error is None, pane.error
        width, height = PILImage.open(io.BytesIO(pane.png)).size
        assert pane.png.startswith(b"\x89PNG")
        assert f"{width}×{height} px" in status(pane)
        assert "captured " in status(pane) and "paused" in status(pane)

        # drawn inline with half blocks, scaled into the pane with the PNG's aspect ratio
        assert type(pane.view.query_one(".inline-image")).__name__ == "HalfcellCanvas"
        await wait_for(pilot, lambda: pane.view.geometry is not None, what="image laid out")
        cells = pane.view.geometry
        assert 0 < cells.columns <= pane.view.size.width and 0 < cells.rows <= pane.view.size.height
        assert abs((cells.columns * 10) / (cells.rows * 20) - width / height) < 0.1
        assert cells.columns == pane.view.size.width or cells.rows == pane.view.size.height  # fills one side

        # live view: continuous by default, on the browser's pushed frames (a still page pushes one), then pauses
        first = pane.captured_at
        assert "continuous" in status(pane)
        await pilot.press("a")
        assert "● live" in status(pane)
        await wait_for(pilot, lambda: pane.captured_at is not None and pane.captured_at > first, timeout=20)
        await wait_for(pilot, lambda: "● live · continuous · screencast" in status(pane), timeout=20)
        await pilot.press("a")
        assert "paused" in status(pane)
        await pilot.press("plus", "plus", "plus", "minus")
        assert "every 2s" in status(pane)
        await pilot.press("minus", "minus", "minus")
        assert "continuous" in status(pane)

        # a region gives a picture of that size
        await pilot.press("R", *"0,0,200,100", "enter")
        await wait_for(pilot, lambda: pane.image is not None and pane.image.size == (200, 100))
        assert "200×100 px" in status(pane) and "region 0,0 200×100" in status(pane)
        await pilot.press("R", "ctrl+u", "enter")  # empty clears it
        await wait_for(pilot, lambda: pane.capture_region is None and pane.image.size == (width, height))

        downloads = use_downloads_dir(monkeypatch, tmp_path)
        await pilot.press("s")
        await wait_for(pilot, lambda: screen_shown(app, SaveScreen))
        await accept_save_dialog(pilot, app, path="shots/")  # a folder in the download directory, made for it
        assert pane.last_saved is not None and pane.last_saved.parent == downloads / "shots"
        assert pane.last_saved.name.startswith(f"bbrowse-screenshot-{session_id}-")
        assert pane.last_saved.read_bytes() == pane.png
        await wait_for_notification(pilot, str(pane.last_saved))


async def test_a_region_outside_the_viewport_shows_the_error_in_the_pane(service, session_id: str) -> None:
    app = make_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await open_pane(pilot, app, session_id)
        await wait_for(pilot, lambda: not pane.capturing and (pane.image is not None or pane.error is not None), 40)
        await pilot.press("R", *"1,2,3", "enter")  # not four numbers: refused before asking
        assert "four numbers" in str(pane.query_one("#shot-region-error").render())
        await wait_for(pilot, lambda: pane.viewport is not None, what="the viewport is known")
        await pilot.press("ctrl+u", *"0,0,99999,10", "enter")  # checked against the viewport, here
        region_error = str(pane.query_one("#shot-region-error").render())
        assert "outside the" in region_error and "viewport" in region_error, region_error
        field = pane.query_one("#shot-region")
        assert field.has_focus and field.has_class("open")  # digits typed next go into the field
        await pilot.press("1")
        assert field.value.endswith("1") and isinstance(app.screen, type(app.screen))
        # a region the app cannot check (viewport unknown) is still refused by the service, in the pane
        pane.viewport = None
        await pilot.press("ctrl+u", *"0,0,99999,10", "enter")
        await wait_for(pilot, lambda: "bad_request (400)" in error_box(pane))
        assert "viewport" in error_box(pane)
        assert "failed" in status(pane)


async def test_browser_unavailable_shows_code_and_message_in_the_pane(browserless_service: ServiceHandle) -> None:
    """On the service told to use a Chromium that does not exist: every capture answers 503."""
    service = browserless_service
    async with httpx.AsyncClient(base_url=service.url, headers=service.headers, timeout=60) as http:
        created = await http.post("/browsers", json={})
        assert created.status_code == 200, created.text
        session_id = created.json()["session_id"]
        app = make_app(service)
        async with app.run_test(size=(120, 40)) as pilot:
            pane = await open_pane(pilot, app, session_id)
            await wait_for(pilot, lambda: "browser_unavailable (503)" in error_box(pane))
            assert "Chromium" in error_box(pane)
            assert "failed" in status(pane) and pane.image is None
            await pilot.press("a")  # the live view keeps the error up while it keeps failing
            await pilot.press("space")
            await wait_for(pilot, lambda: not pane.capturing)
            assert "browser_unavailable (503)" in error_box(pane)
        await http.delete(f"/browsers/{session_id}")


# snapshot --------------------------------------------------------------------------------------


def fixed_png() -> bytes:
    """A small deterministic picture: four coloured quarters and a white bar."""
    image = PILImage.new("RGB", (160, 90), (30, 30, 30))
    for (x, y), colour in zip([(0, 0), (80, 0), (0, 45), (80, 45)],
                              [(220, 60, 60), (60, 180, 90), (70, 110, 220), (230, 200, 60)], strict=True):
        image.paste(colour, (x, y, x + 80, y + 45))
    image.paste((255, 255, 255), (20, 40, 140, 50))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


class ShotApp(App):
    def compose(self) -> ComposeResult:
        yield ScreenshotPane("snap-session", auto_capture=False, rendering="halfcell")

    def on_mount(self) -> None:
        self.query_one(ScreenshotPane).show_png(fixed_png(), captured_at=datetime(2024, 5, 1, 12, 0, 5))


def test_snapshot_screenshot_pane(snap_compare) -> None:
    assert snap_compare(ShotApp(), terminal_size=(80, 24))


@pytest.mark.parametrize("gone", ["*", "#shot-error", "ImageView"])
async def test_a_capture_that_ends_while_the_pane_is_taken_apart_draws_nothing(gone: str) -> None:
    """At exit (or when the session screen closes) the pane can still be attached after some or all of its
    children have gone; a capture finishing then drew into its missing failure box, or read its missing
    picture, and the live loop's worker failed the app. The handlers draw into the widgets the pane holds:
    into a removed one that draws nothing and raises nothing."""
    app = ShotApp()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(ScreenshotPane)
        if gone == "*":
            await pane.remove_children()
        else:
            await pane.query_one(gone).remove()
        await pilot.pause()
        image = decode_image(fixed_png())
        frame = FrameReady(image, image.size, png=fixed_png())
        pane.post_message(frame)
        pane.post_message(CaptureFailed(RuntimeError("late")))
        pane.post_message(LiveSource("polling", "late"))
        await pilot.pause()
        assert frame.drawn.is_set() and pane.error is not None  # handled, nothing raised
