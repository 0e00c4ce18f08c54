"""The Events tab against a real service and Chromium: `t` turns the session's telemetry on, a page's console error
and failed request show up live, stand out, filter by category and by regex, follow and pause, details (a
request's headers, an exception's stack), `c` copies the event as JSON, `v` shows the replay's frame at the event
and `.` steps a frame; a deleted session, listed with `a` on the sessions table, opens read-only and its kept
events still show."""

from __future__ import annotations

import shutil

import httpx
import pytest
from app_support import make_app, screen_shown, wait_for
from textual.widgets import DataTable

from bbrowse.client.telemetry import summary
from bbrowse.tui.panes.events import EventList, EventsPane
from bbrowse.tui.panes.screenshot import ScreenshotPane
from bbrowse.tui.screens.session import EndedPane, SessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import notifications
from bbrowse.wire import Browser
from tests.browser_page import PageProbe
from tests.browser_support import needs_chromium

pytestmark = [needs_chromium, pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="replays need ffmpeg")]

PAGE = ("data:text/html,<h1>events</h1><script>console.log('step 36 ok');"
        "fetch('http://127.0.0.1:9/api/step37').catch(()=>{});"
        "setTimeout(()=>{throw new Error('failed at step 37')},0);window.clicks=0</script>")


async def test_the_events_tab_shows_filters_details_and_copies(service, http: httpx.AsyncClient) -> None:
    r = await http.post("/browsers", json={"timeout_seconds": 300})  # no telemetry yet: `t` turns it on
    browser = Browser.model_validate(r.json())
    app = make_app(service)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            app.push_screen(SessionScreen(browser, initial_tab="replays"))
            await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "replays-table",
                           what="the replays tab shown")
            await pilot.press("6")
            await wait_for(pilot, lambda: bool(app.screen.query(EventsPane)), what="events pane")
            pane = app.screen.query_one(EventsPane)
            events = pane.query_one(EventList)
            await wait_for(pilot, lambda: events.has_focus, what="list focused")
            await pilot.press("t")
            await wait_for(pilot, lambda: any("Recording console, network and page events" in n.message
                                              for n in notifications(app)), what="telemetry turned on")

            recording = (await http.post(f"/browsers/{browser.session_id}/replays", json={})).json()["replay_id"]
            async with PageProbe.showing(browser.cdp_ws_url, PAGE):
                await wait_for(pilot, lambda: any(e.event.type == "console_error" for e in events.rows),
                               timeout=20, what="the exception listed live")
                await pilot.pause(1.0)  # the recording goes on past the error, so its frame is in it
            await http.post(f"/browsers/{browser.session_id}/replays/{recording}/stop")
            lines = [events.render_line(y).text for y in range(events.size.height)]
            assert any("console_error" in line and "Uncaught Error: failed at step 37" in line for line in lines)
            error_row = next(i for i, e in enumerate(events.rows) if e.event.type == "console_error")
            assert next(iter(events.render_line(error_row - events.scroll_offset.y))).style.color.name == "red"

            await pilot.press("f")  # console
            assert pane.category == "console" and {e.event.category for e in events.rows} == {"console"}
            await pilot.press("f", "f", "f", "f", "f", "f", "f")  # network, page, control, connection, system,
            # platform, all
            assert pane.category is None
            await pilot.press("slash")
            await pilot.press(*"failed.at", "enter")
            await wait_for(pilot, lambda: events.has_focus, what="back on the list")
            shown = {e.event.type for e in events.rows}
            assert "console_error" in shown and "console_log" not in shown
            await pilot.press("slash")
            pane.query_one("#events-search").value = ""
            await pilot.press("enter")
            await wait_for(pilot, lambda: pane.pattern is None and events.has_focus, what="filter cleared")

            await pilot.press("space")
            assert not pane.following
            failed = next(i for i, e in enumerate(events.rows) if e.event.type == "network_loading_failed")
            events.select(failed)
            await pilot.press("enter")
            detail = str(pane.query_one("#events-detail").render())
            assert "request headers:" in detail and "timing:" in detail and "ERR_" in detail
            thrown = next(i for i, e in enumerate(events.rows) if e.event.type == "console_error")
            events.select(thrown)
            await pilot.pause()
            assert "stack:" in str(pane.query_one("#events-detail").render())
            await pilot.press("c")
            assert '"failed at step 37' in app.clipboard or "failed at step 37" in app.clipboard
            assert f'"seq":{events.rows[thrown].seq}' in app.clipboard

            await pilot.press("v")  # the replay's frame at the exception: ffmpeg on the downloaded recording
            status = pane.query_one("#events-status")
            await wait_for(pilot, lambda: f"replay {recording} at" in str(status.render()), timeout=40,
                           what="the replay's frame at the event")
            frame = pane.query_one("#events-frame")
            assert frame.has_class("active") and "▀" in str(frame.render())
            at = str(status.render())
            await pilot.press("full_stop")
            await wait_for(pilot, lambda: str(status.render()) != at, what="a frame on")

            # the live view (a CDP screencast) is a live view to the service, the page probe a CDP client
            await pilot.press("4")
            await wait_for(pilot, lambda: bool(app.screen.query(ScreenshotPane)), what="the screenshot tab")
            shot = app.screen.query_one(ScreenshotPane)
            if not shot.live:
                await pilot.press("a")
            await wait_for(pilot, lambda: shot.source == "screencast" and shot.frames >= 1, timeout=30,
                           what="the live view's screencast")
            await pilot.press("a")  # live off: the screencast's connection ends
            await pilot.press("6")
            await wait_for(pilot, lambda: any(e.event.type == "live_view_disconnect" for e in pane.events),
                           timeout=20, what="the live view's disconnect in the tab")
            live_lines = [summary(e) for e in pane.events if e.event.type.startswith("live_view_")]
            assert live_lines[0].startswith("live view lv_") and " after " in live_lines[-1], live_lines
        await check_connection_events_with_the_sdk(service, browser.session_id)

        await http.delete(f"/browsers/{browser.session_id}")
        app = make_app(service)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.screen._loaded,
                           what="the sessions table")
            table = app.screen.query_one(DataTable)
            assert browser.session_id not in table.rows  # active sessions only
            await pilot.press("a")  # ended sessions too
            await wait_for(pilot, lambda: browser.session_id in table.rows, what="the deleted session listed")
            table.move_cursor(row=table.get_row_index(browser.session_id))
            assert "deleted" in str(table.get_cell(browser.session_id, "state"))
            await pilot.press("enter")
            await wait_for(pilot, lambda: screen_shown(app, SessionScreen), what="its session screen")
            screen = app.screen
            await wait_for(pilot, lambda: screen.tabbed.active == "replays" and screen.query("ReplaysPane"),
                           what="read-only: on its replays")
            hint = screen.query_one("#replays-hint")
            await wait_for(pilot, lambda: "ended" in hint.hint, what="the replays hint of an ended session")
            assert "record" not in hint.hint.replace("recordings", ""), hint.hint  # no "press r to start recording"
            await pilot.press("6")
            await wait_for(pilot, lambda: bool(screen.query(EventsPane)), what="events pane")
            pane = screen.query_one(EventsPane)
            await wait_for(pilot, lambda: pane.ended is not None and len(pane.events) > 5,
                           what="a deleted session's kept events")
            assert any(e.event.type == "console_error" for e in pane.events) and "ended" in pane.ended
            await pilot.press("1")  # no shell on an ended session: a line saying so; nothing kept alive
            await wait_for(pilot, lambda: screen.query_one("#shells").query(EndedPane), what="shells tab")
            assert not screen.query("ShellsPane") and screen._keepalive is None
            app.session_ended(browser.session_id)  # what the app's watch would say of a session gone
            await pilot.pause()
            assert app.screen is screen and not any("has ended" in n.message for n in notifications(app))
            await pilot.press("5", "r")  # no recording on an ended session: the refusal is said, not swallowed
            await wait_for(pilot, lambda: any(n.severity == "error" for n in notifications(app)),
                           what="the refusal shown")
    finally:
        await http.delete(f"/browsers/{browser.session_id}")


async def check_connection_events_with_the_sdk(service, session_id: str) -> None:
    """The official SDK reads the app's live view as live_view_connect/disconnect (one id, a duration) and the
    page probe's raw CDP connection as cdp_connect/disconnect, in `events` by category and in `stream`."""
    from kernel import AsyncKernel

    async with AsyncKernel(api_key=service.token, base_url=service.url, max_retries=0) as k:
        page = await k.browsers.telemetry.events(session_id, category=["connection"], limit=100)
        connections = [e.event for e in page.items]
        types = [event.type for event in connections]
        assert {"cdp_connect", "cdp_disconnect", "live_view_connect", "live_view_disconnect"} <= set(types), types
        live = [event for event in connections if event.type.startswith("live_view_")]
        assert len({event.data.session_id for event in live}) == 1 and live[-1].data.duration_ms > 0
        assert all(event.category == "connection" for event in connections)
        stream = await k.browsers.telemetry.stream(session_id, replay="all",
                                                   type=["live_view_connect", "live_view_disconnect"])
        try:
            streamed = [(await stream.__anext__()).event for _ in range(2)]
        finally:
            await stream.close()
        assert [(e.type, e.data.session_id) for e in streamed] == [(e.type, e.data.session_id) for e in live[:2]]
