"""The footer: the keys in force, recomposed only when they change (a focus move between widgets with the same
keys mounts nothing anew)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Button

from bbrowse.tui.footer import BbrowseFooter, FooterKey


class WithKey(Button):
    BINDINGS = [Binding("x", "press", "Extra")]


class FooterApp(App):
    BINDINGS = [Binding("n", "bell", "New")]

    def compose(self) -> ComposeResult:
        yield Button("one", id="one")
        yield Button("two", id="two")
        yield WithKey("three", id="three")
        yield BbrowseFooter()


def shown(app: App) -> list[str]:
    return [key.description for key in app.query(FooterKey) if not key.has_class("-command-palette")]


async def test_a_focus_move_that_keeps_the_keys_recomposes_nothing_and_a_new_key_is_shown() -> None:
    app = FooterApp()
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        app.query_one("#one").focus()
        await pilot.pause()
        assert shown(app) == ["New"]
        before = list(app.query(FooterKey))
        app.query_one("#two").focus()
        await pilot.pause()
        await pilot.pause()
        assert list(app.query(FooterKey)) == before  # the same widgets: nothing was mounted again
        app.query_one("#three").focus()
        await pilot.pause()
        await pilot.pause()
        assert shown(app) == ["Extra", "New"]
        app.query_one("#one").focus()
        await pilot.pause()
        await pilot.pause()
        assert shown(app) == ["New"]
