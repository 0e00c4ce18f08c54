"""The log panes against a real local service, driven with Textual's Pilot, plus a snapshot of a fixed pane.

A test writes a file in a directory of the session (`session_area`: a session's sandbox sees none of this
machine's directories) and the pane follows it over real HTTP and SSE; the reconnection test puts a real TCP
proxy between the app and the service and cuts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import uuid
from pathlib import Path

import httpx
import pytest
from app_support import accept_save_dialog, screen_shown, type_text, use_downloads_dir, wait_for
from conftest import ServiceHandle, session_area
from textual import events
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import OptionList

from bbrowse.client import BrowserClient, ClientConfig
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.footer import BbrowseFooter
from bbrowse.tui.logbuffer import gap_text
from bbrowse.tui.panes.logs import LogsPane, LogTarget, OpenLogScreen, PathSuggester
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import notifications
from bbrowse.tui.widgets.log_view import LogPanel, LogStatus, LogView
from bbrowse.wire import LogSource


def make_app(url: str, token: str) -> BbrowseApp:
    return BbrowseApp(target=Target(ClientConfig(url, token), "remote"))


@pytest.fixture(scope="module")
def service(browserless_service: ServiceHandle) -> ServiceHandle:
    """The service with no Chromium, for every test here (overrides conftest's): the panes show files and the
    service's own log, never a browser (its `chromium` log, the default pane, is offered all the same)."""
    return browserless_service


@pytest.fixture(scope="module")
def http(browserless_http: httpx.AsyncClient) -> httpx.AsyncClient:
    """Raw HTTP to that same service (overrides conftest's)."""
    return browserless_http


@pytest.fixture(scope="module")
def session_id(browserless_module_session_id: str) -> str:
    """One session for the module (overrides conftest's per-test one): these tests use its files, not a browser;
    each test works in a directory of its own (`area`)."""
    return browserless_module_session_id


@pytest.fixture
def area(service: ServiceHandle, session_id: str) -> Path:
    """A fresh directory of the test's session for its log files: str() is the path inside the session, what the
    pane is given; writing and appending act on the same files from outside (conftest.session_area)."""
    return session_area(service, session_id, f"logs-{secrets.token_hex(4)}")


class LogsScreen(Screen):
    """What the session screen's Logs tab holds, on a screen of its own."""

    def __init__(self, session_id: str, open_default: bool = False) -> None:
        super().__init__()
        self.session_id = session_id
        self.open_default = open_default

    def compose(self) -> ComposeResult:
        yield LogsPane(self.session_id, open_default=self.open_default)
        yield BbrowseFooter()


async def open_logs_screen(app: BbrowseApp, pilot, session_id: str, open_default: bool = False) -> LogsPane:
    await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
    await app.push_screen(LogsScreen(session_id, open_default))
    await pilot.pause()
    return app.screen.query_one(LogsPane)


def screen_rows(view: LogView) -> list[str]:
    """The rows the view draws right now, as plain text."""
    return ["".join(segment.text for segment in view.render_line(y)).rstrip()
            for y in range(view.scrollable_content_region.height)]


def status(panel: LogPanel) -> str:
    return panel.query_one(LogStatus).text


def append(path: Path, *lines: str) -> None:
    with path.open("a") as out:
        out.write("".join(line + "\n" for line in lines))


async def test_a_line_appended_to_a_file_appears_in_a_pane_opened_with_the_form(
    service, session_id: str, area: Path
) -> None:
    log = area / "app-events.log"
    log.write_text("existing one\nexisting two\n")
    app = make_app(service.url, service.token)
    async with app.run_test(size=(120, 30)) as pilot:
        pane = await open_logs_screen(app, pilot, session_id)
        assert "No log open" in str(pane.query_one("#logs-empty").render())
        await pilot.press("o")
        # the list of programs first: it grows the centred form, which moves the radio buttons up
        await wait_for(pilot, lambda: screen_shown(app, OpenLogScreen)
                       and app.screen.query_one(OptionList).option_count > 0)
        await pilot.click("#source-path")
        await type_text(pilot, f"{area}/app-ev")
        path_input = app.screen.query_one("#open-log-path")
        # completed from list_files of the directory being typed; → accepts the completion
        await wait_for(pilot, lambda: path_input._suggestion == str(log))
        await pilot.press("right")
        assert path_input.value == str(log)
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(pane.panels) == 1)
        panel = pane.panels[0]
        view = panel.view
        assert panel.title == str(log) and app.screen.focused is view
        await wait_for(pilot, lambda: "existing two" in screen_rows(view))  # the last lines of history
        marker = f"appended {uuid.uuid4().hex}"
        append(log, marker)
        await wait_for(pilot, lambda: marker in screen_rows(view))
        assert screen_rows(view).index(marker) == screen_rows(view).index("existing two") + 1
        assert "3 lines" in status(panel) and "● live" in status(panel) and "● following" in status(panel)


