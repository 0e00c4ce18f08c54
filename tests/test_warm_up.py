"""The first session opened: what its screen needs was loaded while the sessions table was shown."""

from __future__ import annotations

import subprocess
import sys
import types

import httpx
import pytest
from app_support import make_app, screen_shown, wait_for

from bbrowse.tui.footer import BbrowseFooter
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.terminal.core import ghostty_import_error

FIRST_SESSION = r"""
import asyncio, sys
from cffi import cparser

parses = []
parse = cparser.Parser._parse


def counted(self, source):
    parses.append(source)
    return parse(self, source)


cparser.Parser._parse = counted

from bbrowse.client import ClientConfig
from bbrowse.target import Target
from bbrowse.tui import warm_up
from bbrowse.tui.app import BbrowseApp
from bbrowse.wire import Browser

url, token, browser = sys.argv[1], sys.argv[2], Browser.model_validate_json(sys.argv[3])


async def main():
    app = BbrowseApp(target=Target(ClientConfig(url, token), "remote"))
    async with app.run_test(size=(120, 34)) as pilot:
        for _ in range(400):  # the table, then the warm-up's end (bounded: 20 s)
            if warm_up.finished.is_set():
                break
            await pilot.pause(0.05)
        assert warm_up.finished.is_set(), "no warm-up"
        assert "bbrowse.tui.screens.session" in sys.modules
        from bbrowse.tui.panes.shells import ShellTab
        from bbrowse.tui.screens.session import SessionScreen

        before = len(parses)
        app.push_screen(SessionScreen(browser))
        for _ in range(400):
            tabs = app.screen.query(ShellTab) if isinstance(app.screen, SessionScreen) else []
            if tabs and "".join(segment.text for segment in tabs[0].terminal.render_line(0)).strip():
                break
            await pilot.pause(0.05)
        else:
            raise AssertionError("the first session's shell drew nothing")
        print("parsed while opening:", len(parses) - before, [source[-60:] for source in parses[before:]])


asyncio.run(main())
"""


@pytest.mark.skipif(ghostty_import_error() is not None, reason="libghostty is not available here")
def test_the_first_session_opened_finds_its_terminal_core_loaded(browserless_service) -> None:
    """pyghostty parses C declarations at its import and at each C type's first use: most of a second of the
    app's loop, once, at the first shell pane (a frozen app). Loaded in the background while the table shows,
    the first session's shell parses none. (On the service with no Chromium: the shell pane needs no browser.)"""
    service = browserless_service
    with httpx.Client(base_url=service.url, headers=service.headers, timeout=60) as http:
        created = http.post("/browsers", json={"timeout_seconds": 120})
        assert created.status_code == 200, created.text
        try:
            done = subprocess.run([sys.executable, "-c", FIRST_SESSION, service.url, service.token, created.text],
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr[-3000:]
            assert "parsed while opening: 0" in done.stdout, done.stdout
        finally:
            http.delete(f"/browsers/{created.json()['session_id']}")


async def test_modules_the_warm_up_is_still_importing_read_as_not_loaded(browserless_service, monkeypatch) -> None:
    """While the warm-up thread imports the session screen, the app's loop may ask whether one is shown (its
    session check) and the footer whether a terminal has the focus: the modules are in sys.modules but have no
    classes yet. Each answer is "none", and the app goes on."""
    app = make_app(browserless_service)
    async with app.run_test(size=(120, 34)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        for name in ("bbrowse.tui.screens.session", "bbrowse.tui.terminal.widget"):
            monkeypatch.setitem(sys.modules, name, types.ModuleType(name))  # half imported: no classes yet
        assert app._shown_session_screen() is None
        assert app.screen.query_one(BbrowseFooter)._hint() is None
        await pilot.pause()
        assert isinstance(app.screen, SessionsScreen) and app.return_code is None
