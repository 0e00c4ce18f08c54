"""The first session opened: what its screen needs was loaded while the sessions table was shown."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

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
        print("parsed while opening:", len(parses) - before, [source[-60:] for source in parses[before:]])


asyncio.run(main())
"""


@pytest.mark.skipif(ghostty_import_error() is not None, reason="libghostty is not available here")
def test_the_first_session_opened_finds_its_terminal_core_loaded(service) -> None:
    """pyghostty parses C declarations at its import and at each C type's first use: most of a second of the
    app's loop, once, at the first shell pane (a frozen app). Loaded in the background while the table shows,
    the first session's shell parses none."""
    with httpx.Client(base_url=service.url, headers=service.headers, timeout=60) as http:
        created = http.post("/browsers", json={"timeout_seconds": 120})
        try:
            done = subprocess.run([sys.executable, "-c", FIRST_SESSION, service.url, service.token, created.text],
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr[-3000:]
            assert "parsed while opening: 0" in done.stdout, done.stdout
        finally:
            http.delete(f"/browsers/{created.json()['session_id']}")
