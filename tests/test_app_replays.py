"""The replays pane against a real service with a real Chromium and ffmpeg: record, stop, download, copy."""

from __future__ import annotations

import contextlib
import shutil

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
from textual.worker import WorkerCancelled, WorkerState

from bbrowse.humanize import human_bytes
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.panes.replays import ReplaysPane
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.widgets.transfer_bar import TransferBar
from bbrowse.wire import Browser

pytestmark = pytest.mark.skipif(
    shutil.which("ffmpeg") is None or not (shutil.which("chromium") or shutil.which("google-chrome")),
    reason="recording needs Chromium and ffmpeg",
)


async def test_record_stop_download_and_copy_the_view_url(service, http: httpx.AsyncClient, tmp_path,
                                                          monkeypatch) -> None:
    downloads = use_downloads_dir(monkeypatch, tmp_path)
    r = await http.post("/browsers", json={"timeout_seconds": 600,
                                           "start_url": "data:text/html,<h1>replay me</h1>"})
    browser = Browser.model_validate(r.json())
    app = make_app(service)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            app.push_screen(SessionScreen(browser, initial_tab="replays"))
            await wait_for(pilot, lambda: bool(app.screen.query(ReplaysPane)), what="replays pane")
            pane = app.screen.query_one(ReplaysPane)
            hint = lambda: str(pane.query_one("#replays-hint").render())  # noqa: E731
            await wait_for(pilot, lambda: "No recordings yet" in hint(), what="empty state")

            await wait_for(pilot, lambda: pane.query_one("#replays-table").has_focus, what="table focused")
            await pilot.press("r")
            await wait_for(pilot, lambda: pane.recording() is not None, what="recording listed")
            table = pane.query_one("#replays-table")
            replay_id = pane.recording().replay_id
            assert "recording" in str(table.get_cell(replay_id, "state"))
            await pilot.pause(2.0)
            await pilot.press("r")
            await wait_for(pilot, lambda: pane.recording() is None and replay_id in pane._replays,
                           timeout=30, what="recording finished")
            assert "finished" in str(table.get_cell(replay_id, "state"))

            await pilot.press("c")
            await wait_for(pilot, lambda: f"replay_id={replay_id}" in app.clipboard, what="view URL copied")
            assert "jwt=" in app.clipboard

            await pilot.press("s")
            target = downloads / f"bbrowse-replay-{replay_id}.mp4"
            await wait_for(pilot, lambda: screen_shown(app, SaveScreen), what="save dialog")
            assert app.screen.query_one("#save-path").value == str(target)
            await accept_save_dialog(pilot, app)
            await wait_for(pilot, lambda: target.exists(), timeout=30, what="downloaded file")
            await wait_for(pilot, lambda: pane.last_saved == target)
            await wait_for_notification(pilot, str(target))
            data = target.read_bytes()
            assert data[4:8] == b"ftyp" and len(data) > 1000  # an MP4, not an error body
            assert not list(downloads.glob("*.part"))
            bar = pane.query_one("#replays-progress", TransferBar)
            assert bar.total == len(data)  # the bar knew how much was coming (Content-Length), it did not pulse
            label = str(bar.query_one("#replays-progress-label").render())
            assert f"Saved {human_bytes(len(data))} to {target}" in label
    finally:
        await http.delete(f"/browsers/{browser.session_id}")


async def test_a_listing_that_comes_after_the_pane_is_gone_draws_nothing(service, session_id) -> None:
    """The pane refreshes on a timer; a listing that arrives after the pane was taken apart (the session screen
    closed, the app quit) is a message to a pane that is gone, never drawn (a worker's failure fails the app)."""
    app = make_app(service)
    async with app.run_test(size=(120, 30)) as pilot:
        pane = ReplaysPane(session_id)
        await app.push_screen(PaneScreen(pane, "Replays", "replays"))
        await wait_for(pilot, lambda: "No recordings yet" in str(pane.query_one("#replays-hint").render()))
        worker = pane.refresh_replays()
        await app.pop_screen()
        with contextlib.suppress(WorkerCancelled):  # a reply slower than the pane's removal is cancelled with it
            await worker.wait()
        await pilot.pause()
        assert not pane.is_attached
        assert worker.state in (WorkerState.SUCCESS, WorkerState.CANCELLED)
    # leaving the block raises a worker's failure, if any
