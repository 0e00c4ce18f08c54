"""The Logs tab as a newcomer meets it (issue 22): the search and filter prompts show what is typed, with a
label, at 160×45 and 80×24; `t` shows a line's own time; a missing path says so once; a log opened twice is
focused, not doubled; saving with a filter says what it saved. Against a real service, driven with Pilot."""

from __future__ import annotations

import uuid

import pytest
from app_support import accept_save_dialog, make_app, screen_shown, type_text, use_downloads_dir, wait_for
from conftest import ServiceHandle
from textual.app import ComposeResult
from textual.screen import Screen

from bbrowse.client import BrowserClient
from bbrowse.tui.footer import BbrowseFooter
from bbrowse.tui.panes.logs import LogsPane, LogTarget
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import notifications, screen_lines
from bbrowse.tui.widgets.log_view import LogPanel, LogStatus, format_timestamp, line_time
from bbrowse.wire import LogSource


class LogsScreen(Screen):
    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id

    def compose(self) -> ComposeResult:
        yield LogsPane(self.session_id, open_default=False)
        yield BbrowseFooter()


def screen_text(app) -> str:
    return "\n".join(screen_lines(app.screen))


def status(panel: LogPanel) -> str:
    return panel.query_one(LogStatus).text


@pytest.fixture(scope="module")
def service(browserless_service: ServiceHandle) -> ServiceHandle:
    """The service with no Chromium, for every test here (overrides conftest's): the panes show files, never a
    browser."""
    return browserless_service


@pytest.fixture(scope="module")
def session_id(browserless_module_session_id: str) -> str:
    """One session for the module on that service (overrides conftest's per-test one)."""
    return browserless_module_session_id


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_search_and_filter_prompts_show_what_is_typed_with_a_label(service, session_id, size) -> None:
    path = f"/tmp/prompt-{uuid.uuid4().hex[:8]}.log"
    client = BrowserClient(service.url, service.token)
    await client.fs.write_file(session_id, path, "".join(f"line {i} {'odd' if i % 2 else 'even'}\n"
                                                        for i in range(10)).encode())
    app = make_app(service)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        await app.push_screen(LogsScreen(session_id))
        pane = app.screen.query_one(LogsPane)
        panel = await pane.open_log(LogTarget(LogSource.PATH, path))
        await wait_for(pilot, lambda: "10 lines" in status(panel))
        for key, label, typed in (("slash", "search", "odd"), ("f", "filter", "even")):
            await pilot.press(key)
            await type_text(pilot, typed)
            await pilot.pause()
            shown = screen_text(app)
            assert any(f" {label} " in line and typed in line for line in shown.split("\n")), (label, shown)
            await pilot.press("enter")
        await wait_for(pilot, lambda: "filter 'even': 5 shown" in status(panel), what="the filter applied")


async def test_line_times_missing_paths_a_log_opened_twice_and_saving_with_a_filter(
    service, session_id, monkeypatch, tmp_path
) -> None:
    downloads = use_downloads_dir(monkeypatch, tmp_path)
    path = f"/tmp/times-{uuid.uuid4().hex[:8]}.log"
    client = BrowserClient(service.url, service.token)
    await client.fs.write_file(session_id, path,
                               b"2026-11-26T09:15:01.250 own time\nno time here\n"
                               b"2026-11-26T09:15:02.500 error two\n")
    app = make_app(service)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        await app.push_screen(LogsScreen(session_id))
        pane = app.screen.query_one(LogsPane)
        panel = await pane.open_log(LogTarget(LogSource.PATH, path))
        await wait_for(pilot, lambda: "3 lines" in status(panel))
        await pilot.press("t")
        await wait_for(pilot, lambda: " 09:15:01.250 2026-11-26T09:15:01.250 own time" in screen_text(app),
                       what="the line's own time")
        assert "~" in next(line for line in screen_text(app).split("\n") if "no time here" in line)
        assert "~ when read" in status(panel)

        # the same log again: the pane there is focused, no second one
        again = await pane.open_log(LogTarget(LogSource.PATH, path))
        assert again is panel and len(pane.panels) == 1

        # save with an active filter saves what is shown, and says which
        await pilot.press("f")
        await type_text(pilot, "error", then="enter")
        await wait_for(pilot, lambda: "1 shown" in status(panel))
        await pilot.press("ctrl+s")
        await accept_save_dialog(pilot, app)
        saved = list(downloads.glob("*.log"))
        for _ in range(100):
            saved = list(downloads.glob("*.log"))
            if saved:
                break
            await pilot.pause(0.05)
        assert [p.read_text() for p in saved] == ["2026-11-26T09:15:02.500 error two\n"]
        assert any("filter 'error'" in n.message for n in notifications(app))

        # a path that does not exist: one clear error, not "following" and "stopped" at once
        missing = await pane.open_log(LogTarget(LogSource.PATH, "/tmp/no-such-dir/none.log"))
        await wait_for(pilot, lambda: "stopped" in status(missing), what=f"stopped: {status(missing)!r}")
        assert "following" not in status(missing)
        assert "Could not open /tmp/no-such-dir/none.log" in screen_text(app)


def test_line_time_forms() -> None:
    assert line_time("2026-11-26T09:15:01.250Z x") is not None
    assert line_time("[2026-11-26 09:15:01,250] x") == "09:15:01.250"
    assert line_time("[1234:5678:1126/091501.250:INFO:x.cc(1)] y") == "09:15:01.250"
    assert line_time("Nov 26 09:15:01 host prog: z") == "09:15:01.000"
    assert line_time("no time") is None
    assert format_timestamp(0.0, "plain").strip() == ""
    assert format_timestamp(1.0, "plain").startswith("~")
