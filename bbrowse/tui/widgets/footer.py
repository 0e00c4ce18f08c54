"""The footer of bbrowse's screens: Textual's, but no key is ever cut in the middle, and a focused widget
whose keys are not bindings (the terminal) can say which keys still reach the app.

Keys that do not fit whole are hidden from the right (the palette key, docked right, stays). Inside a
terminal, where every key goes to the program, it says which keys still reach the app (alt+digit, the
leave chord); any other focused widget with a `FOOTER_HINT` string gets it shown the same way.
"""

from __future__ import annotations

import sys

from textual.app import ComposeResult
from textual.widgets import Footer

from bbrowse.tui.textual_private import FooterKey, FooterLabel


class BbrowseFooter(Footer):
    DEFAULT_CSS = """
    BbrowseFooter FooterLabel.-hint { margin: 0 1; }
    """

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            # A key is born compact, then bound to ours: two restyles a key at every recompose; the palette
            # key (not bound) stays compact.
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget
        focused = self.screen.focused if self._bindings_ready else None
        hint = getattr(focused, "FOOTER_HINT", None)
        # Not imported here: the sessions screen, the first one drawn, has no terminal and loads without it.
        terminal = sys.modules.get("bbrowse.tui.terminal.widget")
        if terminal is not None and isinstance(focused, terminal.TerminalView):
            leave = focused._leave_hint() if hasattr(focused, "_leave_hint") else "ctrl+] leave"
            # A screen without tabs (broadcast typing) sets TAB_SWITCH_HINT to "".
            switch = getattr(self.screen, "TAB_SWITCH_HINT", "alt+1… switch tabs")
            hint = " · ".join(part for part in ("every key goes to the program", switch, leave) if part)
        if hint:
            yield FooterLabel(hint, classes="-hint")

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        for child in self.children:
            child.display = True
        self.call_after_refresh(self._fit)

    def _fit(self, tries: int = 20) -> None:
        """Hide, from the right, what does not fit whole left of the palette key (once the keys are laid out)."""
        if not self.is_attached:
            return
        if any(child.display and not child.region.width for child in self.children) and self.region.width:
            if tries:
                self.set_timer(0.02, lambda: self._fit(tries - 1))
            return
        palette = [child for child in self.children if child.has_class("-command-palette")]
        limit = palette[0].region.x if palette and palette[0].region.width else self.region.right
        overflowing = False
        for child in self.children:
            if child in palette:
                continue
            if overflowing or (child.display and child.region.right > limit):
                overflowing = True
                child.display = False


__all__ = ["BbrowseFooter", "FooterKey"]
