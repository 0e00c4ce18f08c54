"""A service without supervisor logs (Kernel's VM; `bbrowse serve --kernel-compat`) answers a supervisor stream
with one "logs source not available" event and ends it: the Logs pane says so once, stops asking, and offers
a file log instead."""

from __future__ import annotations

import httpx
from app_support import PaneScreen, screen_shown, wait_for, wait_for_notification
from conftest import session_area

from bbrowse.client import ClientConfig
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.panes.logs import LogsPane, OpenLogScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.widgets.log_view import LogStatus


async def test_no_supervisor_logs_offers_a_file_instead(
    browserless_compat_service, browserless_compat_http: httpx.AsyncClient
) -> None:
    """Logs only: the service with no Chromium (compat's answer does not depend on one)."""
    service, http = browserless_compat_service, browserless_compat_http
    session_id = (await http.post("/browsers", json={"timeout_seconds": 300})).json()["session_id"]
    log = session_area(service, session_id, "logs") / "app.log"  # a file of the session, as on a VM
    log.write_text("from a file\n")
    app = BbrowseApp(target=Target(ClientConfig(service.url, service.token), "remote"))
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
            pane = LogsPane(session_id)  # opens the default supervised program, as the Logs tab does
            await app.push_screen(PaneScreen(pane, "Logs", "logs"))
            await wait_for(pilot, lambda: len(pane.panels) == 1)
            panel = pane.panels[0]
            status = lambda: panel.query_one(LogStatus).text  # noqa: E731
            await wait_for(pilot, lambda: "not available on this service" in status(), what="said once")
            await wait_for(pilot, lambda: not any(w.node is panel and w.is_running for w in app.workers),
                           what="no reconnecting loop")
            # the panel's message reaches the pane after its worker ends: waited for, as its notice is
            await wait_for(pilot, lambda: pane.supervisor_logs_unavailable, what="the pane knows")
            await wait_for_notification(pilot, "no supervisor logs")

            await pilot.press("o")
            await wait_for(pilot, lambda: screen_shown(app, OpenLogScreen))
            form = app.screen
            assert form.by_path and form.query_one("#open-log-path").has_focus
            form.query_one("#open-log-path").value = str(log)
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: len(pane.panels) == 2)
            await wait_for(pilot, lambda: pane.panels[1].view.buffer.snapshot() == ["from a file"])
    finally:
        await http.delete(f"/browsers/{session_id}")
