"""Themes: the shipped files, user files (good and broken), the app's theme picker, switching, saving,
and an SVG snapshot of the default theme on a fixed screen."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from app_support import make_app, screen_shown, wait_for, wait_for_notification
from rich.text import Text
from textual.app import App, ComposeResult
from textual.color import Color
from textual.command import CommandList, CommandPalette
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Footer, Static

from bbrowse.config import Settings
from bbrowse.tui.themes import load_theme_file, load_themes, shipped_themes_dir
from bbrowse.tui.widgets.service_bar import ServiceBar

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("bbrowse-dark", "bbrowse-light", "bbrowse-solarized", "bbrowse-ember")
REQUIRED = ("primary", "secondary", "accent", "background", "surface", "panel", "foreground", "success", "warning",
            "error")

GOOD_USER_THEME = """\
name = "midnight"
dark = true
primary = "#4f9dde"
background = "#0b0f14"
panel = "#123456"
"""




# files -----------------------------------------------------------------------------


def test_every_shipped_theme_parses_into_a_textual_theme_with_every_colour():
    loaded = load_themes([shipped_themes_dir()])
    assert loaded.problems == []
    assert set(SHIPPED) <= set(loaded.themes)
    for name in SHIPPED:
        theme = loaded.themes[name]
        for colour in REQUIRED:
            assert getattr(theme, colour), (name, colour)
        theme.to_color_system().generate()  # every derived shade can be computed
    assert loaded.themes["bbrowse-light"].dark is False
    assert loaded.themes["bbrowse-dark"].dark is True
    # the repository's top-level themes/ holds the very same files
    assert sorted(p.name for p in (ROOT / "themes").glob("*.toml")) == sorted(f"{n}.toml" for n in SHIPPED)
    assert (ROOT / "themes").resolve() == shipped_themes_dir().resolve()


def test_a_built_wheel_ships_the_themes(tmp_path):
    """`pip install .` must carry the theme files: build a wheel from a copy of the tree (with the build backend
    pip would use, in an environment of its own) and look inside."""
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "tests", "bench", "screenshots"))
    uv = Path(sys.executable).parent / "uv"  # the lock's uv, in the environment (scripts/setup.sh)
    result = subprocess.run([str(uv), "build", "--wheel", "--quiet", "--out-dir", str(tmp_path / "wheel"), str(source)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0 and any(word in result.stderr for word in ("Failed to fetch", "dns error")):
        pytest.skip(f"cannot fetch the build backend: {result.stderr.strip().splitlines()[-1]}")
    assert result.returncode == 0, result.stderr
    (wheel,) = (tmp_path / "wheel").glob("bbrowse-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"bbrowse/themes/{name}.toml" for name in SHIPPED} <= names


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name = 'x'\nprimary = \n", "not valid TOML"),
        ("name = 'x'\ndark = true\n", "primary: Field required"),
        ("name = 'x'\nprimary = '#12345g'\n", "primary: '#12345g' is not a colour"),
        ("name = 'x'\nprimary = 'red'\nbackgound = '#000000'\n", "backgound: Extra inputs are not permitted"),
    ],
)
def test_a_broken_user_theme_is_skipped_and_named(tmp_path, text, problem):
    (tmp_path / "broken.toml").write_text(text)
    (tmp_path / "midnight.toml").write_text(GOOD_USER_THEME)
    loaded = load_themes([shipped_themes_dir(), tmp_path])
    assert "midnight" in loaded.themes and set(SHIPPED) <= set(loaded.themes)
    assert len(loaded.problems) == 1
    assert loaded.problems[0].startswith(str(tmp_path / "broken.toml") + ": ")
    assert problem in loaded.problems[0]


def test_a_user_theme_replaces_a_shipped_one_of_the_same_name_and_the_file_name_is_the_default_name(tmp_path):
    (tmp_path / "mine.toml").write_text("name = 'bbrowse-dark'\nprimary = '#ff0000'\n")
    (tmp_path / "unnamed.toml").write_text("primary = '#00ff00'\ndark = false\n")
    loaded = load_themes([shipped_themes_dir(), tmp_path])
    assert loaded.themes["bbrowse-dark"].primary == "#ff0000"
    assert load_theme_file(tmp_path / "unnamed.toml").name == "unnamed"


# the app ---------------------------------------------------------------------------




def bar_background(app) -> Color:
    return app.screen.query_one(ServiceBar).styles.background


async def test_app_registers_every_theme_and_the_palette_picker_lists_them(service, tmp_path):
    themes = tmp_path / "themes"
    themes.mkdir()
    (themes / "midnight.toml").write_text(GOOD_USER_THEME)
    (themes / "broken.toml").write_text("name = 'oops'\nprimary = 'not-a-colour'\n")
    app = make_app(service, settings=Settings(), user_themes=themes)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.query(ServiceBar))
        assert app.theme == "bbrowse-dark"
        assert {*SHIPPED, "midnight"} <= set(app.available_themes)
        assert "oops" not in app.available_themes
        await wait_for_notification(pilot, f"{themes / 'broken.toml'}: primary: 'not-a-colour' is not a colour")

        app.action_change_theme()
        await wait_for(pilot, lambda: screen_shown(app, CommandPalette) and app.screen.query(CommandList))
        command_list = app.screen.query_one(CommandList)
        await wait_for(pilot, lambda: command_list.option_count >= len(app.available_themes))
        listed = {Text.from_markup(str(command_list.get_option_at_index(i).prompt)).plain
                  for i in range(command_list.option_count)}
        assert {*SHIPPED, "midnight"} <= {line.split("\n")[0] for line in listed}

        # choosing one in the picker applies it
        await pilot.press(*"midnight")
        await wait_for(pilot, lambda: command_list.option_count == 1)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.theme == "midnight")


async def test_switching_theme_changes_the_bar_colour_and_is_saved(service, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('# mine\ntheme = "bbrowse-dark"\n\n[logs]\nbuffer_lines = 2000\n')
    app = make_app(service, settings=Settings(), config_path=config)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.query(ServiceBar))
        dark_panel = Color.parse(app.get_theme("bbrowse-dark").panel)
        await wait_for(pilot, lambda: bar_background(app) == dark_panel)

        app.theme = "bbrowse-light"
        light_panel = Color.parse(app.get_theme("bbrowse-light").panel)
        await wait_for(pilot, lambda: bar_background(app) == light_panel)
        assert light_panel != dark_panel
        await wait_for(pilot, lambda: 'theme = "bbrowse-light"' in config.read_text())
    assert config.read_text() == '# mine\ntheme = "bbrowse-light"\n\n[logs]\nbuffer_lines = 2000\n'


async def test_a_missing_theme_falls_back_to_the_default_with_a_notification(service):
    app = make_app(service, settings=Settings(theme="no-such-theme"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.query(ServiceBar))
        assert app.theme == "bbrowse-dark"
        await wait_for_notification(pilot, "Theme 'no-such-theme' is not available")


async def test_the_configured_theme_applies_at_start(service):
    app = make_app(service, settings=Settings(theme="bbrowse-solarized"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.query(ServiceBar))
        assert app.theme == "bbrowse-solarized"
        await wait_for(pilot, lambda: bar_background(app) == Color.parse("#0b4a5a"))


# snapshot --------------------------------------------------------------------------


class ThemeSampleApp(App):
    """A fixed screen drawn with the theme's colours: the top bar, a table, buttons in every variant."""

    CSS = """
    DataTable { height: 6; margin: 1 0; }
    Horizontal { height: 3; }
    Button { margin: 0 1; }
    #note { color: $text-muted; padding: 0 1; }
    """
    BINDINGS = [("n", "bell", "New session"), ("d", "bell", "Delete"), ("slash", "bell", "Filter")]

    def __init__(self, theme: str) -> None:
        super().__init__()
        self.theme_name = theme

    def compose(self) -> ComposeResult:
        bar = ServiceBar()
        bar.service_label = "embedded · http://127.0.0.1:7780"
        bar.state = "connected"
        yield bar
        yield DataTable(cursor_type="row", zebra_stripes=True)
        with Horizontal():
            yield Button("Create", variant="primary")
            yield Button("Keep", variant="success")
            yield Button("Careful", variant="warning")
            yield Button("Delete", variant="error")
            yield Button("Cancel")
        yield Static("Muted text on the background.", id="note")
        yield Footer()

    def on_mount(self) -> None:
        for theme in load_themes([shipped_themes_dir()]).themes.values():
            self.register_theme(theme)
        self.theme = self.theme_name
        table = self.query_one(DataTable)
        table.add_columns("Name", "ID", "State")
        table.add_row("work", "k1x9q2b7d4", Text("active", style="green"))
        table.add_row("scratch", "p0m3n8c6v1", Text("active", style="green"))
        table.add_row("—", "z5y2w7u4t3", Text("deleted", style="red"))
        table.focus()


@pytest.mark.parametrize("theme", ["bbrowse-dark", "bbrowse-light"])
def test_theme_snapshot(snap_compare, theme) -> None:
    assert snap_compare(ThemeSampleApp(theme), terminal_size=(80, 16))


def test_user_themes_dir_is_optional(tmp_path):
    assert load_themes([shipped_themes_dir(), tmp_path / "absent", None]).problems == []
    assert os.path.isdir(shipped_themes_dir())