async def test_path_completion_lists_a_directory_once_however_fast_the_keys_come(
    service, session_id: str, area: Path
) -> None:
    """The form asks for a suggestion at every key; a quick typist (or a paste) must not send one `list_files`
    of the same directory per character (a directory of 29,000 entries made the completion take 10 s)."""
    (area / "app-events.log").write_text("x\n")
    (area / "apples").mkdir()
    client = BrowserClient(service.url, service.token)
    listed: list[str] = []
    list_files = client.fs.list_files

    async def counted(session: str, path: str):
        listed.append(path)
        return await list_files(session, path)

    client.fs.list_files = counted  # type: ignore[method-assign]  # the real call, counted
    suggester = PathSuggester(client, session_id)
    typed = [f"{area}/{prefix}" for prefix in ("a", "ap", "app", "app-", "app-e", "appl")]
    answers = await asyncio.gather(*(suggester.get_suggestion(value) for value in typed))
    assert answers == [f"{area}/app-events.log"] * 5 + [f"{area}/apples/"]
    assert listed == [str(area)]


async def test_search_highlights_matches_and_n_moves_between_them(service, session_id: str, area: Path) -> None:
    log = area / "search.log"
    hits = (20, 70, 120, 170)
    log.write_text("".join(f"row {i} ERROR disk full\n" if i in hits else f"row {i} ok\n" for i in range(200)))
    app = make_app(service.url, service.token)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_logs_screen(app, pilot, session_id)
        panel = await pane.open_log(LogTarget(LogSource.PATH, str(log)))
        view = panel.view
        await wait_for(pilot, lambda: len(view.buffer) == 200 and "row 199 ok" in screen_rows(view))
        await pilot.press("slash", *"error", "enter")
        await pilot.pause()
        # the cursor goes to the newest match at or above the bottom of the screen
        assert view.buffer.line(view.cursor) == "row 170 ERROR disk full"
        assert "/error: 4/4 matches" in status(panel)
        rows = screen_rows(view)
        y = rows.index("row 170 ERROR disk full")
        match_bg = view.get_component_rich_style("logview--match").bgcolor
        highlighted = [seg.text for seg in view.render_line(y) if seg.style and seg.style.bgcolor == match_bg]
        assert highlighted == ["ERROR"]
        plain_y = rows.index("row 171 ok")
        assert not any(seg.style and seg.style.bgcolor == match_bg for seg in view.render_line(plain_y))

        await pilot.press("n")  # past the last match: wraps to the first, scrolled into view
        await pilot.pause()
        assert view.buffer.line(view.cursor) == "row 20 ERROR disk full"
        assert "row 20 ERROR disk full" in screen_rows(view)
        assert "/error: 1/4 matches" in status(panel)
        await pilot.press("n")
        await pilot.pause()
        assert view.buffer.line(view.cursor) == "row 70 ERROR disk full"
        assert "row 70 ERROR disk full" in screen_rows(view)
        await pilot.press("N")
        await pilot.pause()
        assert view.buffer.line(view.cursor) == "row 20 ERROR disk full"
        assert not view.following and "paused" in status(panel)
        await pilot.press("c")  # copies the cursor's line
        assert app.clipboard == "row 20 ERROR disk full"

        await pilot.press("f", *"disk", "enter")  # filter: only the matching lines are left
        await pilot.pause()
        assert [row for row in screen_rows(view) if row] == [f"row {i} ERROR disk full" for i in hits]
        await pilot.press("f", "ctrl+u", "enter")  # an empty filter shows everything again
        await pilot.pause()
        assert view.entry_count == 200


