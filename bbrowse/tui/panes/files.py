"""Files of a session: a lazy tree with the highlighted entry's `file_info`, a viewer, save-to-disk, and the
file manager's operations.

The tree starts at the session's working directory (learnt once by running `pwd` in the session:
the Browser object does not carry it); `~` goes back there, `/` to the root, `g` to a typed path
(a file's parent is shown and the file opened). Enter on a file opens it in the viewer; `s` saves the
viewed (else the highlighted) file locally: a dialog proposes the download directory, then the file is
streamed to disk with a progress bar.

File manager: `u` uploads a local file or directory (a path prompt, tab completes) into the
highlighted directory, `n` makes a directory, `R` renames or moves, `d` deletes (after saying what),
`c` changes the mode, `z` downloads a directory as a zip (through the save dialog). Long transfers
show a progress bar. The listing follows the instance by itself: the shown directory is watched
(`fs.watch`, recursive below `/`) and a change lists the directory it happened in again, in place.
"""

from __future__ import annotations

import asyncio
import base64
import os
import posixpath
import time
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.suggester import Suggester
from textual.timer import Timer
from textual.widgets import Input, ProgressBar, Static, Tree

from bbrowse.client import BadRequest, ClientError, Conflict, NotFound, SessionGone, is_symlink, parse_mode
from bbrowse.humanize import absolute_time, human_bytes
from bbrowse.tui.app_services import services
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.panes.base import HintLine, SessionPane
from bbrowse.tui.saving import commit, partial_path
from bbrowse.tui.widgets.file_tree import RemoteEntry, RemoteFileTree
from bbrowse.tui.widgets.file_viewer import FileViewer
from bbrowse.uploads import UploadPlan, plan, upload
from bbrowse.wire import FileInfo

HINT = ("enter open · tab viewer · g go to · ~ work dir · / root · s save · x hex · m more · r reload · "
        "u upload · n mkdir · R move · d delete · c chmod · z zip")
#: Seconds the finished progress bar stays up, so the user sees where the file went.
SAVED_BAR_SECONDS = 6.0
#: A zip of a directory at least this large (before compression) is asked about first, with its size.
LARGE_ZIP_BYTES = 100 * 1024 * 1024
#: How long `du` may measure a directory before a zip (then: "could not be measured in time").
ZIP_SIZE_SECONDS = 5
#: Changes reported by the watch within this many seconds are listed again together.
WATCH_SETTLE_SECONDS = 0.15
#: After a watch fails, wait this long (doubling, up to the maximum) before watching again.
WATCH_RETRY_SECONDS, WATCH_RETRY_MAX_SECONDS = 1.0, 30.0
#: Progress bars are redrawn at most this often.
PROGRESS_EVERY_SECONDS = 0.05


def dir_label(directory: str) -> str:
    """A directory as shown in questions: with one trailing slash (`/`, never `//`)."""
    return directory.rstrip("/") + "/"


