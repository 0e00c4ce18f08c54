"""The app on the embedded service when that service stops under it (issue 22, item 2): `bbrowse serve
--stop` with the app open. What was listed is dimmed and marked as not updated, creating a session says
the service is not answering, a service started again on another port is found through its discovery
file, and when none comes the app starts one itself; each time it says what happened. Real services,
the real `bbrowse serve --stop`, the real app under Pilot."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
from app_support import screen_shown, wait_for, wait_for_notification
from conftest import start_service, stop_service

from bbrowse.config import defaults
from bbrowse.session_options import DEFAULT_TIMEOUT
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.screens import sessions as sessions_screen
from bbrowse.tui.screens.create_session import CreateSessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.widgets.service_bar import ServiceBar


def serve_stop() -> None:
    """What the user typed in another terminal."""
    result = subprocess.run([sys.executable, "-m", "bbrowse", "serve", "--stop"], capture_output=True,
                            env=os.environ.copy(), timeout=60)
    assert result.returncode == 0 and b"stopped bbrowse serve" in result.stdout, result


def table_ids(app) -> list[str]:
    tables = app.screen.query("#sessions-table")
    return [key.value for key in tables.first().rows] if tables else []


def bar_text(app) -> str:
    return str(app.screen.query_one(ServiceBar).render())


async def test_the_app_finds_its_embedded_service_again_or_starts_one(tmp_path, monkeypatch):
    monkeypatch.setenv("BBROWSE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("BBROWSE_CHROMIUM", "/nonexistent/chromium")  # sessions without a browser start at once
    monkeypatch.setattr(sessions_screen, "REFRESH_SECONDS", 0.3)
    monkeypatch.setattr(sessions_screen, "LONGEST_REFRESH_SECONDS", 1.0)
    # while this test looks at the disconnected app, the app waits for a service to come back by itself
    monkeypatch.setattr(BbrowseApp, "ADOPT_GRACE_SECONDS", 300.0)
    app = BbrowseApp(settings=defaults())
    second = None
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: screen_shown(app, SessionsScreen)
                           and app.connection_state == "connected", timeout=40, what="the embedded service")
            first = app.target
            assert first.kind == "embedded" and first.embedded is not None and first.embedded.owned
            first_url = first.config.base_url
            async with httpx.AsyncClient(base_url=first_url,
                                         headers={"Authorization": f"Bearer {first.config.token}"},
                                         timeout=30) as http:
                session_id = (await http.post("/browsers", json={"name": "before-the-stop"})).json()["session_id"]
            await wait_for(pilot, lambda: session_id in table_ids(app), what="the session listed")

            serve_stop()
            screen = app.screen
            await wait_for(pilot, lambda: app.connection_state == "reconnecting", what="the loss noticed")
            # what is still listed looks stale: dimmed, and a line says it is not being updated
            await wait_for(pilot, lambda: screen.has_class("-stale") and screen.query_one("#sessions-stale").display)
            assert "not answering" in str(screen.query_one("#sessions-stale").render())
            assert session_id in table_ids(app)
            assert "reconnecting" in bar_text(app)
            await wait_for_notification(pilot, f"The embedded service at {first_url} is not answering")

            # creating a session meanwhile: a sentence, not httpx's "All connection attempts failed"
            await pilot.press("n")
            await wait_for(pilot, lambda: screen_shown(app, CreateSessionScreen))
            assert app.screen.query_one("#timeout").value == str(DEFAULT_TIMEOUT)  # as `bbrowse new`'s default
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: "not answering" in str(app.screen.query_one("#create-error").render()))
            assert "All connection attempts failed" not in str(app.screen.query_one("#create-error").render())
            await pilot.press("escape")

            # the service started again by hand, on another port: found through its discovery file
            second = start_service(tmp_path / "state", extra_env={"BBROWSE_CHROMIUM": "/nonexistent/chromium"})
            assert second.url != first_url
            await wait_for(pilot, lambda: app.connection_state == "connected" and app.target.config.base_url
                           == second.url, timeout=20, what="the new service found")
            await wait_for_notification(pilot, f"reconnected to the one now at {second.url}")
            await wait_for(pilot, lambda: not app.screen.has_class("-stale") and session_id not in table_ids(app),
                           what="the list of the new service, not dimmed")
            assert second.url in bar_text(app) and "connected" in bar_text(app)

            # stopped again and none comes back: the app starts one itself, and says so
            app.ADOPT_GRACE_SECONDS = 0.5
            serve_stop()
            second.process.wait(30)  # a child of this test: reaped, or its pid would still look alive
            await wait_for(pilot, lambda: app.connection_state == "connected"
                           and app.target.config.base_url not in (first_url, second.url),
                           timeout=40, what="a new embedded service")
            await wait_for_notification(pilot, "started a new one at")
            assert app.target.embedded is not None and app.target.embedded.owned
    finally:
        if second is not None:
            stop_service(second)
        for service in app.started_services.values():
            service.stop()
