"""Files of a session: a lazy tree with the highlighted entry's `file_info`, a viewer, and save-to-disk.

The tree starts at the session's working directory (learnt once by running `pwd` in the session:
the Browser object does not carry it); `~` goes back there, `/` to the root, `g` to a typed path
(a file's parent is shown and the file opened). Enter on a file opens it in the viewer; `s` saves the
viewed (else the highlighted) file locally: a dialog proposes the download directory, then the file is
streamed to disk with a progress bar.
"""

from __future__ import annotations

import base64
import posixpath
import time
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, ProgressBar, Static, Tree

from bbrowse.client import ClientError
from bbrowse.tui.format import absolute_time, human_bytes
from bbrowse.tui.saving import commit, partial_path
from bbrowse.tui.screens.save import SaveScreen
from bbrowse.tui.widgets.file_tree import RemoteEntry, RemoteFileTree
from bbrowse.tui.widgets.file_viewer import FileViewer
from bbrowse.wire import FileInfo

HINT = "enter open · tab viewer · g go to · ~ work dir · / root · s save · x hex · m more · r reload"
#: Seconds the finished progress bar stays up, so the user sees where the file went.
SAVED_BAR_SECONDS = 6.0


def describe_info(info: FileInfo) -> Text:
    """The info panel: path, kind and size, mode, modification time."""
    kind = "directory" if info.is_dir else "file"
    size = "" if info.is_dir else f" · {human_bytes(info.size_bytes)} ({info.size_bytes:,} bytes)"
    text = Text()
    text.append(info.path + "\n", style="bold")
    text.append(f"{kind}{size}\n")
    text.append(f"{info.mode}\n")
    text.append(f"modified {absolute_time(info.mod_time)}")
    return text


class PathInput(Input):
    """The go-to-path field: enter goes, escape closes it (instead of leaving the session screen)."""

    BINDINGS = [Binding("escape", "close", "Cancel", show=False)]

    class Closed(Message):
        """Escape in the field."""

    def action_close(self) -> None:
        self.post_message(self.Closed())


