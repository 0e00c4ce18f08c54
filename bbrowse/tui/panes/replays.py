"""Replays of a session: a live table, start/stop recording, download with progress, copy the view URL."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from bbrowse.client import ClientError
from bbrowse.humanize import absolute_time, elapsed, human_bytes
from bbrowse.transfer import save_stream
from bbrowse.tui.app_services import services
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.live_table import ColumnFit, ellipsized, fit_columns, sync_rows
from bbrowse.tui.panes.base import HintLine, SessionPane
from bbrowse.tui.polling import Poller
from bbrowse.tui.widgets.transfer_bar import TransferBar
from bbrowse.wire import Replay

HINT = "{replays.toggle} record/stop · {replays.download} download · {replays.copy_url} copy view URL"
EMPTY_HINT = "No recordings yet. Press {replays.toggle} to start recording this session's browser."
#: On an ended session (read-only): nothing can be recorded any more.
ENDED_HINT = "{replays.download} download · {replays.copy_url} copy view URL · the session has ended"
ENDED_EMPTY_HINT = "No recordings: the session ended without any."
REFRESH_SECONDS = 2.0
#: The longest wait between two listings while nothing changes (polled only while the tab is shown).
LONGEST_REFRESH_SECONDS = 30.0

COLUMNS = (("id", "Replay"), ("started", "Started"), ("finished", "Finished"), ("duration", "Duration"),
           ("state", "State"))
#: When the pane is narrow (80 columns): the finish time gives way first, then the id (a long UUID whose
#: start tells replays apart) and the start; the duration and the state keep their width longest.
FITS = (ColumnFit("finished", 0, 8), ColumnFit("id", 1, 13), ColumnFit("started", 2, 8),
        ColumnFit("duration", 3, 5), ColumnFit("state", 4, 11))


def replay_cells(replay: Replay) -> dict[str, str | Text]:
    recording = replay.finished_at is None
    cells: dict[str, str | Text] = {
        "id": Text(replay.replay_id),
        "started": absolute_time(replay.started_at) if replay.started_at else "—",
        "finished": absolute_time(replay.finished_at) if replay.finished_at is not None else "—",
        "duration": elapsed(replay.started_at, replay.finished_at) if replay.started_at else "—",
        "state": Text("● recording", style="red bold") if recording else Text("finished", style="green"),
    }
    return {key: ellipsized(value) for key, value in cells.items()}


def _shown(replays: dict[str, Replay]) -> dict[str, tuple[object, ...]]:
    """What the table shows of each replay (not its view URL, whose token may be minted afresh at each read)."""
    return {key: (r.started_at, r.finished_at) for key, r in replays.items()}


class ReplaysListed(Message):
    """A listing of the session's replays arrived."""

    def __init__(self, replays: list[Replay]) -> None:
        super().__init__()
        self.replays = replays


class ReplaysPane(SessionPane):
    BINDINGS = [
        Binding("r", "toggle_recording", "Record / stop", id="replays.toggle"),
        Binding("s", "download", "Download", id="replays.download"),
        Binding("c", "copy_url", "Copy view URL", id="replays.copy_url"),
    ]

    DEFAULT_CSS = """
    ReplaysPane { height: 1fr; }
    ReplaysPane DataTable { height: 1fr; }
    ReplaysPane #replays-hint { color: $text-muted; height: auto; }
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self._replays: dict[str, Replay] = {}
        self._poller = Poller(self, self.refresh_replays, every=REFRESH_SECONDS, longest=LONGEST_REFRESH_SECONDS)
        #: The last replay downloaded (its local path).
        self.last_saved: Path | None = None

    def compose(self) -> ComposeResult:
        yield HintLine(HINT, id="replays-hint")
        yield DataTable(id="replays-table", cursor_type="row", zebra_stripes=True)
        yield TransferBar(id="replays-progress", show_eta=False)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_columns)

    def _fit_columns(self) -> None:
        for table in self.query(DataTable):  # none when the pane is being taken apart (children go first)
            fit_columns(table, FITS)

    def focus_default(self) -> None:
        """Called when the tab is shown: the table takes the keyboard so r/s/c work at once."""
        self.query_one(DataTable).focus()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        self._poller.start()

    @work(exclusive=True, group="replays-refresh")
    async def refresh_replays(self) -> None:
        try:
            replays = await self.client.replays.list(self.session_id)
        except ClientError as error:
            self._poller.done(error=error)
            services(self).report_error(error, "Could not list replays")
            return
        except BaseException:
            self._poller.done()
            raise
        self._poller.done(changed=_shown({r.replay_id: r for r in replays}) != _shown(self._replays))
        self.post_message(ReplaysListed(replays))

    @on(ReplaysListed)
    def _listed(self, message: ReplaysListed) -> None:
        replays = message.replays
        self._replays = {r.replay_id: r for r in replays}
        table = self.query_one(DataTable)
        sync_rows(table, {r.replay_id: replay_cells(r) for r in replays}, [key for key, _ in COLUMNS])
        fit_columns(table, FITS)
        if getattr(self.screen, "ended", False):  # an ended session's screen: what it kept, read-only
            hint = ENDED_HINT if replays else ENDED_EMPTY_HINT
        else:
            hint = HINT if replays else EMPTY_HINT
        self.query_one("#replays-hint", HintLine).update_hint(hint)

    def selected(self) -> Replay | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return self._replays.get(row_key.value) if row_key.value is not None else None

    def recording(self) -> Replay | None:
        return next((r for r in self._replays.values() if r.finished_at is None), None)

    @work(exclusive=True, group="replays-toggle")
    async def action_toggle_recording(self) -> None:
        client = self.client
        try:
            current = self.recording()
            if current is not None:
                await client.replays.stop(self.session_id, current.replay_id)
                self.notify(f"Stopped recording {current.replay_id}")
            else:
                replay = await client.replays.start(self.session_id)
                self.notify(f"Recording {replay.replay_id}… press r to stop")
        except ClientError as error:
            services(self).report_error(error, "Recording")
        self.refresh_replays()

    def action_copy_url(self) -> None:
        replay = self.selected()
        if replay is None or not replay.replay_view_url:
            self.notify("No replay with a view URL selected", severity="warning")
            return
        self.app.copy_to_clipboard(replay.replay_view_url)
        self.notify(replay.replay_view_url, title="View URL copied")

    def action_download(self) -> None:
        replay = self.selected()
        if replay is None:
            self.notify("Select a replay first", severity="warning")
            return
        if replay.finished_at is None:
            self.notify("Stop the recording first (r)", severity="warning")
            return

        def chosen(target: Path | None) -> None:
            if target is not None:
                self._download(replay, target)

        self.app.push_screen(SaveScreen("Download replay", f"bbrowse-replay-{replay.replay_id}.mp4",
                                        what=f"Replay {replay.replay_id} of session {self.session_id} (MP4)"), chosen)

    @work(exclusive=True, group="replays-download")
    async def _download(self, replay: Replay, target: Path) -> None:
        bar = self.query_one(TransferBar)
        stream = self.client.replays.download(self.session_id, replay.replay_id)
        try:
            async with stream:  # open first: the response says how long the MP4 is
                bar.begin(f"Downloading {replay.replay_id} → {target}", stream.content_length)
                target, size = await save_stream(stream, target, bar.report)
        except (ClientError, OSError) as error:
            bar.end(None)
            services(self).report_error(error, "Download failed")
            return
        bar.end(f"Saved {human_bytes(size)} to {target}", size)
        self.last_saved = target
        self.notify(f"Saved {human_bytes(size)} to {target}", title="Replay downloaded")