def mode_bits(mode: str) -> int | None:
    """Permission bits of an `ls -l` style mode ("-rwxr-xr-x", "drwxrwsr-t") or octal text ("755")."""
    text = mode.strip()
    if text and all(c in "01234567" for c in text):
        return int(text, 8) if int(text, 8) <= 0o7777 else None
    if len(text) != 10:
        return None
    bits = 0
    for index, (char, bit) in enumerate(zip(text[1:], (0o400, 0o200, 0o100, 0o40, 0o20, 0o10, 0o4, 0o2, 0o1),
                                            strict=True)):
        special = (0o4000, 0o2000, 0o1000)[index // 3] if index % 3 == 2 else 0
        if char in "rwx":
            bits |= bit
        elif char in "st":
            bits |= bit | special
        elif char in "ST":
            bits |= special
        elif char != "-":
            return None
    return bits


class LocalPathSuggester(Suggester):
    """Completes a local path as a shell does: the rest of the only match, else what all matches share."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)

    async def get_suggestion(self, value: str) -> str | None:
        return await asyncio.to_thread(complete_local_path, value)


def complete_local_path(value: str) -> str | None:
    """`value` completed from the local filesystem (directories end with '/'), None when nothing fits."""
    if not value:
        return None
    expanded = os.path.expanduser(value)
    directory, prefix = os.path.split(expanded)
    try:
        names = sorted(n for n in os.listdir(directory or ".") if n.startswith(prefix))
    except OSError:
        return None
    if not prefix:
        names = [n for n in names if not n.startswith(".")]
    if not names:
        return None
    shared = os.path.commonprefix(names)  # noqa: RUF071 - names share characters, not path components
    if len(names) == 1 and os.path.isdir(os.path.join(directory or ".", shared)):
        shared += "/"
    if len(shared) <= len(prefix):
        return None
    return value + shared[len(prefix):]


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

        def __init__(self, field: PathInput) -> None:
            super().__init__()
            self.field = field

        @property
        def control(self) -> PathInput:
            return self.field

    def action_close(self) -> None:
        self.post_message(self.Closed(self))


class PromptInput(PathInput):
    """The file manager's question (a path, a name, a mode): enter answers, esc cancels, tab completes a
    local path."""

    BINDINGS = [Binding("tab", "complete", "Complete path", id="files.complete")]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "complete":
            return self.suggester is not None
        return True

    def action_complete(self) -> None:
        self.cursor_position = len(self.value)
        self.action_cursor_right()  # at the end, takes the suggestion shown


class FilesPane(SessionPane):
    DRAWN_INTO = ("RemoteFileTree", "FileViewer", "PathInput", "#files-info", "#files-goto-error")
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
    FilesPane #files-progress { height: auto; display: none; padding: 0 1; }
    FilesPane #files-progress.active { display: block; }
    FilesPane #files-progress ProgressBar { width: 1fr; }
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
        #: The open question: what answers it (`_answer_*`) and what it is about.
        self._prompt_kind: str | None = None
        self._prompt_about: str = ""
        #: An entry to highlight once its directory has been listed again (after making or moving it).
        self._highlight_later: str | None = None
        self._progress_shown_at = 0.0

    def compose(self) -> ComposeResult:
        yield HintLine(HINT, id="files-hint")
        with Horizontal(id="files-body"):
            with Vertical(id="files-left"):
                yield PathInput(placeholder="path on the instance, enter to go, esc to cancel", id="files-goto")
                yield Static("", id="files-goto-error", markup=False)
                with Vertical(id="files-prompt"):
                    yield Static("", id="files-prompt-label", markup=False)
                    yield PromptInput(id="files-prompt-input")
                    yield Static("", id="files-prompt-error", markup=False)
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
        directory = await self._working_directory()
        if self.in_place():
            self.file_tree.set_root(directory or "/")

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
        self._go(posixpath.normpath(posixpath.join(self.file_tree.root_path, typed)))

    @work(exclusive=True, group="files-nav")
    async def _go(self, path: str) -> None:
        info: FileInfo | ClientError
        try:
            info = await self.client.fs.file_info(self.session_id, path)
        except ClientError as error:
            info = error
        if not self.in_place():
            return
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
        info: FileInfo | ClientError
        try:
            info = await self.client.fs.file_info(self.session_id, path)
        except ClientError as error:
            info = error
        if not self.in_place():
            return
        if isinstance(info, ClientError):
            self.query_one("#files-info", Static).update(Text(f"{path}\n{info}", style="red"))
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
                self._save(path, target)

        self.app.push_screen(SaveScreen(f"Save {posixpath.basename(path) or path}", posixpath.basename(path) or "file",
                                        what=f"{path} on the instance"), chosen)

    @work(exclusive=True, group="files-save")
    async def _save(self, path: str, target: Path) -> None:
        client = self.client
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
            services(self).report_error(error, f"Could not save {path}")
            return
        bar.update(total=max(received, 1) if not info.size_bytes else info.size_bytes, progress=received)
        label.update(Text(f"Saved {human_bytes(received)} to {target}"))
        self.last_saved = target
        self.notify(str(target), title=f"Saved {posixpath.basename(path)}")
        self.set_timer(SAVED_BAR_SECONDS, lambda: box.remove_class("active"))

    # progress -----------------------------------------------------------------

    def _progress_begin(self, text: str, total: int | None) -> None:
        self.query_one("#files-progress").add_class("active")
        self.query_one("#files-progress-label", Static).update(Text(text))
        self.query_one("#files-progress-bar", ProgressBar).update(total=total or None, progress=0)
        self._progress_shown_at = 0.0

    def _progress_at(self, done: int) -> None:
        """Move the bar (at most every PROGRESS_EVERY_SECONDS: a transfer calls this per chunk)."""
        now = time.monotonic()
        if now - self._progress_shown_at >= PROGRESS_EVERY_SECONDS:
            self._progress_shown_at = now
            self.query_one("#files-progress-bar", ProgressBar).update(progress=done)

    def _progress_end(self, text: str | None, done: int = 0) -> None:
        """The finished bar with `text` for a few seconds, or (None) gone at once after a failure."""
        box = self.query_one("#files-progress")
        if text is None:
            box.remove_class("active")
            return
        self.query_one("#files-progress-bar", ProgressBar).update(total=max(done, 1), progress=max(done, 1))
        self.query_one("#files-progress-label", Static).update(Text(text))
        self.set_timer(SAVED_BAR_SECONDS, lambda: box.remove_class("active"))

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
        return posixpath.dirname(entry.path) or "/"

    def _changed_dirs(self, *paths: str) -> None:
        """List these directories again now (the watch would too, a moment later, or not at all)."""
        for path in paths:
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

    def _ask(self, kind: str, question: str, value: str, about: str = "", *, local_paths: bool = False) -> None:
        """Open the question line: `kind` picks the `_answer_<kind>` that gets the typed text."""
        self._prompt_kind, self._prompt_about = kind, about
        self.query_one("#files-prompt-label", Static).update(Text(question))
        self.query_one("#files-prompt-error", Static).update("")
        field = self.query_one(PromptInput)
        field.suggester = LocalPathSuggester() if local_paths else None
        field.value = value
        self.query_one("#files-prompt").add_class("open")
        field.focus()
        field.cursor_position = len(value)

    def _close_prompt(self) -> None:
        self._prompt_kind = None
        self.query_one("#files-prompt").remove_class("open")
        self.file_tree.focus()

    def _prompt_error(self, text: str) -> None:
        self.query_one("#files-prompt-error", Static).update(Text(text))

    @on(PathInput.Closed, "#files-prompt-input")
    def _prompt_cancelled(self, event: PathInput.Closed) -> None:
        event.stop()
        self._close_prompt()

    @on(Input.Submitted, "#files-prompt-input")
    def _prompt_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        kind = self._prompt_kind
        if kind is not None:
            getattr(self, f"_answer_{kind}")(event.value.strip(), self._prompt_about)

    def _instance_path(self, typed: str, base: str) -> str:
        """A path typed for the instance: absolute as is, else from `base`; normalised."""
        return posixpath.normpath(posixpath.join(base, typed))

    def _outside(self, typed: str, target: str, base: str, verb: str, then: Callable[[], object]) -> None:
        """Run `then` at once when `target` (resolved from `typed`) stays inside `base`; else show where it
        resolves to and ask first (`../../etc/x` typed in /workspace must not land in /etc unseen)."""
        inside = target == base or target.startswith(dir_label(base))
        if inside:
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
        directory = self.current_directory()
        start = os.getcwd().rstrip("/") + "/"
        self._ask("upload", f"Upload into {dir_label(directory)} · a local file or directory (tab completes):", start,
                  directory, local_paths=True)

    def _answer_upload(self, typed: str, directory: str) -> None:
        if not typed:
            self._prompt_error("Type the path of a local file or directory.")
            return
        self._prepare_upload(Path(os.path.expanduser(typed)), directory)

    @work(exclusive=True, group="files-prompt")
    async def _prepare_upload(self, local: Path, directory: str) -> None:
        try:
            what = await asyncio.to_thread(plan, local)
        except OSError as error:
            self._prompt_error(f"{error.filename or local}: {error.strerror or error}")
            return
        target = posixpath.join(directory, what.name)
        self._close_prompt()
        try:
            existing = await self.client.fs.file_info(self.session_id, target)
        except NotFound:
            existing = None
        except ClientError as error:
            services(self).report_error(error, f"Could not upload to {target}")
            return
        if existing is None:
            self._upload(what, target)
            return
        kind = "directory" if existing.is_dir else "file"
        merge = " (files of the same name are replaced, others stay)" if existing.is_dir and what.is_dir else ""

        def answered(yes: bool | None) -> None:
            if yes:
                self._upload(what, target)

        self.app.push_screen(ConfirmScreen(f"{target} exists on the instance ({kind}). Upload "
                                           f"{what.describe()} over it{merge}?", "Upload"), answered)

    @work(exclusive=True, group="files-transfer")
    async def _upload(self, what: UploadPlan, target: str) -> None:
        self._progress_begin(f"Uploading {what.local} → {target}", what.size)
        try:
            await upload(self.client.fs, self.session_id, what, target, progress=self._progress_at)
        except ClientError as error:
            self._progress_end(None)
            services(self).report_error(error, f"Could not upload {what.local}")
            return
        self._progress_end(f"Uploaded {what.describe()} ({human_bytes(what.size)}) to {target}", what.size)
        self.notify(target, title=f"Uploaded {what.describe()}")
        self._highlight_later = target
        self._changed_dirs(posixpath.dirname(target) or "/")

    # new directory, rename/move, mode ---------------------------------------------

    def action_new_directory(self) -> None:
        directory = self.current_directory()
        self._ask("mkdir", f"New directory in {dir_label(directory)} (a name, or an absolute path):", "", directory)

    def _answer_mkdir(self, typed: str, directory: str) -> None:
        if not typed:
            self._prompt_error("Type a name for the new directory.")
            return
        target = self._instance_path(typed, directory)
        self._outside(typed, target, directory, "Make it", lambda: self._mkdir(target))

    @work(exclusive=True, group="files-prompt")
    async def _mkdir(self, path: str) -> None:
        try:
            await self.client.fs.create_directory(self.session_id, path)
        except ClientError as error:
            self._prompt_error(str(error))
            return
        self._close_prompt()
        self.notify(path, title="Directory made")
        self._highlight_later = path
        self._changed_dirs(posixpath.dirname(path) or "/")

    def action_move(self) -> None:
        entry = self.selected_entry()
        if entry is None or entry.path == self.file_tree.root_path:
            self.notify("Highlight a file or directory below the top of the tree first", severity="warning")
            return
        self._ask("move", f"Rename or move {entry.path} to (a new name, or an absolute path):", entry.path,
                  entry.path)

    def _answer_move(self, typed: str, source: str) -> None:
        if not typed:
            self._prompt_error("Type the new name or path.")
            return
        base = posixpath.dirname(source) or "/"
        target = self._instance_path(typed, base)
        if target == source:
            self._close_prompt()
            return
        self._outside(typed if typed != source else target, target, base, "Move it",
                      lambda: self._move(source, target, overwrite=False))

    @work(exclusive=True, group="files-prompt")
    async def _move(self, source: str, target: str, *, overwrite: bool) -> None:
        try:
            await self.client.fs.move(self.session_id, source, target, overwrite=overwrite)
        except Conflict:
            def answered(yes: bool | None) -> None:
                if yes:
                    self._move(source, target, overwrite=True)

            self.app.push_screen(ConfirmScreen(f"{target} already exists. Replace it with {source}?", "Replace"),
                                 answered)
            return
        except ClientError as error:
            self._prompt_error(str(error))
            if self._prompt_kind is None:
                services(self).report_error(error, f"Could not move {source}")
            return
        if self._prompt_kind == "move":
            self._close_prompt()
        self.notify(f"{source} → {target}", title="Moved")
        self._highlight_later = target
        self._changed_dirs(posixpath.dirname(source) or "/", posixpath.dirname(target) or "/")

    def action_chmod(self) -> None:
        entry = self.selected_entry()
        if entry is None:
            self.notify("Highlight a file or directory first", severity="warning")
            return
        mode = parse_mode(entry.info.mode) if entry.info is not None else None  # ls -l or Go's form (Kernel)
        current = mode.bits if mode is not None else None
        shown = f" (now {mode.ls()})" if mode is not None else ""
        self._ask("chmod", f"Mode of {entry.path}{shown}, in octal:",
                  format(current, "o") if current is not None else "", entry.path)

    def _answer_chmod(self, typed: str, path: str) -> None:
        bits = mode_bits(typed) if typed else None
        if bits is None or not typed.isdigit():
            self._prompt_error("Type an octal mode such as 644 or 755.")
            return
        self._chmod(path, typed)

    @work(exclusive=True, group="files-prompt")
    async def _chmod(self, path: str, mode: str) -> None:
        try:
            await self.client.fs.set_file_permissions(self.session_id, path, mode)
        except ClientError as error:
            self._prompt_error(str(error))
            return
        self._close_prompt()
        self.notify(f"{path} is now {mode}", title="Mode changed")
        self._changed_dirs(posixpath.dirname(path) or "/")
        self._fetch_info(path)

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
        self._changed_dirs(posixpath.dirname(path) or "/")

    # zip ------------------------------------------------------------------------

    def action_zip(self) -> None:
        self._zip_asking(self.current_directory())

    @work(exclusive=True, group="files-zip-size")
    async def _zip_asking(self, directory: str) -> None:
        """Say how large first (du on the instance, bounded): a zip of `/` is the whole instance."""
        name = posixpath.basename(directory.rstrip("/")) or "root"
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
                self._zip(directory, target)

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
    async def _zip(self, directory: str, target: Path) -> None:
        partial = partial_path(target)
        self._progress_begin(f"Zipping {directory} → {target}", None)
        try:
            size = await self.client.fs.save_dir_zip(self.session_id, directory, partial,
                                                         progress=self._progress_at)
            target = commit(partial, target)
        except (ClientError, OSError) as error:
            partial.unlink(missing_ok=True)
            self._progress_end(None)
            services(self).report_error(error, f"Could not download {directory}")
            return
        self._progress_end(f"Saved {directory} as {target} ({human_bytes(size)})", size)
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
                        self._dirty.add(posixpath.dirname(event.path.rstrip("/")) or "/")
                        if self._flush_timer is None:
                            self._flush_timer = self.set_timer(WATCH_SETTLE_SECONDS, self._flush_changes)
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

    def _flush_changes(self) -> None:
        self._flush_timer = None
        dirty, self._dirty = self._dirty, set()
        self._changed_dirs(*sorted(dirty))