class FilesPane(Vertical):
    BINDINGS = [
        Binding("g", "goto", "Go to path", id="files.goto"),
        Binding("tilde", "home", "Work dir", id="files.home"),
        Binding("slash", "root", "Root", id="files.root"),
        Binding("s", "save", "Save", id="files.save"),
        Binding("x", "toggle_hex", "Hex", id="files.hex"),
        Binding("m", "load_more", "More", id="files.more", show=False),
    ]

    DEFAULT_CSS = """
    FilesPane { height: 1fr; }
    FilesPane #files-hint { height: 1; color: $text-muted; padding: 0 1; }
    FilesPane #files-body { height: 1fr; }
    FilesPane #files-left { width: 40%; min-width: 28; max-width: 70; border-right: vkey $foreground 20%; }
    FilesPane #files-goto { display: none; margin: 0 0; }
    FilesPane #files-goto.open { display: block; }
    FilesPane #files-goto-error { display: none; height: auto; color: $text-error; padding: 0 1; }
    FilesPane #files-goto-error.shown { display: block; }
    FilesPane #files-info { height: auto; min-height: 4; padding: 0 1; background: $panel; }
    FilesPane #files-right { width: 1fr; }
    FilesPane #files-progress { height: auto; display: none; padding: 0 1; }
    FilesPane #files-progress.active { display: block; }
    FilesPane #files-progress ProgressBar { width: 1fr; }
    """

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id
        self.working_directory: str | None = None
        #: The last file saved (its local path), for the user and tests.
        self.last_saved: Path | None = None

    def compose(self) -> ComposeResult:
        yield Static(HINT, id="files-hint", markup=False)
        with Horizontal(id="files-body"):
            with Vertical(id="files-left"):
                yield PathInput(placeholder="path on the instance, enter to go, esc to cancel", id="files-goto")
                yield Static("", id="files-goto-error", markup=False)
                yield RemoteFileTree(self.session_id, None, id="files-tree")
                yield Static("", id="files-info", markup=False)
            with Vertical(id="files-right"):
                yield FileViewer(self.session_id, id="files-viewer")
                with Vertical(id="files-progress"):
                    yield Static("", id="files-progress-label", markup=False)
                    yield ProgressBar(id="files-progress-bar", show_eta=True)

    @property
    def file_tree(self) -> RemoteFileTree:
        return self.query_one(RemoteFileTree)

    @property
    def viewer(self) -> FileViewer:
        return self.query_one(FileViewer)

    def on_mount(self) -> None:
        self._start_at_working_directory()

    def focus_default(self) -> None:
        """Put the keyboard in the pane (the tree): its keys act only when focus is inside it."""
        self.file_tree.focus()

    def on_show(self) -> None:
        focused = self.screen.focused
        if focused is None or not focused.is_on_screen:
            self.focus_default()

    # navigation ---------------------------------------------------------------

    async def _working_directory(self) -> str | None:
        """The session's working directory: `pwd` run once in the session (processes start there)."""
        if self.working_directory is None:
            try:
                result = await self.app.client.processes.exec(self.session_id, "pwd")
            except ClientError as error:
                self.app.report_error(error, "Working directory unknown; showing /")
                return None
            found = base64.b64decode(result.stdout_b64).decode(errors="replace").strip()
            if result.exit_code != 0 or not found.startswith("/"):
                self.notify(f"pwd in the session answered {found!r} (exit {result.exit_code}); showing /",
                            severity="warning")
                return None
            self.working_directory = found
        return self.working_directory

    @work(exclusive=True, group="files-nav")
    async def _start_at_working_directory(self) -> None:
        self.file_tree.set_root(await self._working_directory() or "/")

    def action_home(self) -> None:
        self._start_at_working_directory()

    def action_root(self) -> None:
        self.file_tree.set_root("/")

    def action_goto(self) -> None:
        field = self.query_one(PathInput)
        field.value = self.file_tree.root_path
        field.add_class("open")
        field.focus()
        field.cursor_position = len(field.value)

    def _close_goto(self) -> None:
        self.query_one(PathInput).remove_class("open")
        self.query_one("#files-goto-error").remove_class("shown")
        self.file_tree.focus()

    @on(PathInput.Closed)
    def _goto_cancelled(self, event: PathInput.Closed) -> None:
        event.stop()
        self._close_goto()

    @on(Input.Submitted, "#files-goto")
    def _goto_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        typed = event.value.strip()
        if not typed:
            self._close_goto()
            return
        self._go(posixpath.normpath(posixpath.join(self.file_tree.root_path, typed)))

    @work(exclusive=True, group="files-nav")
    async def _go(self, path: str) -> None:
        error_box = self.query_one("#files-goto-error", Static)
        try:
            info = await self.app.client.fs.file_info(self.session_id, path)
        except ClientError as error:
            error_box.update(Text(str(error)))
            error_box.add_class("shown")
            return
        self._close_goto()
        if info.is_dir:
            self.file_tree.set_root(info.path, info)
        else:
            self.file_tree.set_root(posixpath.dirname(info.path) or "/")
            self._open(info.path, info.size_bytes)

    # info and viewer ------------------------------------------------------------

    @on(Tree.NodeHighlighted, "#files-tree")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        entry: RemoteEntry | None = event.node.data
        if entry is None or entry.placeholder:
            return
        if entry.info is not None:
            self._show_info(entry.info)
        self._fetch_info(entry.path)

    @work(exclusive=True, group="files-info")
    async def _fetch_info(self, path: str) -> None:
        try:
            info = await self.app.client.fs.file_info(self.session_id, path)
        except ClientError as error:
            self.query_one("#files-info", Static).update(Text(f"{path}\n{error}", style="red"))
            return
        node = self.file_tree.cursor_node
        if node is not None and node.data is not None and node.data.path == path:
            node.data.info = info
            self._show_info(info)

    def _show_info(self, info: FileInfo) -> None:
        self.query_one("#files-info", Static).update(describe_info(info))

    @on(RemoteFileTree.FileOpened)
    def _file_opened(self, event: RemoteFileTree.FileOpened) -> None:
        event.stop()
        info = event.entry.info
        self._open(event.entry.path, info.size_bytes if info else None)

    def _open(self, path: str, size: int | None) -> None:
        """Show the file in the viewer; the keyboard stays in the tree (arrows keep moving there, tab goes
        to the viewer to scroll it)."""
        self.viewer.open_remote(path, size)
        if not self.file_tree.has_focus and not self.viewer.lines.has_focus:
            self.file_tree.focus()

    def action_toggle_hex(self) -> None:
        self.viewer.toggle_hex()

    def action_load_more(self) -> None:
        self.viewer.load_more()

    # saving -------------------------------------------------------------------

    def action_save(self) -> None:
        path = self.viewer.path
        if path is None:
            node = self.file_tree.cursor_node
            entry = node.data if node is not None else None
            if entry is None or entry.is_dir or entry.placeholder:
                self.notify("Open or highlight a file first", severity="warning")
                return
            path = entry.path

        def chosen(target: Path | None) -> None:
            if target is not None:
                self._save(path, target)

        self.app.push_screen(SaveScreen(f"Save {posixpath.basename(path) or path}", posixpath.basename(path) or "file",
                                        what=f"{path} on the instance"), chosen)

    @work(exclusive=True, group="files-save")
    async def _save(self, path: str, target: Path) -> None:
        client = self.app.client
        box = self.query_one("#files-progress")
        label = self.query_one("#files-progress-label", Static)
        bar = self.query_one("#files-progress-bar", ProgressBar)
        partial = partial_path(target)
        received = 0
        box.add_class("active")
        label.update(Text(f"Saving {path} → {target}"))
        try:
            info = await client.fs.file_info(self.session_id, path)
            bar.update(total=info.size_bytes or None, progress=0)
            shown_at = 0.0
            with partial.open("wb") as out:
                async with client.fs.read_file(self.session_id, path) as chunks:
                    async for chunk in chunks:
                        out.write(chunk)
                        received += len(chunk)
                        now = time.monotonic()
                        if now - shown_at > 0.05:
                            shown_at = now
                            bar.update(progress=received)
            target = commit(partial, target)
        except (ClientError, OSError) as error:
            partial.unlink(missing_ok=True)
            box.remove_class("active")
            self.app.report_error(error, f"Could not save {path}")
            return
        bar.update(total=max(received, 1) if not info.size_bytes else info.size_bytes, progress=received)
        label.update(Text(f"Saved {human_bytes(received)} to {target}"))
        self.last_saved = target
        self.notify(str(target), title=f"Saved {posixpath.basename(path)}")
        self.set_timer(SAVED_BAR_SECONDS, lambda: box.remove_class("active"))