async def test_ctrl_s_asks_where_saves_the_buffer_in_the_download_dir_and_says_where(
    service, session_id: str, area: Path, tmp_path: Path, monkeypatch
) -> None:
    downloads = use_downloads_dir(monkeypatch, tmp_path)
    log = area / "worker.log"
    lines = [f"line {i} \x1b[32mok\x1b[0m" for i in range(50)]
    log.write_text("".join(line + "\n" for line in lines))
    app = make_app(service.url, service.token)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_logs_screen(app, pilot, session_id)
        panel = await pane.open_log(LogTarget(LogSource.PATH, str(log)))
        await wait_for(pilot, lambda: len(panel.view.buffer) == 50)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: screen_shown(app, SaveScreen))
        proposed = app.screen.query_one("#save-path").value
        assert proposed.startswith(str(downloads) + "/bbrowse-worker.log-") and proposed.endswith(".log")
        await accept_save_dialog(pilot, app)
        saved = lambda: list(downloads.glob("bbrowse-worker.log-*.log"))  # noqa: E731
        await wait_for(pilot, lambda: len(saved()) == 1 and any("Saved" in n.message for n in notifications(app)))
        target = saved()[0]
        assert str(target) == proposed
        assert target.read_text() == "".join(line + "\n" for line in lines)  # as received, colour codes and all
        notice = next(n for n in notifications(app) if n.title == "Log saved")
        assert str(target) in notice.message and "50 lines" in notice.message


async def test_supervisor_log_of_the_service_shows_its_access_lines(
    service, session_id: str, http: httpx.AsyncClient
) -> None:
    app = make_app(service.url, service.token)
    async with app.run_test(size=(170, 30)) as pilot:
        pane = await open_logs_screen(app, pilot, session_id, open_default=True)
        # opened by itself: the session's Chromium log when it has one, else the service's
        await wait_for(pilot, lambda: len(pane.panels) == 1)
        assert pane.panels[0].title in ("chromium", "bbrowse")
        await pilot.press("o")
        await wait_for(pilot, lambda: screen_shown(app, OpenLogScreen)
                       and app.screen.query_one(OptionList).option_count > 0)
        await pilot.press("home", "enter")  # `bbrowse` is listed first
        await wait_for(pilot, lambda: len(pane.panels) == 2)
        panel = pane.panels[1]
        assert panel.title == "bbrowse"
        await wait_for(pilot, lambda: "● live" in status(panel))
        await pilot.press("z")  # only this pane: the whole width for its long lines
        await pilot.pause()
        assert not pane.panels[0].display and panel.size.width > 150
        marker = uuid.uuid4().hex
        response = await http.get(f"/browsers/{session_id}/fs/file_info", params={"path": f"/nope-{marker}"})
        assert response.status_code == 404
        view = panel.view
        await wait_for(pilot, lambda: any(f"GET /browsers/{session_id}/fs/file_info 404" in row
                                          for row in screen_rows(view)))
        # `x` closes the focused pane and cancels its stream
        worker = next(w for w in app.workers if w.node is panel)
        await pilot.press("x")
        await wait_for(pilot, lambda: len(pane.panels) == 1 and worker.is_finished)


async def test_follow_pauses_on_scroll_up_and_resumes_on_end(service, session_id: str, area: Path) -> None:
    log = area / "follow.log"
    log.write_text("".join(f"old {i}\n" for i in range(300)))
    app = make_app(service.url, service.token)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_logs_screen(app, pilot, session_id)
        panel = await pane.open_log(LogTarget(LogSource.PATH, str(log)))
        view = panel.view
        await wait_for(pilot, lambda: screen_rows(view)[-1:] == ["old 299"])
        assert view.following
        await pilot.press("up", "up", "up")
        await pilot.pause()
        assert not view.following
        before = screen_rows(view)
        assert before[-1] == "old 296"
        append(log, *(f"new {i}" for i in range(50)))
        await wait_for(pilot, lambda: view.new_while_paused == 50)
        assert screen_rows(view) == before  # the view stays where the user put it
        assert "⏸ paused — G or End to follow · 50 new lines" in status(panel)
        await pilot.press("end")
        await pilot.pause()
        assert view.following and screen_rows(view)[-1] == "new 49"
        assert "● following" in status(panel)
        append(log, "newest")
        await wait_for(pilot, lambda: screen_rows(view)[-1:] == ["newest"])
        # the mouse wheel pauses too
        region = view.region
        view.post_message(events.MouseScrollUp(view, 2, 2, 0, 0, 0, False, False, False,
                                               screen_x=region.x + 2, screen_y=region.y + 2))
        await wait_for(pilot, lambda: not view.following)
        await pilot.press("G")
        await pilot.pause()
        assert view.following and screen_rows(view)[-1] == "newest"


