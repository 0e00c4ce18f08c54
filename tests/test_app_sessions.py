"""The sessions screen against a real local service, driven with Textual's Pilot.

The service is the one with no Chromium (`browserless_service`): these tests list, create, filter and
delete sessions and never use a browser, and a session there starts without launching one."""

from __future__ import annotations

import threading
import uuid

import httpx
from app_support import make_app, screen_shown, type_text, wait_for
from textual.widgets import Input

from bbrowse.client import ClientConfig
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp, StartingScreen
from bbrowse.tui.palette import BbrowsePalette
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import FooterKey


def table_ids(app) -> list[str]:
    return [key.value for key in app.screen.query_one("#sessions-table").rows]


async def test_create_filter_and_delete(
    browserless_service, browserless_http: httpx.AsyncClient
) -> None:
    name = f"ui-{uuid.uuid4().hex[:6]}"
    other = (await browserless_http.post("/browsers", json={"name": f"other-{uuid.uuid4().hex[:6]}"})).json()
    app = make_app(browserless_service)
    async with app.run_test(size=(140, 32)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and other["session_id"] in table_ids(app))
        await pilot.press("n")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "name", what="name field")
        await type_text(pilot, name, then="ctrl+s")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen)
                       and any(b.name == name for b in app.screen._browsers.values()), timeout=20)
        created = next(b for b in app.screen._browsers.values() if b.name == name)
        # the cursor sits on the new session
        table = app.screen.query_one("#sessions-table")
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == created.session_id

        await pilot.press("slash", *name, "enter")
        await wait_for(pilot, lambda: table_ids(app) == [created.session_id])
        assert app.last_filter == name

        await pilot.press("d")
        await pilot.press("y")
        await wait_for(pilot, lambda: table_ids(app) == [])
        assert "matches the filter" in str(app.screen.query_one("#sessions-empty").render())
    assert (await browserless_http.get(f"/browsers/{created.session_id}")).status_code == 410
    await browserless_http.delete(f"/browsers/{other['session_id']}")


async def test_duplicate_name_shows_the_service_error_in_the_form(
    browserless_service, browserless_http: httpx.AsyncClient
) -> None:
    name = f"taken-{uuid.uuid4().hex[:6]}"
    taken = (await browserless_http.post("/browsers", json={"name": name})).json()
    app = make_app(browserless_service)
    async with app.run_test(size=(140, 32)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "name", what="name field")
        await type_text(pilot, name, then="ctrl+s")
        error = lambda: str(app.screen.query_one("#create-error").render())  # noqa: E731
        await wait_for(pilot, lambda: "conflict" in error())
        assert "409" in error() and name in error()
    await browserless_http.delete(f"/browsers/{taken['session_id']}")


async def test_list_refreshes_live_and_keeps_the_cursor(
    browserless_service, browserless_http: httpx.AsyncClient
) -> None:
    tag = uuid.uuid4().hex[:6]
    first = (await browserless_http.post("/browsers", json={"name": f"live-{tag}-a"})).json()
    second = (await browserless_http.post("/browsers", json={"name": f"live-{tag}-b"})).json()
    app = make_app(browserless_service)
    app.last_filter = f"live-{tag}"
    async with app.run_test(size=(140, 32)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and len(table_ids(app)) == 2)
        await pilot.press("down")
        table = app.screen.query_one("#sessions-table")
        assert table.cursor_row == 1
        third = (await browserless_http.post("/browsers", json={"name": f"live-{tag}-c"})).json()
        await wait_for(pilot, lambda: len(table_ids(app)) == 3, timeout=8)
        assert table.cursor_row == 1  # still on the second session
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == second["session_id"]
        # with rows and the table focused, the footer still says what enter does (the table's hidden
        # enter used to take its place)
        shown = [(key.key, key.description) for key in app.screen.query(FooterKey) if key.display and key.region.width]
        assert ("enter", "Open") in shown, shown
    for b in (first, second, third):
        await browserless_http.delete(f"/browsers/{b['session_id']}")


async def test_help_and_a_palette_entry_for_every_action(browserless_service) -> None:
    app = make_app(browserless_service)
    async with app.run_test(size=(140, 32)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        titles = {command.title for command in app.get_system_commands(app.screen)}
        for binding in SessionsScreen.BINDINGS:
            if binding.description:
                assert binding.description in titles, binding.description
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: bool(app.screen.query("HelpPanel")), what="help panel")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: not app.screen.query("HelpPanel"), what="help panel closed")
        # choosing the palette entry runs the action: "New session" opens the form
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: screen_shown(app, BbrowsePalette), what="palette")
        await type_text(pilot, "New session")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CreateSessionScreen", what="create form")


async def test_the_sessions_listed_while_the_app_loads_are_its_first_table_and_are_not_asked_again(
    browserless_service, browserless_http: httpx.AsyncClient, monkeypatch
) -> None:
    """`bbrowse` resolves its service and lists its sessions in a thread while it loads (`target.resolve_soon`):
    the sessions screen opens with those rows drawn, and asks the service again only when its poll is due."""
    from bbrowse.client import transport
    from bbrowse.config import Profile
    from bbrowse.target import resolve_soon

    made = (await browserless_http.post("/browsers", json={"name": f"first-{uuid.uuid4().hex[:6]}"})).json()
    asked: list[str] = []
    original = transport.Transport.request

    async def request(self, method, path, **options):
        if (method, path) == ("GET", "/browsers"):
            asked.append(path)
        return await original(self, method, path, **options)

    pending = resolve_soon(Profile(name="test", kind="remote", base_url=browserless_service.url,
                                   token=browserless_service.token))
    target = pending.result(timeout=30)
    assert target.first_listing is not None and made["session_id"] in {b.session_id for b in target.first_listing}
    monkeypatch.setattr(transport.Transport, "request", request)  # the app's own calls from here on
    app = BbrowseApp(resolve=pending.result)
    async with app.run_test(size=(140, 32)) as pilot:
        # drawn as the screen mounts, not after a call of its own (the screen is current before it is mounted)
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and made["session_id"] in table_ids(app))
        await pilot.pause(0.5)
        assert asked == []
        await pilot.press("r")  # a refresh the user asks for still asks
        await wait_for(pilot, lambda: asked == ["/browsers"], what="the refresh's call")


async def test_keys_typed_while_connecting_act_on_the_sessions_table_in_order(browserless_service) -> None:
    """Typed ahead while the service is still being found (the starting screen): kept, then given to the
    sessions table once it has the keyboard, as a shell keeps type-ahead. `/` opens the filter, the rest
    types into it."""
    connect = threading.Event()

    def resolve() -> Target:
        assert connect.wait(30)
        return Target(ClientConfig(browserless_service.url, browserless_service.token), "remote")

    app = BbrowseApp(resolve=resolve)
    async with app.run_test(size=(140, 32)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, StartingScreen), what="the starting screen")
        await type_text(pilot, "/abc")
        assert isinstance(app.screen, StartingScreen)
        connect.set()
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen)
                       and app.screen.query_one("#filter", Input).value == "abc", what="the filter, typed ahead")
        assert app.screen.query_one("#filter", Input).has_focus
