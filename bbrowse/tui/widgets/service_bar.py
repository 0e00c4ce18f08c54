"""The top bar: which service is connected, whether it answers right now, and where the user is.

When the terminal is narrow the breadcrumbs win: the session's id leaves the last crumb first (its name
stays), then the service label is shortened with an ellipsis, the state word goes (its dot stays), and
last the label, so `Sessions › checkout-flow` stays readable at 80 columns.
"""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

#: "failed": nothing to connect to until the user acts (a profile without its token, a service that would
#: not start); "reconnecting": the service stopped answering and the app looks for it; "stalled": a
#: long-lived connection (a shell, a log) went silent and a check went unanswered: the link, not the service.
ConnectionState = Literal["starting", "connected", "stalled", "reconnecting", "failed"]

#: State labels and the theme variable that colours each.
_STATE_STYLE = {
    "starting": ("◌ starting", "warning"),
    "connected": ("● connected", "success"),
    "stalled": ("◌ link stalled", "warning"),
    "reconnecting": ("○ reconnecting", "error"),
    "failed": ("✕ not connected", "error"),
}
#: The service label is not shortened below this (beyond that it is dropped).
MIN_LABEL = 12
SEPARATOR = " │ "


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def short_crumb(crumb: str) -> str:
    """`checkout-flow (k2w8…)` → `checkout-flow`: a named session's crumb without its id."""
    if crumb.endswith(")") and " (" in crumb:
        return crumb[: crumb.rindex(" (")]
    return crumb


class ServiceBar(Static):
    """`bbrowse │ embedded · http://127.0.0.1:41231 │ ● connected │ Sessions › work`."""

    DEFAULT_CSS = """
    ServiceBar { dock: top; height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    service_label: reactive[str] = reactive("", layout=False)
    state: reactive[ConnectionState] = reactive("starting")
    crumbs: reactive[tuple[str, ...]] = reactive(("Sessions",))

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._theme_changed, init=False)

    def _theme_changed(self, _theme: str) -> None:
        self.refresh()

    def on_resize(self) -> None:
        self.refresh()

    def layout_parts(self, width: int) -> tuple[str, str, str]:
        """(service label, state label, breadcrumbs) shortened to fit `width` cells, crumbs last to give way."""
        state, _ = _STATE_STYLE[self.state]
        label = self.service_label or "…"
        crumbs = " › ".join(self.crumbs)
        fixed = len("bbrowse") + 3 * len(SEPARATOR)

        def total(lab: str, sta: str, cru: str) -> int:
            return fixed + len(lab) + len(sta) + len(cru) - (len(SEPARATOR) if not lab else 0)

        if total(label, state, crumbs) <= width:
            return label, state, crumbs
        short_crumbs = " › ".join((*self.crumbs[:-1], short_crumb(self.crumbs[-1]))) if self.crumbs else crumbs
        if total(label, state, short_crumbs) <= width:
            return label, state, short_crumbs
        room = width - total("", state, short_crumbs) - len(SEPARATOR)
        if room >= MIN_LABEL:
            return _short(label, room), state, short_crumbs
        state = state[0]  # the dot alone
        room = width - total("", state, short_crumbs) - len(SEPARATOR)
        if room >= MIN_LABEL:
            return _short(label, room), state, short_crumbs
        room = max(1, width - total("", state, ""))
        if len(short_crumbs) > room and self.crumbs:
            short_crumbs = short_crumb(self.crumbs[-1])  # the place itself, without the path to it
        return "", state, _short(short_crumbs, room)

    def render(self) -> Text:
        _, variable = _STATE_STYLE[self.state]
        style = self.app.theme_variables.get(variable, "") if self.is_attached else ""
        width = self.content_region.width if self.is_mounted and self.content_region.width else 10_000
        label, state, crumbs = self.layout_parts(width)
        text = Text.assemble(("bbrowse", "bold"), SEPARATOR)
        if label:
            text.append(label, style="dim" if not self.service_label else "")
            text.append(SEPARATOR)
        text.append(state, style=style)
        text.append(SEPARATOR)
        text.append(crumbs, style="bold")
        return text
