"""Key hints come from the bindings in force: a `[keys]` remap shows in the hint lines, and the README's and
docs/configuration.md's keys tables are what `scripts/key_tables.py` writes from the bindings."""

from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path

from app_support import PaneScreen
from textual import events
from textual.widgets import Button, Static

from bbrowse.config import defaults
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.tui.panes.base import HintLine
from bbrowse.tui.panes.files import HINT as FILES_HINT
from bbrowse.tui.panes.logs import LogsPane
from bbrowse.tui.screens.sessions import SessionsScreen

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "key_tables.py"


def test_the_readme_and_configuration_keys_tables_are_generated_from_the_bindings() -> None:
    spec = importlib.util.spec_from_file_location("key_tables", SCRIPT)
    assert spec is not None and spec.loader is not None
    key_tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(key_tables)
    for path, text in key_tables.regenerated().items():
        old = path.read_text()
        diff = "".join(difflib.unified_diff(old.splitlines(True), text.splitlines(True), path.name, "generated"))
        assert old == text, f"run .venv/bin/python scripts/key_tables.py\n{diff}"


class RemappedApp(BbrowseApp):
    """The real app with `[keys]` remaps, showing a logs pane and the files hint without a service."""

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # the base class would connect to a service
        self._apply_keymap()
        screen = PaneScreen(LogsPane("s1", open_default=False), "Logs", "logs")
        self.push_screen(screen, callback=None)
        screen.mount(HintLine(FILES_HINT, id="files-hint"))


async def test_hint_lines_show_the_keys_a_remap_in_the_configuration_gives() -> None:
    settings = defaults().model_copy(update={"keys": {"logs.open": "ctrl+o", "logs.wrap": "W", "files.zip": "Z"}})
    app = RemappedApp(target=None, settings=settings)
    async with app.run_test(size=(200, 20)) as pilot:
        await pilot.pause()
        logs_hint = str(app.screen.query_one("#logs-hint").render())
        assert logs_hint.startswith("ctrl+o open · x close ·") and " · W wrap · " in logs_hint, logs_hint
        assert "o open" not in logs_hint.replace("ctrl+o open", "")
        assert str(app.screen.query_one("#files-hint").render()).endswith(" · Z zip")
        app.screen.query_one(LogsPane).focus()
        await pilot.pause()
        bound = app.screen.active_bindings  # the key the hint names is the one that works
        assert bound["ctrl+o"].binding.action == "open" and "o" not in bound


class EmptySessionsApp(BbrowseApp):
    """The real app with `[keys]` remaps, showing an empty sessions table without a service."""

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # the base class would connect to a service
        self._apply_keymap()
        self.push_screen(SessionsScreen([], live=False), callback=None)


async def test_a_message_that_names_a_key_names_the_remapped_one() -> None:
    settings = defaults().model_copy(update={"keys": {"sessions.create": "c", "app.help": "f1", "confirm.yes": "j"}})
    app = EmptySessionsApp(target=None, settings=settings)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        empty = str(app.screen.query_one("#sessions-empty", Static).render())
        assert "Press c to create one, f1 for help." in empty, empty
        app.push_screen(ConfirmScreen("Delete 2 sessions?", "Delete"))
        await pilot.pause()
        assert str(app.screen.query_one("#confirm-yes", Button).label) == "Delete (j)"
