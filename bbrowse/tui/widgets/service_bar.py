"""The top bar: which service is connected, and whether it answers right now."""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

ConnectionState = Literal["starting", "connected", "reconnecting"]

#: State labels and the theme variable that colours each.
_STATE_STYLE = {
    "starting": ("◌ starting", "warning"),
    "connected": ("● connected", "success"),
    "reconnecting": ("○ reconnecting", "error"),
}


class ServiceBar(Static):
    """`bbrowse │ embedded · http://127.0.0.1:41231 │ ● connected │ Sessions › work`."""

    DEFAULT_CSS = """
    ServiceBar { dock: top; height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    service_label: reactive[str] = reactive("", layout=False)
    state: reactive[ConnectionState] = reactive("starting")
    crumbs: reactive[tuple[str, ...]] = reactive(("Sessions",))

    def on_mount(self) -> None:
        self.watch(self.app, "theme", lambda _theme: self.refresh(), init=False)

    def render(self) -> Text:
        label, variable = _STATE_STYLE[self.state]
        style = self.app.theme_variables.get(variable, "") if self.is_attached else ""
        text = Text.assemble(("bbrowse", "bold"), " │ ")
        text.append(self.service_label or "…", style="dim" if not self.service_label else "")
        text.append(" │ ")
        text.append(label, style=style)
        text.append(" │ ")
        text.append(" › ".join(self.crumbs), style="bold")
        return text
