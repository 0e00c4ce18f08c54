"""Files of a session: a lazy tree with the highlighted entry's `file_info`, a viewer, save-to-disk, and the
file manager's operations (upload, new directory, rename or move, delete, change mode, zip download).

The tree starts at the session's working directory (learnt once by running `pwd` in the session: the
Browser object does not carry it). Enter on a file opens it in the viewer; `s` saves the viewed (else the
highlighted) file through the save dialog, streamed to disk with a progress bar. The listing follows the
instance by itself: the shown directory is watched (`fs.watch`) and a change lists the directory it
happened in again, in place.
"""

from __future__ import annotations

import asyncio
import base64
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Static, Tree

from bbrowse.client import BadRequest, ClientError, Conflict, NotFound, SessionGone, is_symlink, parse_mode
from bbrowse.humanize import absolute_time, human_bytes
from bbrowse.transfer import save_stream
from bbrowse.tui.app_services import services
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.file_paths import dir_label, instance_path, is_inside, mode_bits, parent_of
from bbrowse.tui.panes.base import HintLine, SessionPane, answer
from bbrowse.tui.widgets.file_tree import RemoteEntry, RemoteFileTree
from bbrowse.tui.widgets.file_viewer import FileViewer
from bbrowse.tui.widgets.question_line import PathInput, PromptInput, QuestionLine
from bbrowse.tui.widgets.transfer_bar import TransferBar
from bbrowse.uploads import UploadPlan, plan, upload
from bbrowse.wire import FileInfo

__all__ = ["FilesPane", "PromptInput"]

HINT = ("enter open · tab viewer · {files.goto} go to · {files.home} work dir · {files.root} root · "
        "{files.save} save · {files.hex} hex · {files.more} more · {files.reload} reload · {files.upload} upload · "
        "{files.mkdir} mkdir · {files.move} move · {files.delete} delete · {files.chmod} chmod · {files.zip} zip")
#: A zip of a directory at least this large (before compression) is asked about first, with its size.
LARGE_ZIP_BYTES = 100 * 1024 * 1024
#: How long `du` may measure a directory before a zip (then: "could not be measured in time").
ZIP_SIZE_SECONDS = 5
#: Changes reported by the watch within this many seconds are listed again together.
WATCH_SETTLE_SECONDS = 0.15
#: After a watch fails, wait this long (doubling, up to the maximum) before watching again.
WATCH_RETRY_SECONDS, WATCH_RETRY_MAX_SECONDS = 1.0, 30.0


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


# What the workers report (the handlers of the mounted pane draw it) ---------------------------------

@dataclass
class WorkingDirectoryFound(Message):
    directory: str | None


@dataclass
class PathResolved(Message):
    """`g`'s path: its `file_info`, or why not."""

    info: FileInfo | ClientError


@dataclass
class InfoFetched(Message):
    path: str
    info: FileInfo | ClientError


@dataclass
class AnswerRefused(Message):
    """The service (or the local disk) refused what the question line asked for: said under the question."""

    text: str


class InstanceChanged(Message):
    """An operation changed these directories: list them again (and highlight `highlight` once listed)."""

    def __init__(self, *directories: str, highlight: str | None = None, close_question: bool = False,
                 info_of: str | None = None) -> None:
        super().__init__()
        self.directories = directories
        self.highlight = highlight
        self.close_question = close_question
        self.info_of = info_of


@dataclass
class WatchSaw(Message):
    """The watch saw a change in `directory`."""

    directory: str