class CuttableProxy:
    """A real TCP proxy to the service that can drop every connection and refuse new ones for a while."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.up = True
        self.writers: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.up:
            writer.close()
            return
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers.update((writer, upstream_writer))
        await asyncio.gather(self._pipe(reader, upstream_writer), self._pipe(upstream_reader, writer))
        self.writers.difference_update((writer, upstream_writer))

    def cut(self) -> None:
        self.up = False
        for writer in list(self.writers):
            writer.transport.abort()
        self.writers.clear()

    async def close(self) -> None:
        self.cut()
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


async def test_a_broken_stream_reconnects_and_marks_the_gap(service, session_id: str, area: Path) -> None:
    log = area / "flaky.log"
    log.write_text("first\n")
    proxy = CuttableProxy(httpx.URL(service.url).port)
    port = await proxy.start()
    app = make_app(f"http://127.0.0.1:{port}", service.token)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            pane = await open_logs_screen(app, pilot, session_id)
            panel = await pane.open_log(LogTarget(LogSource.PATH, str(log)))
            view = panel.view
            await wait_for(pilot, lambda: "first" in screen_rows(view) and "● live" in status(panel))
            proxy.cut()
            await wait_for(pilot, lambda: "reconnecting" in status(panel))
            append(log, "written while disconnected")
            proxy.up = True
            # reopened: the gap is marked once the service has answered ("● live" may come before it)
            await wait_for(pilot, lambda: any(row.startswith("── reconnected after") for row in screen_rows(view))
                           and "● live" in status(panel), timeout=20)
            rows = screen_rows(view)
            gap = next(row for row in rows if row.startswith("── reconnected after"))
            assert gap.endswith("s; lines may be missing ──")
            append(log, "after the gap")
            await wait_for(pilot, lambda: "after the gap" in screen_rows(view))
            # the line written while the stream was down is read back from the file, after the mark
            assert [row for row in screen_rows(view) if row] == ["first", gap, "written while disconnected",
                                                                 "after the gap"]
            assert view.buffer.gaps
    finally:
        await proxy.close()


# snapshot -------------------------------------------------------------------------------------------------

SNAPSHOT_LINES = [
    "2025-01-01 12:00:00 INFO  service started on 127.0.0.1:8700",
    "2025-01-01 12:00:01 INFO  GET /browsers 200 1.2ms",
    "2025-01-01 12:00:02 \x1b[33mWARN\x1b[0m  slow response from \x1b[1mchromium\x1b[0m (812 ms)",
    "2025-01-01 12:00:03 \x1b[31mERROR\x1b[0m could not connect: [bold]not markup[/bold]",
    '{"level": "info", "msg": "json line", "n": 3}',
    "2025-01-01 12:00:04 INFO  GET /browsers/abc/logs/stream 200",
    "2025-01-01 12:00:05 ERROR retry 2 of 5",
]


class SnapshotApp(App):
    """A log pane with fixed content and no stream, so its picture is the same on every run."""

    def compose(self) -> ComposeResult:
        yield LogPanel("chromium", "chromium", capacity=1000)
        yield BbrowseFooter()

    def on_mount(self) -> None:
        panel = self.query_one(LogPanel)
        panel.view.append_lines(SNAPSHOT_LINES[:5])
        panel.view.buffer.add_gap(12)
        panel.view.append_lines(SNAPSHOT_LINES[5:])
        panel.connection = "● live"
        panel.view.focus()


def test_log_pane_snapshot(snap_compare) -> None:
    async def search_and_pause(pilot) -> None:
        await pilot.press("slash", *"error", "enter")

    assert gap_text(12) == "── reconnected after 12 s; lines may be missing ──"
    assert snap_compare(SnapshotApp(), terminal_size=(100, 16), run_before=search_and_pause)



def test_log_pane_snapshot_wrapped_with_pretty_json(snap_compare) -> None:
    assert snap_compare(SnapshotApp(), terminal_size=(60, 24), press=["j", "w"])


async def test_c_copies_the_mouse_selection_or_the_current_line() -> None:
    app = SnapshotApp()
    async with app.run_test(size=(100, 16)) as pilot:
        await pilot.pause()
        assert app.focused is app.query_one(LogView)
        await pilot.press("c")  # no cursor, no selection: the last line on screen
        assert app.clipboard == SNAPSHOT_LINES[-1]
        await pilot.mouse_down(LogView, offset=(11, 1))
        await pilot.hover(LogView, offset=(20, 2))
        await pilot.mouse_up(LogView, offset=(20, 2))
        await pilot.pause()
        await pilot.press("c")
        assert app.clipboard == "12:00:01 INFO  GET /browsers 200 1.2ms\n2025-01-01 12:00:02 W"
