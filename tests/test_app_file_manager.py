"""The Files tab as a file manager (Pilot) against a real local service: upload a file and a directory,
new directory, rename/move, delete (asked first, saying what), change mode, download a directory as a
zip, and a listing that follows changes made on the instance by someone else.

"The instance" is a fresh directory of the session (`session_area`: a session's sandbox sees none of this
machine's directories, so the files uploaded come from the test's tmp_path, the app's side): what the pane
did is checked on disk through the session's folder, and changes "on the instance" are made by writing there.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import zipfile
from pathlib import Path

import pytest
from app_support import PaneScreen, accept_save_dialog, make_app, screen_shown, type_text, use_downloads_dir, wait_for
from conftest import ServiceHandle, session_area
from textual.worker import WorkerCancelled, WorkerState

from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.tui.file_paths import complete_local_path, mode_bits
from bbrowse.tui.panes.files import FilesPane
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import until_settled

# pieces without a service ----------------------------------------------------------------


def test_modes_read_from_ls_style_text_or_octal() -> None:
    assert mode_bits("-rw-r--r--") == 0o644
    assert mode_bits("drwxr-xr-x") == 0o755
    assert mode_bits("-rwsr-x--T") == 0o5750
    assert mode_bits("0750") == 0o750 and mode_bits("644") == 0o644
    assert mode_bits("rw-") is None and mode_bits("-rwxq-----") is None and mode_bits("77777") is None


def test_local_paths_complete_as_a_shell_does(tmp_path: Path) -> None:
    (tmp_path / "report-2024.pdf").write_text("x")
    (tmp_path / "report-2025.pdf").write_text("x")
    (tmp_path / "site").mkdir()
    (tmp_path / ".hidden").write_text("x")
    base = str(tmp_path)
    assert complete_local_path(f"{base}/rep") == f"{base}/report-202"  # what the matches share
    assert complete_local_path(f"{base}/report-2025") == f"{base}/report-2025.pdf"
    assert complete_local_path(f"{base}/si") == f"{base}/site/"  # a directory gets its slash
    assert complete_local_path(f"{base}/report-202") is None  # ambiguous, nothing more to add
    assert complete_local_path(f"{base}/nothing") is None
    assert complete_local_path(f"{base}/.hi") == f"{base}/.hidden"


# the pane against the service ------------------------------------------------------------


@pytest.fixture(scope="module")
def session_id(browserless_module_session_id: str) -> str:
    """One session for the module, on the service with no Chromium: these tests use its files and processes,
    never its browser; each test works in a directory of its own (`area`)."""
    return browserless_module_session_id


@pytest.fixture
def area(browserless_service: ServiceHandle, session_id: str) -> Path:
    """A fresh directory of the test's session: str() is the path inside, what the pane is asked about; file
    operations act on the same files from outside (conftest.session_area)."""
    return session_area(browserless_service, session_id, f"files-{secrets.token_hex(4)}")


async def open_at(pilot, app: BbrowseApp, session_id: str, directory: Path) -> FilesPane:
    await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
    pane = FilesPane(session_id)
    await app.push_screen(PaneScreen(pane, "Files", "files"))
    await wait_for(pilot, lambda: pane.working_directory is not None or pane.file_tree.root_path != "/")
    pane.focus_default()
    await pilot.press("g", "ctrl+u")
    await type_text(pilot, str(directory), then="enter")
    await wait_for(pilot, lambda: pane.file_tree.root_path == str(directory) and pane.file_tree.root.data.loaded)
    await wait_for(pilot, lambda: pane.watching == str(directory), what="the directory is watched")
    pane.file_tree.focus()
    return pane


def labels(pane: FilesPane, path: Path | None = None) -> list[str]:
    node = pane.file_tree.root if path is None else pane.file_tree.node_for_path(str(path))
    return [str(child.label) for child in node.children] if node is not None else []


async def highlight(pilot, pane: FilesPane, path: Path) -> None:
    await wait_for(pilot, lambda: pane.file_tree.node_for_path(str(path)) is not None, what=f"{path.name} listed")
    pane.file_tree.move_cursor(pane.file_tree.node_for_path(str(path)))
    await wait_for(pilot, lambda: pane.selected_entry() is not None and pane.selected_entry().path == str(path))


async def answer(pilot, pane: FilesPane, text: str) -> None:
    """Replace what the question line holds with `text` and press enter."""
    field = pane.query_one("#files-prompt-input")
    await wait_for(pilot, lambda: field.has_focus, what="the question line")
    await pilot.press("ctrl+u")
    await type_text(pilot, text, then="enter")


def prompt_error(pane: FilesPane) -> str:
    return str(pane.query_one("#files-prompt-error").render())


def progress_label(pane: FilesPane) -> str:
    return str(pane.query_one("#files-progress-label").render())


async def test_upload_a_file_with_completion_and_a_directory_with_progress(
    browserless_service, session_id, area, tmp_path,
) -> None:
    remote = area / "remote"
    remote.mkdir()
    local = tmp_path / "local"
    local.mkdir()
    (local / "notes-from-home.txt").write_text("notes")
    site = local / "site"
    (site / "css").mkdir(parents=True)
    (site / "index.html").write_text("<h1>hi</h1>")
    (site / "css" / "big.css").write_bytes(os.urandom(6 * 1024 * 1024))

    app = make_app(browserless_service)
    async with app.run_test(size=(160, 45)) as pilot:
        pane = await open_at(pilot, app, session_id, remote)
        await pilot.press("u")
        field = pane.query_one("#files-prompt-input")
        await wait_for(pilot, lambda: field.has_focus)
        assert f"Upload into {remote}/" in str(pane.query_one("#files-prompt-label").render())
        await pilot.press("ctrl+u")
        await type_text(pilot, f"{local}/notes", then="tab")  # tab completes the local path
        await wait_for(pilot, lambda: field.value == f"{local}/notes-from-home.txt", what="completed")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "notes-from-home.txt" in labels(pane), what="the upload listed")
        assert (remote / "notes-from-home.txt").read_text() == "notes"
        await wait_for(pilot, lambda: pane.selected_entry() is not None
                       and pane.selected_entry().path == str(remote / "notes-from-home.txt"))

        await pilot.press("u")
        await answer(pilot, pane, str(site))
        await wait_for(pilot, lambda: "Uploaded site/ (2 files)" in progress_label(pane), timeout=60)
        bar = pane.query_one("#files-progress-bar")
        assert bar.total == bar.progress == 6 * 1024 * 1024 + len("<h1>hi</h1>")
        assert (remote / "site" / "css" / "big.css").read_bytes() == (site / "css" / "big.css").read_bytes()
        await wait_for(pilot, lambda: "site/" in labels(pane))
        await wait_for(pilot, lambda: pane.selected_entry() is not None  # the upload is highlighted once listed
                       and pane.selected_entry().path == str(remote / "site"))

        # again, into the top directory: it exists there, so the pane asks before writing over it
        (site / "index.html").write_text("<h1>v2</h1>")
        pane.file_tree.move_cursor(pane.file_tree.root)
        await pilot.press("u")
        await answer(pilot, pane, str(site))
        await wait_for(pilot, lambda: screen_shown(app, ConfirmScreen))
        assert f"{remote / 'site'} exists" in str(app.screen.query_one(".dialog-question").render())
        await pilot.press("y")
        await wait_for(pilot, lambda: (remote / "site" / "index.html").read_text() == "<h1>v2</h1>", timeout=60)

        # a local path that does not exist: said in the question line, nothing sent
        await pilot.press("u")
        await answer(pilot, pane, str(local / "missing.txt"))
        await wait_for(pilot, lambda: "No such file" in prompt_error(pane))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not pane.query_one("#files-prompt").has_class("open"))


async def test_new_directory_rename_move_mode_and_delete(browserless_service, session_id, area) -> None:
    remote = area / "remote"
    remote.mkdir()
    (remote / "a.txt").write_text("a")
    (remote / "b.txt").write_text("b")
    (remote / "a.txt").chmod(0o644)

    app = make_app(browserless_service)
    async with app.run_test(size=(160, 45)) as pilot:
        pane = await open_at(pilot, app, session_id, remote)

        await pilot.press("n")
        await answer(pilot, pane, "made/deeper")
        await wait_for(pilot, lambda: (remote / "made" / "deeper").is_dir())
        await wait_for(pilot, lambda: "made/" in labels(pane))

        await highlight(pilot, pane, remote / "a.txt")
        await pilot.press("R")
        field = pane.query_one("#files-prompt-input")
        await wait_for(pilot, lambda: field.has_focus and field.value == str(remote / "a.txt"))
        await answer(pilot, pane, "renamed.txt")  # relative: next to it
        await wait_for(pilot, lambda: "renamed.txt" in labels(pane) and "a.txt" not in labels(pane))
        assert (remote / "renamed.txt").read_text() == "a"

        # onto an existing name: asked first, then replaced
        await highlight(pilot, pane, remote / "renamed.txt")
        await pilot.press("R")
        await answer(pilot, pane, "b.txt")
        await wait_for(pilot, lambda: screen_shown(app, ConfirmScreen))
        assert "b.txt already exists" in str(app.screen.query_one(".dialog-question").render())
        await pilot.press("y")
        await wait_for(pilot, lambda: not (remote / "renamed.txt").exists())
        assert (remote / "b.txt").read_text() == "a"

        # moved into a directory by absolute path
        await highlight(pilot, pane, remote / "b.txt")
        await pilot.press("R")
        await answer(pilot, pane, str(remote / "made" / "b.txt"))
        await wait_for(pilot, lambda: (remote / "made" / "b.txt").exists() and not (remote / "b.txt").exists())

        # mode: the question starts from the current one
        target = remote / "made" / "b.txt"
        pane.file_tree.node_for_path(str(remote / "made")).expand()
        await highlight(pilot, pane, target)
        await wait_for(pilot, lambda: pane.selected_entry().info is not None)
        await pilot.press("c")
        await wait_for(pilot, lambda: pane.query_one("#files-prompt-input").value == "644")
        await answer(pilot, pane, "rwx")
        await wait_for(pilot, lambda: "octal" in prompt_error(pane))
        await answer(pilot, pane, "600")
        await wait_for(pilot, lambda: stat.S_IMODE(target.stat().st_mode) == 0o600)

        # delete asks first and says what: n keeps it, y deletes
        await highlight(pilot, pane, remote / "made")
        await pilot.press("d")
        await wait_for(pilot, lambda: screen_shown(app, ConfirmScreen))
        question = str(app.screen.query_one(".dialog-question").render())
        assert f"Delete the directory {remote / 'made'}" in question and "2 entries" in question
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert (remote / "made").is_dir()
        await pilot.press("d")
        await wait_for(pilot, lambda: screen_shown(app, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: not (remote / "made").exists())
        await wait_for(pilot, lambda: "made/" not in labels(pane))


async def test_download_a_directory_as_a_zip(browserless_service, session_id, area, tmp_path, monkeypatch) -> None:
    remote = area / "remote"
    (remote / "site" / "css").mkdir(parents=True)
    (remote / "site" / "index.html").write_text("<h1>hi</h1>")
    (remote / "site" / "css" / "main.css").write_text("body{}")
    downloads = use_downloads_dir(monkeypatch, tmp_path)

    app = make_app(browserless_service)
    async with app.run_test(size=(160, 45)) as pilot:
        pane = await open_at(pilot, app, session_id, remote)
        await highlight(pilot, pane, remote / "site")
        await pilot.press("z")
        await accept_save_dialog(pilot, app)
        await wait_for(pilot, lambda: pane.last_saved is not None, timeout=30)
        assert pane.last_saved == downloads / "site.zip"
        with zipfile.ZipFile(pane.last_saved) as archive:
            assert archive.read("index.html") == b"<h1>hi</h1>"
            assert archive.read("css/main.css") == b"body{}"
        assert "Saved" in progress_label(pane) and str(pane.last_saved) in progress_label(pane)


async def test_the_listing_follows_changes_made_on_the_instance(browserless_service, session_id, area) -> None:
    remote = area / "remote"
    (remote / "sub").mkdir(parents=True)
    (remote / "sub" / "inner.txt").write_text("x")
    (remote / "keep.txt").write_text("x")

    app = make_app(browserless_service)
    async with app.run_test(size=(160, 45)) as pilot:
        pane = await open_at(pilot, app, session_id, remote)
        sub = pane.file_tree.node_for_path(str(remote / "sub"))
        sub.expand()
        await wait_for(pilot, lambda: labels(pane, remote / "sub") == ["inner.txt"])
        await highlight(pilot, pane, remote / "keep.txt")

        (remote / "appeared.txt").write_text("new")  # someone else, on the instance
        await wait_for(pilot, lambda: "appeared.txt" in labels(pane), what="a new file listed by itself")
        assert sub.is_expanded and labels(pane, remote / "sub") == ["inner.txt"]  # the rest kept as it was
        assert pane.selected_entry().path == str(remote / "keep.txt")  # the highlight too

        (remote / "sub" / "deep.txt").write_text("new")  # below the top: the watch is recursive
        await wait_for(pilot, lambda: "deep.txt" in labels(pane, remote / "sub"))

        (remote / "appeared.txt").unlink()
        (remote / "sub" / "inner.txt").rename(remote / "sub" / "moved.txt")
        await wait_for(pilot, lambda: "appeared.txt" not in labels(pane))
        await wait_for(pilot, lambda: sorted(labels(pane, remote / "sub")) == ["deep.txt", "moved.txt"])


async def test_replies_that_come_after_the_pane_is_gone_draw_nothing(browserless_service, session_id, area) -> None:
    """A file's details or a path's lookup that arrives after the pane was taken apart (the session screen
    closed, the app quit) is a message to a pane that is gone, never drawn (a worker's failure fails the app)."""
    (area / "a.txt").write_text("x")
    app = make_app(browserless_service)
    async with app.run_test(size=(120, 30)) as pilot:
        pane = await open_at(pilot, app, session_id, area)
        await until_settled(app)  # the tree's own highlight would start a lookup that replaces the first one
        workers = [pane._fetch_info(str(area / "a.txt")), pane._go(str(area / "missing"))]
        await app.pop_screen()
        for worker in workers:
            # a reply slower than the pane's removal is cancelled with it (also nothing drawn)
            with contextlib.suppress(WorkerCancelled):
                await worker.wait()
        await pilot.pause()
        assert not pane.is_attached
        assert all(worker.state in (WorkerState.SUCCESS, WorkerState.CANCELLED) for worker in workers)
    # leaving the block raises a worker's failure, if any
