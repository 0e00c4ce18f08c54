"""The app's own screens as a newcomer meets them at 80×24 (issue 22, items 10, 11, 15, 17, 18, 20, 21):
dialogs fit whole with their own keys in the footer, the footer never ends in a cut word, the palette names
keys as a person does, the theme picker marks the theme in use, notifications leave a dialog's buttons
visible, and a session that ends while its screen is open is said once, at the screen's level. Real app,
real service: the one with no Chromium where no browser is needed; the double submit on the one with Chromium,
whose start keeps the first creation on its way."""

from __future__ import annotations

import uuid

from app_support import make_app, screen_shown, wait_for, wait_for_notification
from textual.binding import Binding
from textual.command import CommandList, CommandPalette
from textual.widgets import Button, RadioButton

from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.palette import key_label
from bbrowse.tui.panes.logs import OpenLogScreen
from bbrowse.tui.screens.create_session import CreateSessionScreen
from bbrowse.tui.screens.quit import QuitScreen
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import FooterKey, notifications


def footer_keys(screen) -> tuple[list[FooterKey], FooterKey | None]:
    """(the keys shown in the screen's own footer, left to right; its palette key)."""
    keys = [key for key in screen.query(FooterKey) if key.display and key.region.width]
    palette = next((key for key in keys if key.has_class("-command-palette")), None)
    return [key for key in keys if key is not palette], palette


async def assert_whole(pilot, screen, expected: str) -> list[str]:
    """Once the footer shows `expected`: every key of it is shown whole (none runs under the palette key or
    off the screen)."""
    await wait_for(pilot, lambda: expected in [key.description for key in footer_keys(screen)[0]],
                   what=f"{expected!r} in the footer")
    await pilot.pause(0.1)
    keys, palette = footer_keys(screen)
    limit = palette.region.x if palette is not None else screen.size.width
    for key in keys:
        assert key.region.right <= limit, (key.description, key.region, limit)
    return [key.description for key in keys]


def assert_fits(screen) -> None:
    """Each button of the dialog is inside the screen, whole, and not under the dialog's footer."""
    height = screen.size.height
    for button in screen.query(Button):
        region = button.region
        assert region.width and region.height and region.bottom <= height - 1, (button.id, region, height)


async def test_dialogs_footer_palette_and_notifications_at_80_by_24(browserless_service):
    app = make_app(browserless_service)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.screen._loaded)
        await pilot.pause(0.2)
        # the sessions footer: whole keys only (it ended in "P Pro")
        shown = await assert_whole(pilot, app.screen, "New session")
        assert "Quit" in shown

        # the palette: a person's key names, not Textual's (alt+2 arrives as `trade_mark_sign` in xterm)
        labels = [key_label(app.screen, b) for b in SessionScreen.BINDINGS if "show_tab" in b.action]
        assert labels[:2] == ["alt+1, 1", "alt+2, 2"], labels
        assert app.get_key_display(Binding("trade_mark_sign", "")) == "™"

        # the theme picker marks the theme in use
        app.action_change_theme()
        await wait_for(pilot, lambda: screen_shown(app, CommandPalette) and app.screen.query(CommandList))
        commands = app.screen.query_one(CommandList)
        await wait_for(pilot, lambda: commands.option_count > 5)
        prompts = [str(commands.get_option_at_index(i).prompt) for i in range(commands.option_count)]
        current = [p for p in prompts if "(current)" in p]
        assert len(current) == 1 and current[0].startswith(app.theme), current
        # ... and opens on it, not on the first entry
        assert prompts[0] != current[0]
        assert commands.highlighted is not None and prompts[commands.highlighted] == current[0]
        # the palette's own footer (esc), not the sessions screen's behind it
        shown = await assert_whole(pilot, app.screen, "Exit the command palette")
        assert "New session" not in shown, shown
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))

        # the new-session form: every field and both buttons in view, its own keys in the footer
        await pilot.press("n")
        await wait_for(pilot, lambda: screen_shown(app, CreateSessionScreen))
        form = app.screen
        await pilot.pause(0.2)
        assert form.query_one("#create-fields").max_scroll_y == 0  # Headless and the timeout not hidden
        for field in ("#timeout", "#headless"):
            assert form.query_one(field).region.height, field
        assert_fits(form)
        shown = await assert_whole(pilot, form, "Create")
        assert "Create" in shown and "Cancel" in shown and "New session" not in shown, shown
        # a notification leaves the buttons visible
        app.notify("A notice\nof two lines", title="Notice")
        await wait_for(pilot, lambda: form.query("Toast"))
        await pilot.pause(0.2)
        for toast in form.query("Toast"):
            for button in form.query(Button):
                assert not toast.region.overlaps(button.region), (toast.region, button.id, button.region)
        await pilot.press("escape")

        # the other dialogs fit too, with their own keys
        for dialog, expected in ((QuitScreen(2, "http://127.0.0.1:1"), "Quit and stop"),
                                 (ConfirmScreen("Delete session x?\nIts processes stop.", "Delete"), "Yes"),
                                 (SaveScreen("Save log", "x.log"), "Save"),
                                 (OpenLogScreen(app.connected_client(), "no-such-session"), "Open")):
            await app.push_screen(dialog)
            await wait_for(pilot, lambda dialog=dialog: app.screen is dialog)
            await pilot.pause(0.2)
            assert_fits(dialog)
            await assert_whole(pilot, dialog, expected)
            if isinstance(dialog, OpenLogScreen):  # one choice marked, not two ● (the off one was a dim ●)
                marks = [button.render().plain for button in dialog.query(RadioButton)]
                assert len(marks) == 2 and sum("●" in mark for mark in marks) == 1, marks
            app.pop_screen()
            await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))


