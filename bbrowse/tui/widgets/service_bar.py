"""The top bar: which service is connected, and whether it answers right now."""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

ConnectionState = Literal["starting", "connected", "reconnecting"]

_STATE_STYLE = {
    "starting": ("◌ starting", "yellow"),
    "connected": ("● connected", "green"),
    "reconnecting": ("○ reconnecting", "red"),
}


class ServiceBar(Static):
    """`bbrowse │ embedded · http://127.0.0.1:41231 │ ● connected │ Sessions › work`."""

    DEFAULT_CSS = """
    ServiceBar { dock: top; height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    service_label: reactive[str] = reactive("", layout=False)
    state: reactive[ConnectionState] = reactive("starting")
    crumbs: reactive[tuple[str, ...]] = reactive(("Sessions",))

    def render(self) -> Text:
        label, style = _STATE_STYLE[self.state]
        text = Text.assemble(("bbrowse", "bold"), " │ ")
        text.append(self.service_label or "…", style="dim" if not self.service_label else "")
        text.append(" │ ")
        text.append(label, style=style)
        text.append(" │ ")
        text.append(" › ".join(self.crumbs), style="bold")
        return text
