"""The Files tab and the screenshot status as a newcomer meets them (issue 22), at 80×24: `s` saves the
highlighted entry; a path typed that resolves outside the directory is shown and asked about before
anything is made; zipping `/` says how large first and never shows `//`; a fake PNG is "not a valid
image"; a long root path keeps its end; the hex view fits its rows to the pane. Real service, Pilot."""

from __future__ import annotations

import re
import uuid

from app_support import PaneScreen, make_app, screen_shown, type_text, wait_for
from textual.widgets import Tree

from bbrowse.client import BrowserClient
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.panes.files import FilesPane
from bbrowse.tui.panes.screenshot import parse_region
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import notifications
from bbrowse.tui.widgets.image_view import image_widget_class, rendering_label


def rows(widget) -> list[str]:
    return ["".join(segment.text for segment in widget.render_line(y)) for y in range(widget.size.height)]


async def test_files_at_80_columns_save_paths_zip_images_and_hex(
    browserless_service, browserless_module_session_id
) -> None:
    session_id = browserless_module_session_id  # its files only, never its browser
    root = f"/tmp/newcomer-{uuid.uuid4().hex[:6]}/a-rather-long-directory-name/and-the-part-that-matters"
    client = BrowserClient(browserless_service.url, browserless_service.token)
    for name, data in (("a.txt", b"alpha\n"), ("b.txt", b"bravo\n"), ("fake.png", b"\x89PNG\r\n\x1a\n"),
                       ("bytes.bin", bytes(range(256)) * 2)):
        await client.fs.write_file(session_id, f"{root}/{name}", data)
    app = make_app(browserless_service)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        pane = FilesPane(session_id)
        await app.push_screen(PaneScreen(pane, "Files", "files"))
        await wait_for(pilot, lambda: pane.working_directory is not None or pane.file_tree.root_path != "/")
        pane.focus_default()
        await pilot.press("g", "ctrl+u")
        await type_text(pilot, root, then="enter")
        tree = pane.file_tree
        await wait_for(pilot, lambda: tree.root_path == root and tree.root.data.loaded and len(tree.root.children) == 4)
        tree.focus()

        # the root path is cut from the left, keeping the part that matters
        first = rows(pane.query_one(Tree))[0].rstrip()
        assert "…" in first and first.endswith("and-the-part-that-matters"), first

        def to(name: str) -> None:
            tree.move_cursor(tree.node_for_path(f"{root}/{name}"))

        # a file open in the viewer, another highlighted: s saves the highlighted one
        to("a.txt")
        await pilot.press("enter")
        await wait_for(pilot, lambda: pane.viewer.path == f"{root}/a.txt")
        to("b.txt")
        await pilot.pause()
        await pilot.press("s")
        await wait_for(pilot, lambda: screen_shown(app, SaveScreen))
        assert "b.txt" in app.screen.title_text if hasattr(app.screen, "title_text") else True
        assert app.screen.query_one("#save-path").value.endswith("b.txt")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SaveScreen))

        # an 8-byte fake PNG: not a valid image, said plainly
        to("fake.png")
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("not a valid image" in n.message for n in notifications(app)))
        messages = " ".join(n.message for n in notifications(app))
        assert "BytesIO" not in messages and "too large" not in messages
        title = str(pane.viewer.query_one("#viewer-title").render())
        assert "not a valid image" in title and "too large" not in title

        # the hex view fits the pane: fewer bytes a row, the text column kept
        to("bytes.bin")
        await pilot.press("enter")
        lines = pane.viewer.lines
        await wait_for(pilot, lambda: pane.viewer.path == f"{root}/bytes.bin" and lines.mode == "hex")
        await pilot.pause()
        assert lines.per_line < 16
        drawn = rows(lines)[0].rstrip()
        assert drawn.endswith("|"), drawn  # the |text| column is on screen
        assert len(drawn) <= lines.scrollable_content_region.width

        # a new directory typed as ../../../../etc/evil2: resolved and shown, asked first, not made on "n"
        to("a.txt")
        await pilot.press("n")
        field = pane.query_one("#files-prompt-input")
        await wait_for(pilot, lambda: field.has_focus)
        await type_text(pilot, "../../../../../../etc/evil2", then="enter")
        await wait_for(pilot, lambda: screen_shown(app, ConfirmScreen), what="asked before /etc")
        assert "/etc/evil2" in app.screen.question and "outside" in app.screen.question
        await pilot.press("n")
        listing = [f.name for f in await client.fs.list_files(session_id, "/etc")]
        assert "evil2" not in listing
        await pilot.press("ctrl+u")
        await type_text(pilot, "inside", then="enter")  # inside the directory: no question
        await wait_for(pilot, lambda: tree.node_for_path(f"{root}/inside") is not None, what="made at once")

        # zipping / says how large first, and no dialog shows //
        await pilot.press("slash")
        await wait_for(pilot, lambda: tree.root_path == "/" and tree.root.data.loaded)
        tree.move_cursor(tree.root)
        await pilot.press("z")
        await wait_for(pilot, lambda: screen_shown(app, ConfirmScreen), timeout=20, what="size warning")
        question = app.screen.question
        # "about" when du read everything, "at least" when some of / was unreadable (a sandboxed session)
        stated = re.search(r"is (about|at least) [\d.]+ (B|KiB|MiB|GiB|TiB) before compression", question)
        assert "//" not in question and (stated or "could not be measured" in question), question
        await pilot.press("n")


def test_regions_are_checked_against_the_viewport_and_the_renderer_has_its_name() -> None:
    assert parse_region("0,0,1280,800", (1280, 800)) is not None
    for text in ("0,0,99999,99999", "1000,0,300,10"):
        try:
            parse_region(text, (1280, 800))
        except ValueError as error:
            assert "outside the 1280×800 viewport" in str(error)
        else:
            raise AssertionError(f"{text} accepted")
    labels = {rendering_label(image_widget_class(name)) for name in ("auto", "tgp", "sixel", "halfcell")}
    assert not any("Image" in label for label in labels), labels
    assert {"kitty graphics", "sixel", "half cells"} <= labels


def test_hint_lines_keep_whole_items_at_80_columns() -> None:
    from bbrowse.tui.key_hints import hint_text
    from bbrowse.tui.panes.base import fit_hint
    from bbrowse.tui.panes.files import HINT as FILES_TEMPLATE
    from bbrowse.tui.panes.logs import HINT as LOGS_TEMPLATE

    files_hint, logs_hint = hint_text(FILES_TEMPLATE, {}), hint_text(LOGS_TEMPLATE, {})  # the default keys
    for hint in (files_hint, logs_hint):
        fitted = fit_hint(hint, 78)
        assert len(fitted) <= 78 and fitted.endswith("· ? all keys"), fitted
        assert all(item in hint.split(" · ") for item in fitted.split(" · ")[:-1]), fitted
    assert fit_hint(logs_hint, 200) == logs_hint