async def test_a_double_submit_of_the_form_creates_one_session(service, http):
    app = make_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.screen._loaded)
        before = set(app.screen._browsers)
        await pilot.press("n")
        await wait_for(pilot, lambda: screen_shown(app, CreateSessionScreen))
        form = app.screen
        form.action_submit()
        await wait_for(pilot, lambda: "Creating" in str(form.query_one("#create-error").render()))
        form.action_submit()  # enter again while the first creation is on its way
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen), timeout=60)
        await pilot.pause(1.0)
    listed = (await http.get("/browsers", params={"limit": 100})).json()
    new = [b["session_id"] for b in listed if b["session_id"] not in before]
    for session_id in new:
        await http.delete(f"/browsers/{session_id}")
    assert len(new) == 1, new


async def test_a_session_that_ends_while_open_is_said_once_and_the_screen_closes(
    browserless_service, browserless_http, monkeypatch
):
    http = browserless_http
    monkeypatch.setattr(BbrowseApp, "SESSION_WATCH_SECONDS", 0.5)  # checked every 0.5 s at first, not 5 s
    name = f"ends-{uuid.uuid4().hex[:6]}"
    session_id = (await http.post("/browsers", json={"name": name})).json()["session_id"]
    app = make_app(browserless_service)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen)
                       and session_id in app.screen._browsers)
        # enter seen twice (the screen's binding and the table's RowSelected): one session screen
        sessions = app.screen
        table = sessions.query_one("#sessions-table")
        table.move_cursor(row=table.get_row_index(session_id))
        sessions.action_open()
        sessions.action_open()
        await wait_for(pilot, lambda: screen_shown(app, SessionScreen))
        await pilot.pause(0.3)
        assert [type(s).__name__ for s in app.screen_stack].count("SessionScreen") == 1
        await pilot.press("2")  # a tab streaming from the session
        await pilot.pause(0.5)
        await http.delete(f"/browsers/{session_id}")  # elsewhere

        message = await wait_for_notification(pilot, f"Session {name} has ended")
        assert "timed out or was deleted elsewhere" in message
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen), what="back on the sessions table")
        await pilot.pause(1.0)
        about_it = [n for n in notifications(app) if name in n.message or session_id in n.message
                    or "session_gone" in n.message]
        assert len(about_it) == 1, [n.message for n in about_it]  # one notice, no per-tab errors
