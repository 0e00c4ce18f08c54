"""A pane's one-line question (a path, a name, a mode): enter hands the typed text to the asker's callback."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

from bbrowse.tui.file_paths import LocalPathSuggester

#: What `ask` is given: it gets the typed text (stripped) and may close the line, or say what is wrong.
Answer = Callable[[str], object]


class PathInput(Input):
    """A path field: enter goes, escape closes it (instead of leaving the session screen)."""

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
    """The question's field: enter answers, esc cancels, tab completes a local path."""

    BINDINGS = [Binding("tab", "complete", "Complete path", id="files.complete")]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "complete":
            return self.suggester is not None
        return True

    def action_complete(self) -> None:
        self.cursor_position = len(self.value)
        self.action_cursor_right()  # at the end, takes the suggestion shown


class QuestionLine(Vertical):
    """The question (`#<id>-label`), its field (`#<id>-input`) and what is wrong with the answer (`#<id>-error`).
    Has the class `open` while asking; escape closes it and posts `Cancelled`."""

    class Cancelled(Message):
        """Escape in the field: the asker takes the keyboard back."""

    def __init__(self, *, id: str) -> None:
        super().__init__(id=id)
        self._answer: Answer | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id=f"{self.id}-label", markup=False)
        yield PromptInput(id=f"{self.id}-input")
        yield Static("", id=f"{self.id}-error", markup=False)

    @property
    def is_open(self) -> bool:
        return self._answer is not None

    def ask(self, question: str, value: str, answer: Answer, *, local_paths: bool = False) -> None:
        """Show `question` with `value` typed in; enter calls `answer(typed)`. `local_paths`: tab completes
        a path of this machine."""
        self._answer = answer
        self.query_one(f"#{self.id}-label", Static).update(Text(question))
        self.error("")
        field = self.query_one(PromptInput)
        field.suggester = LocalPathSuggester() if local_paths else None
        field.value = value
        self.add_class("open")
        field.focus()
        field.cursor_position = len(value)

    def error(self, text: str) -> None:
        """Say what is wrong with the answer; the question stays open."""
        self.query_one(f"#{self.id}-error", Static).update(Text(text))

    def close(self) -> None:
        self._answer = None
        self.remove_class("open")

    @on(PathInput.Closed)
    def _cancelled(self, event: PathInput.Closed) -> None:
        event.stop()
        self.close()
        self.post_message(self.Cancelled())

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._answer is not None:
            self._answer(event.value.strip())
