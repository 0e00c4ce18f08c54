"""The command palette lists every action of the app from any screen, the global ones first, and nothing
else: no "Cursor down" or "Home" from Textual's own widgets."""

from __future__ import annotations

import httpx
import pytest
from app_support import make_app, screen_shown, type_text, wait_for
from textual.command import CommandList, CommandPalette

from bbrowse.tui.palette import own_bindings
from bbrowse.tui.panes.files import FilesPane
from bbrowse.tui.panes.logs import LogsPane
from bbrowse.tui.panes.replays import ReplaysPane
from bbrowse.tui.panes.screenshot import ScreenshotPane
from bbrowse.tui.panes.shells import ShellsPane
from bbrowse.tui.screens.create_session import CreateSessionScreen
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.wire import Browser

GLOBAL = ["New session…", "Sessions", "Session wall", "Switch profile…", "Change theme…", "Keys", "Quit"]


@pytest.fixture(scope="module")
async def browser(browserless_http: httpx.AsyncClient):
    """A session for the session screen to show, on the service without Chromium: the palette lists actions."""
    r = await browserless_http.post("/browsers", json={"timeout_seconds": 900})
    yield Browser.model_validate(r.json())
    await browserless_http.delete(f"/browsers/{r.json()['session_id']}")


async def listed(pilot, app) -> list[str]:
    """Open the palette and read what it lists before anything is typed."""
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: screen_shown(app, CommandPalette) and app.screen.query(CommandList))
    commands = app.screen.query_one(CommandList)
    await wait_for(pilot, lambda: commands.option_count > len(GLOBAL))
    return [str(commands.get_option_at_index(i).prompt).split("\n")[0] for i in range(commands.option_count)]


async def test_from_a_session_the_palette_has_the_global_actions_first_then_every_tab_s(
    browserless_service, browser: Browser
) -> None:
    app = make_app(browserless_service)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        app.push_screen(SessionScreen(browser, initial_tab="replays"))
        await wait_for(pilot, lambda: screen_shown(app, SessionScreen) and app.screen.query(ReplaysPane))
        titles = await listed(pilot, app)
        assert titles[: len(GLOBAL)] == GLOBAL
        # every pane's actions, opened or not yet, and nothing that is not a bbrowse action
        wanted = {b.description for pane in (ShellsPane, LogsPane, FilesPane, ScreenshotPane, ReplaysPane)
                  for b in own_bindings(pane)}
        assert wanted <= set(titles), wanted - set(titles)
        ours = set(GLOBAL) | {b.description for cls in _bbrowse_classes() for b in own_bindings(cls)}
        assert set(titles) <= ours, set(titles) - ours
        assert not {"Cursor down", "Cursor up", "Home", "End", "Page down", "Scroll up"} & set(titles)

        # "new session" from the Replays tab opens the form
        await type_text(pilot, "new session")
        commands = app.screen.query_one(CommandList)
        await wait_for(pilot, lambda: commands.option_count >= 1
                       and str(commands.get_option_at_index(0).prompt).startswith("New session"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_shown(app, CreateSessionScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen_shown(app, SessionScreen))

        # a tab not opened yet: its action opens it and runs there
        assert not app.screen.query(ScreenshotPane)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: screen_shown(app, CommandPalette) and app.screen.query(CommandList))
        await type_text(pilot, "live on")
        commands = app.screen.query_one(CommandList)
        await wait_for(pilot, lambda: commands.option_count >= 1
                       and str(commands.get_option_at_index(0).prompt).startswith("Live on/off"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_shown(app, SessionScreen) and app.screen.tabbed.active == "screenshot"
                       and app.screen.query(ScreenshotPane) and app.screen.query_one(ScreenshotPane).live)


def _bbrowse_classes() -> list[type]:
    import textual.dom

    found, pending = [], [textual.dom.DOMNode]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("bbrowse."):
            found.append(cls)
    return found
