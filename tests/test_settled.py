"""`until_settled`: a key whose binding takes a while (it awaits, as an action calling the service does) has
moved the focus by the time the wait ends, however little CPU the process used meanwhile (Textual's CPU-time
guess, `wait_for_idle`, returns while the binding still waits: the keys after it went to the widget before)."""

from __future__ import annotations

import asyncio

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static

from bbrowse.tui.textual_private import until_settled


class Form(Vertical, can_focus=True):
    BINDINGS = [Binding("g", "goto", "Go to")]

    def compose(self) -> ComposeResult:
        yield Static("a form")
        yield Input(id="field")

    async def action_goto(self) -> None:
        await asyncio.sleep(0.2)  # idle meanwhile, as when asking the service
        field = self.query_one(Input)
        field.value = "/start"
        field.focus()


class FormApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Form()

    def on_mount(self) -> None:
        self.query_one(Form).focus()


async def type_after_g(wait) -> str:
    app = FormApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        for key, char in [("g", "g"), ("ctrl+u", None), *[(c, c) for c in "/typed"]]:
            event = events.Key(key, char)
            event.set_sender(app)
            app.post_message(event)
            await wait(app)
        await pilot.pause()
        return app.query_one(Input).value


async def test_keys_after_a_slow_binding_reach_the_field_it_opened() -> None:
    assert await type_after_g(until_settled) == "/typed"