class FilesPane(SessionPane):
    BINDINGS = [
        Binding("g", "goto", "Go to path", id="files.goto"),
        Binding("tilde", "home", "Work dir", id="files.home"),
        Binding("slash", "root", "Root", id="files.root"),
        Binding("s", "save", "Save", id="files.save"),
        Binding("x", "toggle_hex", "Hex", id="files.hex"),
        Binding("m", "load_more", "More", id="files.more", show=False),
        Binding("u", "upload", "Upload", id="files.upload"),
        Binding("n", "new_directory", "New dir", id="files.mkdir"),
        Binding("R", "move", "Move", id="files.move"),
        Binding("d", "delete", "Delete", id="files.delete"),
        Binding("c", "chmod", "Mode", id="files.chmod"),
        Binding("z", "zip", "Zip", id="files.zip"),
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
    FilesPane #files-prompt { display: none; height: auto; background: $panel; padding: 0 1; }
    FilesPane #files-prompt.open { display: block; }
    FilesPane #files-prompt-error { height: auto; color: $text-error; }
    FilesPane #files-info { height: auto; min-height: 4; padding: 0 1; background: $panel; }
    FilesPane #files-right { width: 1fr; }
    FilesPane #files-progress { padding: 0 1; }
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.working_directory: str | None = None
        #: The last file saved (its local path), for the user and tests.
        self.last_saved: Path | None = None
        #: The directory the watch follows (None: not watching), and changes waiting to be listed.
        self.watching: str | None = None
        self._dirty: set[str] = set()
        self._flush_timer: Timer | None = None
        #: An entry to highlight once its directory has been listed again (after making or moving it).
        self._highlight_later: str | None = None

    def compose(self) -> ComposeResult:
        yield HintLine(HINT, id="files-hint")
        with Horizontal(id="files-body"):
            with Vertical(id="files-left"):
                yield PathInput(placeholder="path on the instance, enter to go, esc to cancel", id="files-goto")
                yield Static("", id="files-goto-error", markup=False)
                yield QuestionLine(id="files-prompt")
                yield RemoteFileTree(self.session_id, None, id="files-tree")
                yield Static("", id="files-info", markup=False)
            with Vertical(id="files-right"):
                yield FileViewer(self.session_id, id="files-viewer")
                yield TransferBar(id="files-progress")

    @property
    def file_tree(self) -> RemoteFileTree:
        return self.query_one(RemoteFileTree)

    @property
    def viewer(self) -> FileViewer:
        return self.query_one(FileViewer)

    @property
    def question(self) -> QuestionLine:
        return self.query_one(QuestionLine)

    @property
    def progress(self) -> TransferBar:
        return self.query_one(TransferBar)

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
                result = await self.client.processes.exec(self.session_id, "pwd")
            except ClientError as error:
                services(self).report_error(error, "Working directory unknown; showing /")
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
        self.post_message(WorkingDirectoryFound(await self._working_directory()))

    @on(WorkingDirectoryFound)
    def _working_directory_found(self, message: WorkingDirectoryFound) -> None:
        self.file_tree.set_root(message.directory or "/")

    def action_home(self) -> None:
        self._start_at_working_directory()

    def action_root(self) -> None:
        self.file_tree.set_root("/")

    def action_goto(self) -> None:
        """Ask for a path and show it; a file's parent is shown and the file opened."""
        field = self.query_one(PathInput)
        field.value = self.file_tree.root_path
        field.add_class("open")
        field.focus()
        field.cursor_position = len(field.value)

    def _close_goto(self) -> None:
        self.query_one(PathInput).remove_class("open")
        self.query_one("#files-goto-error").remove_class("shown")
        self.file_tree.focus()

    @on(PathInput.Closed, "#files-goto")
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
        self._go(instance_path(typed, self.file_tree.root_path))

    @work(exclusive=True, group="files-nav")
    async def _go(self, path: str) -> None:
        self.post_message(PathResolved(await answer(self.client.fs.file_info(self.session_id, path))))

    @on(PathResolved)
    def _resolved(self, message: PathResolved) -> None:
        info = message.info
        if isinstance(info, ClientError):
            error_box = self.query_one("#files-goto-error", Static)
            error_box.update(Text(str(info)))
            error_box.add_class("shown")
            return
        self._close_goto()
        if info.is_dir:
            self.file_tree.set_root(info.path, info)
        else:
            self._highlight_later = info.path  # the file opened is the one s, d, R and c then act on
            self.file_tree.set_root(parent_of(info.path))
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
        self.post_message(InfoFetched(path, await answer(self.client.fs.file_info(self.session_id, path))))

    @on(InfoFetched)
    def _info_fetched(self, message: InfoFetched) -> None:
        info = message.info
        if isinstance(info, ClientError):
            self.query_one("#files-info", Static).update(Text(f"{message.path}\n{info}", style="red"))
            return
        node = self.file_tree.cursor_node
        if node is not None and node.data is not None and node.data.path == message.path:
            node.data.info = info
            self._show_info(info)

    def _show_info(self, info: FileInfo) -> None:
        self.query_one("#files-info", Static).update(describe_info(info))

    @on(RemoteFileTree.FileOpened)
    def _file_opened(self, event: RemoteFileTree.FileOpened) -> None:
        event.stop()
        info = event.entry.info
        if info is not None and is_symlink(info):  # to a file or a directory: file_info (it follows) says
            self._go(event.entry.path)
            return
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
        """Save the highlighted file (as d, R and c act on the highlighted entry); the viewer's file only when
        nothing is highlighted."""
        entry = self.selected_entry()
        if entry is not None and entry.is_dir:
            self.notify(f"{entry.path} is a directory: z downloads it as a zip", severity="warning", markup=False)
            return
        path = entry.path if entry is not None else self.viewer.path
        if path is None:
            self.notify("Highlight a file first", severity="warning")
            return

        def chosen(target: Path | None) -> None:
            if target is not None:
                self._save(path, target, self.progress)

        self.app.push_screen(SaveScreen(f"Save {posixpath.basename(path) or path}", posixpath.basename(path) or "file",
                                        what=f"{path} on the instance"), chosen)

    @work(exclusive=True, group="files-save")
    async def _save(self, path: str, target: Path, bar: TransferBar) -> None:
        fs = self.client.fs
        try:
            info = await fs.file_info(self.session_id, path)
            bar.begin(f"Saving {path} → {target}", info.size_bytes)
            target, size = await save_stream(fs.read_file(self.session_id, path), target, bar.report)
        except (ClientError, OSError) as error:
            bar.end(None)
            services(self).report_error(error, f"Could not save {path}")
            return
        bar.end(f"Saved {human_bytes(size)} to {target}", size)
        self.last_saved = target
        self.notify(str(target), title=f"Saved {posixpath.basename(path)}")

    # where operations act -----------------------------------------------------

    def selected_entry(self) -> RemoteEntry | None:
        """The highlighted file or directory (not a placeholder row)."""
        node = self.file_tree.cursor_node
        entry = node.data if node is not None else None
        return None if entry is None or entry.placeholder else entry

    def current_directory(self) -> str:
        """The directory an upload or a new directory goes into: the highlighted one, else the highlighted
        file's, else the tree's root."""
        node = self.file_tree.cursor_node
        entry = node.data if node is not None else None
        if entry is None:
            return self.file_tree.root_path
        if entry.placeholder or entry.is_dir:
            return entry.path
        return parent_of(entry.path)

    @on(InstanceChanged)
    def _instance_changed(self, message: InstanceChanged) -> None:
        """List these directories again now (the watch would too, a moment later, or not at all)."""
        if message.close_question:
            self._close_question()
        if message.highlight is not None:
            self._highlight_later = message.highlight
        self._relist(*message.directories)
        if message.info_of is not None:
            self._fetch_info(message.info_of)

    def _relist(self, *directories: str) -> None:
        for path in directories:
            self.file_tree.refresh_directory(path)

    @on(RemoteFileTree.DirectoryLoaded)
    def _listed(self, event: RemoteFileTree.DirectoryLoaded) -> None:
        if self._highlight_later is None:
            return
        node = self.file_tree.node_for_path(self._highlight_later)
        if node is not None:
            self._highlight_later = None
            self.file_tree.highlight(node)

    # the question line ----------------------------------------------------------

    def _close_question(self) -> None:
        self.question.close()
        self.file_tree.focus()

    @on(QuestionLine.Cancelled)
    def _question_cancelled(self, event: QuestionLine.Cancelled) -> None:
        event.stop()
        self.file_tree.focus()

    @on(AnswerRefused)
    def _answer_refused(self, message: AnswerRefused) -> None:
        self.question.error(message.text)

    def _outside(self, typed: str, target: str, base: str, verb: str, then: Callable[[], object]) -> None:
        """Run `then` at once when `target` (resolved from `typed`) stays inside `base`; else show where it
        resolves to and ask first (`../../etc/x` typed in /work must not land in /etc unseen)."""
        if is_inside(target, base):
            then()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                then()

        where = f"{typed!r} resolves to {target}" if typed != target else target
        self.app.push_screen(ConfirmScreen(f"{where}, outside {dir_label(base)} where you are. {verb} there?",
                                           verb), answered)

    # upload ---------------------------------------------------------------------

    def action_upload(self) -> None:
        """A local file or directory (a path prompt, tab completes) into the highlighted directory."""
        directory = self.current_directory()
        start = os.getcwd().rstrip("/") + "/"
        self.question.ask(f"Upload into {dir_label(directory)} · a local file or directory (tab completes):", start,
                          lambda typed: self._answer_upload(typed, directory), local_paths=True)

    def _answer_upload(self, typed: str, directory: str) -> None:
        if not typed:
            self.question.error("Type the path of a local file or directory.")
            return
        self._prepare_upload(Path(os.path.expanduser(typed)), directory)

    @work(exclusive=True, group="files-prompt")
    async def _prepare_upload(self, local: Path, directory: str) -> None:
        try:
            what = await asyncio.to_thread(plan, local)
        except OSError as error:
            self.post_message(AnswerRefused(f"{error.filename or local}: {error.strerror or error}"))
            return
        target = posixpath.join(directory, what.name)
        self.post_message(InstanceChanged(close_question=True))
        try:
            existing = await self.client.fs.file_info(self.session_id, target)
        except NotFound:
            existing = None
        except ClientError as error:
            services(self).report_error(error, f"Could not upload to {target}")
            return
        if existing is None:
            self._upload(what, target, self.progress)
            return
        kind = "directory" if existing.is_dir else "file"
        merge = " (files of the same name are replaced, others stay)" if existing.is_dir and what.is_dir else ""

        def answered(yes: bool | None) -> None:
            if yes:
                self._upload(what, target, self.progress)

        self.app.push_screen(ConfirmScreen(f"{target} exists on the instance ({kind}). Upload "
                                           f"{what.describe()} over it{merge}?", "Upload"), answered)

    @work(exclusive=True, group="files-transfer")
    async def _upload(self, what: UploadPlan, target: str, bar: TransferBar) -> None:
        bar.begin(f"Uploading {what.local} → {target}", what.size)
        try:
            await upload(self.client.fs, self.session_id, what, target, progress=bar.report)
        except ClientError as error:
            bar.end(None)
            services(self).report_error(error, f"Could not upload {what.local}")
            return
        bar.end(f"Uploaded {what.describe()} ({human_bytes(what.size)}) to {target}", what.size)
        self.notify(target, title=f"Uploaded {what.describe()}")
        self.post_message(InstanceChanged(parent_of(target), highlight=target))

    # new directory, rename/move, mode ---------------------------------------------

    def action_new_directory(self) -> None:
        directory = self.current_directory()
        self.question.ask(f"New directory in {dir_label(directory)} (a name, or an absolute path):", "",
                          lambda typed: self._answer_mkdir(typed, directory))

    def _answer_mkdir(self, typed: str, directory: str) -> None:
        if not typed:
            self.question.error("Type a name for the new directory.")
            return
        target = instance_path(typed, directory)
        self._outside(typed, target, directory, "Make it", lambda: self._mkdir(target))

    @work(exclusive=True, group="files-prompt")
    async def _mkdir(self, path: str) -> None:
        if isinstance(refused := await answer(self.client.fs.create_directory(self.session_id, path)), ClientError):
            self.post_message(AnswerRefused(str(refused)))
            return
        self.notify(path, title="Directory made")
        self.post_message(InstanceChanged(parent_of(path), highlight=path, close_question=True))

    def action_move(self) -> None:
        entry = self.selected_entry()
        if entry is None or entry.path == self.file_tree.root_path:
            self.notify("Highlight a file or directory below the top of the tree first", severity="warning")
            return
        source = entry.path
        self.question.ask(f"Rename or move {source} to (a new name, or an absolute path):", source,
                          lambda typed: self._answer_move(typed, source))

    def _answer_move(self, typed: str, source: str) -> None:
        if not typed:
            self.question.error("Type the new name or path.")
            return
        base = parent_of(source)
        target = instance_path(typed, base)
        if target == source:
            self._close_question()
            return
        self._outside(typed if typed != source else target, target, base, "Move it",
                      lambda: self._move(source, target, overwrite=False, asked=self.question.is_open))

    @work(exclusive=True, group="files-prompt")
    async def _move(self, source: str, target: str, *, overwrite: bool, asked: bool) -> None:
        """`asked`: the question line is open for this move (its errors go there, else to a notice)."""
        try:
            await self.client.fs.move(self.session_id, source, target, overwrite=overwrite)
        except Conflict:
            def answered(yes: bool | None) -> None:
                if yes:
                    self._move(source, target, overwrite=True, asked=self.question.is_open)

            self.app.push_screen(ConfirmScreen(f"{target} already exists. Replace it with {source}?", "Replace"),
                                 answered)
            return
        except ClientError as error:
            if asked:
                self.post_message(AnswerRefused(str(error)))
            else:
                services(self).report_error(error, f"Could not move {source}")
            return
        self.notify(f"{source} → {target}", title="Moved")
        self.post_message(InstanceChanged(parent_of(source), parent_of(target), highlight=target,
                                          close_question=asked))

    def action_chmod(self) -> None:
        entry = self.selected_entry()
        if entry is None:
            self.notify("Highlight a file or directory first", severity="warning")
            return
        mode = parse_mode(entry.info.mode) if entry.info is not None else None  # ls -l or Go's form (Kernel)
        current = mode.bits if mode is not None else None
        shown = f" (now {mode.ls()})" if mode is not None else ""
        path = entry.path
        self.question.ask(f"Mode of {path}{shown}, in octal:", format(current, "o") if current is not None else "",
                          lambda typed: self._answer_chmod(typed, path))

    def _answer_chmod(self, typed: str, path: str) -> None:
        bits = mode_bits(typed) if typed else None
        if bits is None or not typed.isdigit():
            self.question.error("Type an octal mode such as 644 or 755.")
            return
        self._chmod(path, typed)

    @work(exclusive=True, group="files-prompt")
    async def _chmod(self, path: str, mode: str) -> None:
        if isinstance(refused := await answer(self.client.fs.set_file_permissions(self.session_id, path, mode)),
                      ClientError):
            self.post_message(AnswerRefused(str(refused)))
            return
        self.notify(f"{path} is now {mode}", title="Mode changed")
        self.post_message(InstanceChanged(parent_of(path), close_question=True, info_of=path))

    # delete -------------------------------------------------------------------

    def action_delete(self) -> None:
        entry = self.selected_entry()
        if entry is None or entry.path == self.file_tree.root_path:
            self.notify("Highlight a file or directory below the top of the tree first", severity="warning")
            return
        if entry.is_dir:
            node = self.file_tree.node_for_path(entry.path)
            listed = [c for c in node.children if c.data is not None and not c.data.placeholder] if node else []
            contents = (f"and the {len(listed)} entr{'y' if len(listed) == 1 else 'ies'} in it (with everything "
                        f"below them)" if listed else "and everything in it")
            question = f"Delete the directory {entry.path} {contents} on the instance?"
        else:
            size = f" ({human_bytes(entry.info.size_bytes)})" if entry.info is not None else ""
            question = f"Delete the file {entry.path}{size} on the instance?"

        def answered(yes: bool | None) -> None:
            if yes:
                self._delete(entry.path, entry.is_dir)

        self.app.push_screen(ConfirmScreen(question + " This cannot be undone.", "Delete"), answered)

    @work(group="files-delete")
    async def _delete(self, path: str, is_dir: bool) -> None:
        fs = self.client.fs
        try:
            if is_dir:
                await fs.delete_directory(self.session_id, path)
            else:
                await fs.delete_file(self.session_id, path)
        except ClientError as error:
            services(self).report_error(error, f"Could not delete {path}")
            return
        self.notify(path, title="Deleted")
        self.post_message(InstanceChanged(parent_of(path)))

    # zip ------------------------------------------------------------------------

    def action_zip(self) -> None:
        self._zip_asking(self.current_directory())

    @work(exclusive=True, group="files-zip-size")
    async def _zip_asking(self, directory: str) -> None:
        """Say how large first (du on the instance, bounded): a zip of `/` is the whole instance."""
        name = posixpath.basename(directory.rstrip("/")) or "root"
        bar = self.progress
        self.notify(f"Measuring {dir_label(directory)}…", timeout=2, markup=False)
        size, exact = await self._size_of(directory)
        if size is None:
            size_text = f"of a size that could not be measured in {ZIP_SIZE_SECONDS} s (large)"
        else:
            size_text = f"{'about' if exact else 'at least'} {human_bytes(size)} before compression"
        if size is None or size >= LARGE_ZIP_BYTES or directory == "/":
            question = f"{dir_label(directory)} on the instance is {size_text}. Download all of it as a zip?"
            if not await self.app.push_screen_wait(ConfirmScreen(question, "Download")):
                return

        def chosen(target: Path | None) -> None:
            if target is not None:
                self._zip(directory, target, bar)

        self.app.push_screen(SaveScreen(f"Download {dir_label(directory)} as a zip", f"{name}.zip",
                                        what=f"{dir_label(directory)} on the instance, everything in it, "
                                             f"{size_text}"), chosen)

    async def _size_of(self, directory: str) -> tuple[int | None, bool]:
        """(bytes below `directory`, whether all of it could be read), by `du` on the instance; None when it
        cannot say in time."""
        try:
            result = await self.client.processes.exec(
                self.session_id, "timeout", [str(ZIP_SIZE_SECONDS), "du", "-sk", directory],
                timeout_sec=ZIP_SIZE_SECONDS + 2)
        except ClientError:
            return None, False
        if result.exit_code == 124:  # timeout's own code: still counting
            return None, False
        try:
            return int(base64.b64decode(result.stdout_b64).split()[0]) * 1024, result.exit_code == 0
        except (ValueError, IndexError):
            return None, False

    @work(exclusive=True, group="files-transfer")
    async def _zip(self, directory: str, target: Path, bar: TransferBar) -> None:
        bar.begin(f"Zipping {directory} → {target}")
        try:
            zipped = self.client.fs.download_dir_zip(self.session_id, directory, chunk_size=None)
            target, size = await save_stream(zipped, target, bar.report)
        except (ClientError, OSError) as error:
            bar.end(None)
            services(self).report_error(error, f"Could not download {directory}")
            return
        bar.end(f"Saved {directory} as {target} ({human_bytes(size)})", size)
        self.last_saved = target
        self.notify(str(target), title=f"Saved {posixpath.basename(directory.rstrip('/')) or '/'} as a zip")

    # following the instance -------------------------------------------------------

    @on(RemoteFileTree.RootChanged)
    def _root_changed(self, event: RemoteFileTree.RootChanged) -> None:
        self._watch(event.path)

    @work(exclusive=True, group="files-watch")
    async def _watch(self, root: str) -> None:
        """Follow changes below `root` until the tree shows another directory (recursive, except at `/`)."""
        recursive = root != "/"
        delay = WATCH_RETRY_SECONDS
        while True:
            try:
                async with self.client.fs.watch(self.session_id, root, recursive=recursive) as events:
                    self.watching = root
                    delay = WATCH_RETRY_SECONDS
                    async for event in events:
                        self.post_message(WatchSaw(parent_of(event.path.rstrip("/"))))
            except BadRequest:
                if not recursive:
                    self.watching = None
                    return
                recursive = False  # too big to watch whole: the top directory alone
                continue
            except (SessionGone, NotFound):
                self.watching = None  # the session or the directory is gone: nothing left to follow
                return
            except ClientError:
                self.watching = None
            await asyncio.sleep(delay)  # the stream ended or failed (service restart, connection lost)
            delay = min(delay * 2, WATCH_RETRY_MAX_SECONDS)

    @on(WatchSaw)
    def _watch_saw(self, message: WatchSaw) -> None:
        self._dirty.add(message.directory)
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(WATCH_SETTLE_SECONDS, self._flush_changes)

    def _flush_changes(self) -> None:
        self._flush_timer = None
        dirty, self._dirty = self._dirty, set()
        self._relist(*sorted(dirty))
