"""The files pane against a real local service (Pilot), and SVG snapshots of the file viewer.

A test writes files into a fresh directory of the session (`session_area`: a session's sandbox sees none of
this machine's directories) and browses them through the session. The pane is mounted in a TabPane on its own
screen, as the session screen does.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

import httpx
import pytest
from app_support import (
    PaneScreen,
    accept_save_dialog,
    make_app,
    screen_shown,
    type_text,
    use_downloads_dir,
    wait_for,
    wait_for_notification,
)
from conftest import ServiceHandle, session_area
from PIL import Image as PILImage
from rich.style import Style
from textual.app import App, ComposeResult
from textual.widgets import ProgressBar

from bbrowse.config import ENV_IMAGE_RENDERING
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.file_kind import FileKind
from bbrowse.tui.panes.files import FilesPane
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.widgets.file_viewer import FIRST_READ, LOAD_STEP, FileViewer
from bbrowse.tui.widgets.image_view import ImageView

PYTHON_SOURCE = b'''"""A module."""

import os


def greet(name: str) -> str:
    # say hello
    return f"hello {name} from {os.getpid()}"


class Greeter:
    count = 42
'''






@pytest.fixture(scope="module")
def session_id(browserless_module_session_id: str) -> str:
    """One session for the module, on the service with no Chromium: these tests use its files and processes,
    never its browser; each test works in a directory of its own (`area`)."""
    return browserless_module_session_id


@pytest.fixture
def area(browserless_service: ServiceHandle, session_id: str) -> Path:
    """A fresh directory of the test's session: str() is the path inside, what the pane is asked to show;
    file operations act on the same files from outside (conftest.session_area)."""
    return session_area(browserless_service, session_id, f"files-{secrets.token_hex(4)}")


async def open_pane(pilot, app: BbrowseApp, session_id: str) -> FilesPane:
    await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
    pane = FilesPane(session_id)
    await app.push_screen(PaneScreen(pane, "Files", "files"))
    await wait_for(pilot, lambda: pane.file_tree.root_path != "/" or pane.working_directory is not None)
    pane.focus_default()  # what the session screen does when it switches to the tab
    return pane


async def go_to(pilot, pane: FilesPane, path: Path | str) -> None:
    await pilot.press("g", "ctrl+u")
    await type_text(pilot, str(path), then="enter")


def child_labels(pane: FilesPane) -> list[str]:
    return [str(node.label) for node in pane.file_tree.root.children]


def info_text(pane: FilesPane) -> str:
    return str(pane.query_one("#files-info").render())


def has_colour_other_than(strips, default: Style) -> bool:
    return any(seg.style is not None and seg.style.color not in (None, default.color)
               for strip in strips for seg in strip if seg.text.strip())


async def test_tree_starts_at_the_working_directory_and_lists_a_directory(
    browserless_service, browserless_http: httpx.AsyncClient, session_id: str, area: Path,
) -> None:
    (area / "sub").mkdir()
    (area / "a.txt").write_bytes(b"hello")
    (area / "a.txt").chmod(0o640)
    (area / "b.py").write_bytes(PYTHON_SOURCE)
    pwd = (await browserless_http.post(f"/browsers/{session_id}/process/exec", json={"command": "pwd"})).json()
    working_directory = base64.b64decode(pwd["stdout_b64"]).decode().strip()

    app = make_app(browserless_service)
    async with app.run_test(size=(140, 36)) as pilot:
        pane = await open_pane(pilot, app, session_id)
        await wait_for(pilot, lambda: pane.file_tree.root_path == working_directory)

        await go_to(pilot, pane, area)
        await wait_for(pilot, lambda: child_labels(pane) == ["sub/", "a.txt", "b.py"])
        assert pane.file_tree.root_path == str(area)

        # highlighting a file shows its file_info: size, mode, modification time
        pane.file_tree.focus()
        await pilot.press("down", "down")  # root → sub/ → a.txt
        await wait_for(pilot, lambda: "a.txt" in info_text(pane) and "5 bytes" in info_text(pane))
        assert "-rw-r-----" in info_text(pane)
        assert "modified" in info_text(pane)

        # `/` goes to the root, `~` back to the working directory
        await pilot.press("slash")
        await wait_for(pilot, lambda: pane.file_tree.root_path == "/" and "tmp/" in child_labels(pane))
        await pilot.press("tilde")
        await wait_for(pilot, lambda: pane.file_tree.root_path == working_directory)


async def test_go_to_a_missing_path_shows_the_service_error(
    browserless_service, session_id: str, tmp_path: Path,
) -> None:
    app = make_app(browserless_service)
    async with app.run_test(size=(140, 36)) as pilot:
        pane = await open_pane(pilot, app, session_id)
        await go_to(pilot, pane, tmp_path / "nope")
        error = lambda: str(pane.query_one("#files-goto-error").render())  # noqa: E731
        await wait_for(pilot, lambda: "not_found" in error())
        assert "404" in error()
        await pilot.press("escape")  # closes the field, stays on the screen
        await wait_for(pilot, lambda: not pane.query_one("#files-goto").has_class("open"))
        assert isinstance(app.screen, PaneScreen)


async def test_a_python_file_opens_highlighted(browserless_service, session_id: str, area: Path) -> None:
    (area / "greet.py").write_bytes(PYTHON_SOURCE)
    app = make_app(browserless_service)
    async with app.run_test(size=(140, 36)) as pilot:
        pane = await open_pane(pilot, app, session_id)
        await go_to(pilot, pane, area)
        await wait_for(pilot, lambda: child_labels(pane) == ["greet.py"])
        pane.file_tree.focus()
        await pilot.press("down", "enter")
        viewer = pane.viewer
        await wait_for(pilot, lambda: viewer.kind is FileKind.TEXT and viewer.complete)
        await wait_for(pilot, lambda: len(viewer.lines.highlighted) > 0)
        assert viewer.language == "python"
        lines = viewer.lines
        assert [lines.row_text(i) for i in range(3)] == ['"""A module."""', "", "import os"]
        strips = [lines.render_line(y) for y in range(12)]
        assert "def greet(name: str) -> str:" in "".join(seg.text for seg in strips[5])
        assert has_colour_other_than(strips, lines._style(""))
        assert "greet.py" in str(viewer.query_one("#viewer-title").render())


async def test_a_binary_file_shows_a_hex_dump(browserless_service, session_id: str, area: Path) -> None:
    target = area / "blob.bin"
    target.write_bytes(bytes(range(256)) * 4)
    app = make_app(browserless_service)
    async with app.run_test(size=(140, 36)) as pilot:
        pane = await open_pane(pilot, app, session_id)
        await go_to(pilot, pane, target)  # a file: its directory is shown and the file opened
        viewer = pane.viewer
        await wait_for(pilot, lambda: viewer.kind is FileKind.BINARY and viewer.complete)
        await wait_for(pilot, lambda: "blob.bin" in child_labels(pane))
        first_row = "00000000  00 01 02 03 04 05 06 07  08 09 0a 0b 0c 0d 0e 0f  |................|"
        # drawn once laid out: the first render_line of a viewer not yet laid out is empty (seen at load 38)
        await wait_for(pilot, lambda: "".join(seg.text for seg in viewer.lines.render_line(0)).startswith(first_row),
                       what="the first hex row drawn")
        assert viewer.lines.row_text(4).startswith("00000040  40 41 42 43")
        assert viewer.lines.row_text(4).endswith("|@ABCDEFGHIJKLMNO|")
        assert viewer.lines.content_rows == 64


async def test_save_writes_the_file_byte_exact_with_a_progress_bar(
    browserless_service, session_id: str, area: Path, tmp_path: Path, monkeypatch,
) -> None:
    data = os.urandom(3 * 1024 * 1024 + 7)
    source = area / "remote" / "data.bin"
    source.parent.mkdir()
    source.write_bytes(data)
    out = use_downloads_dir(monkeypatch, tmp_path)
    out.mkdir()
    (out / "data.bin").write_bytes(b"already here")  # never overwritten
    app = make_app(browserless_service)
    async with app.run_test(size=(140, 36)) as pilot:
        pane = await open_pane(pilot, app, session_id)
        await go_to(pilot, pane, source)
        await wait_for(pilot, lambda: pane.viewer.kind is FileKind.BINARY)
        # the file gone to is the highlighted one, what `s` saves
        await wait_for(pilot, lambda: getattr(pane.selected_entry(), "path", None) == str(source))
        await pilot.press("s")
        await wait_for(pilot, lambda: screen_shown(app, SaveScreen))
        assert app.screen.query_one("#save-path").value == str(out / "data (1).bin")
        await accept_save_dialog(pilot, app)
        await wait_for(pilot, lambda: pane.last_saved is not None, timeout=30)
        saved = pane.last_saved
        assert saved == out / "data (1).bin"
        assert saved.read_bytes() == data
        assert (out / "data.bin").read_bytes() == b"already here"
        assert not list(out.glob("*.part"))
        bar = pane.query_one("#files-progress-bar", ProgressBar)
        assert pane.query_one("#files-progress").has_class("active")
        assert bar.total == len(data) and bar.progress == len(data)
        assert str(saved) in str(pane.query_one("#files-progress-label").render())
        await wait_for_notification(pilot, str(saved))


def _fds_open_on(pid: int, path: Path) -> int:
    """How many of the process's descriptors are open on `path`'s file (by device and inode: a descriptor a
    session's sandbox opened is named by the path inside it)."""
    target = os.stat(path)
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        count += (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino)
    return count


async def test_a_large_file_shows_its_first_screen_without_reading_it_all(
    browserless_service, session_id: str, area: Path,
) -> None:
    big = area / "big.log"
    line = b"2024-05-01T12:00:00Z INFO request served path=/index.html status=200 bytes=5120\n"
    block = line * (1024 * 1024 // len(line))
    with big.open("wb") as f:
        for _ in range(50):
            f.write(block)
    size = big.stat().st_size
    app = make_app(browserless_service)
    async with app.run_test(size=(140, 36)) as pilot:
        pane = await open_pane(pilot, app, session_id)
        viewer = pane.viewer
        await go_to(pilot, pane, big)
        await wait_for(pilot, lambda: viewer.lines.first_paint_at is not None)
        assert viewer.lines.row_text(0) == line.decode().rstrip("\n")
        await wait_for(pilot, lambda: not viewer.is_loading)
        assert viewer.loaded_bytes == FIRST_READ
        # the stream was cut: the viewer received a bounded amount, and the service closed the file
        assert viewer.bytes_received <= FIRST_READ + 64 * 1024
        assert viewer.total_size == size and not viewer.complete
        await wait_for(pilot, lambda: _fds_open_on(browserless_service.pid, big) == 0)
        assert "m (or scrolling past the end) loads more" in viewer.lines.row_text(viewer.lines.row_count - 1)

        await pilot.press("m")
        loaded = FIRST_READ + LOAD_STEP
        await wait_for(pilot, lambda: not viewer.is_loading and viewer.loaded_bytes == loaded)
        assert viewer.lines.row_text(loaded // len(line) - 1) == line.decode().rstrip("\n")
        assert viewer.bytes_received <= FIRST_READ + loaded + 2 * 64 * 1024

        # scrolling to the end loads the next step too
        viewer.lines.focus()
        await pilot.press("end")
        await wait_for(pilot, lambda: not viewer.is_loading and viewer.loaded_bytes == loaded + LOAD_STEP)


async def test_an_image_file_is_drawn_as_an_image(
    browserless_service, session_id: str, area: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV_IMAGE_RENDERING, "halfcell")
    target = area / "picture.bin"  # no extension: recognised by its magic bytes
    PILImage.new("RGB", (64, 32), (200, 30, 30)).save(target, format="PNG")
    app = make_app(browserless_service)
    async with app.run_test(size=(140, 36)) as pilot:
        pane = await open_pane(pilot, app, session_id)
        await go_to(pilot, pane, target)
        view = pane.viewer.query_one(ImageView)
        await wait_for(pilot, lambda: view.image is not None)
        assert view.image.size == (64, 32)
        assert view.rendering == "halfcell"
        assert pane.viewer.has_class("-image")
        await pilot.press("x")  # the same bytes as hex
        await wait_for(pilot, lambda: pane.viewer.has_class("-lines"))
        assert pane.viewer.lines.row_text(0).endswith("|.PNG........IHDR|")


# snapshots -------------------------------------------------------------------------------------


class ViewerApp(App):
    """Only the file viewer, fed fixed bytes: deterministic pictures of text and hex mode."""

    def __init__(self, path: str, data: bytes, size: int | None = None) -> None:
        super().__init__()
        self.file_path, self.file_data, self.file_size = path, data, size

    def compose(self) -> ComposeResult:
        yield FileViewer()

    def on_mount(self) -> None:
        self.query_one(FileViewer).show_bytes(self.file_path, self.file_data, self.file_size)


async def _settle(pilot) -> None:
    viewer = pilot.app.query_one(FileViewer)
    for _ in range(200):
        if viewer.is_settled and (viewer.lines.highlighted or viewer.kind is not FileKind.TEXT):
            break
        await pilot.pause(0.05)
    await pilot.pause()


def test_snapshot_viewer_text_mode(snap_compare) -> None:
    assert snap_compare(ViewerApp("/srv/app/greet.py", PYTHON_SOURCE), terminal_size=(80, 20), run_before=_settle)


def test_snapshot_viewer_hex_mode(snap_compare) -> None:
    data = b"\x89PNG-ish\x00\x01\x02 binary \xff\xfe\ttab\nline\r\n" + bytes(range(0x20, 0x80)) + bytes(range(8))
    assert snap_compare(ViewerApp("/srv/app/blob.bin", data, size=4096), terminal_size=(80, 20), run_before=_settle)


async def test_viewer_draws_plain_text_first_and_highlights_after() -> None:
    """The first screen does not wait for Pygments (it runs in a thread and replaces the plain rows)."""
    app = ViewerApp("/x/y.py", PYTHON_SOURCE * 400)
    async with app.run_test(size=(80, 20)) as pilot:
        viewer = app.query_one(FileViewer)
        await pilot.pause()
        assert viewer.lines.first_paint_at is not None
        assert viewer.lines.first_paint_at - viewer.opened_at < 1.0
        await _settle(pilot)
        assert len(viewer.lines.highlighted) == viewer.lines.content_rows
        assert viewer.lines.first_paint_at < viewer.lines.first_highlight_at
