"""The footer of bbrowse's screens: Textual's, but no key is ever cut in the middle, and a focused widget
whose keys are not bindings (the terminal) can say which keys still reach the app.

Keys that do not fit whole are hidden from the right (the palette key, docked right, stays). Inside a
terminal, where every key goes to the program, it says which keys still reach the app (alt+digit, the
leave chord); any other focused widget with a `FOOTER_HINT` string gets it shown the same way. A change of
bindings that leaves the keys shown as they are (the focus moving between two widgets with the same keys, the
screen's first focus) recomposes nothing: each recompose mounts, styles and lays out every key again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.widgets import Footer

from bbrowse.tui.loaded import loaded_class
from bbrowse.tui.textual_private import FooterKey, FooterLabel

if TYPE_CHECKING:
    from textual.screen import Screen


class BbrowseFooter(Footer):
    DEFAULT_CSS = """
    BbrowseFooter FooterLabel.-hint { margin: 0 1; }
    """

    #: What the keys on show were composed from (`_keys_shown`), and whether a recompose is already asked for.
    _drawn: tuple | None = None
    _recompose_asked = False

    def compose(self) -> ComposeResult:
        # The keys are drawn with the screen, not only once its bindings are announced (Textual's footer waits,
        # then composes again: one more mount and layout of every key each time a screen opens); the
        # announcement then recomposes only if the keys differ (the first focus brought its own).
        self.set_reactive(Footer._bindings_ready, True)
        self._drawn = self._keys_shown()
        for widget in super().compose():
            # A key is born compact, then bound to ours: two restyles a key at every recompose; the palette
            # key (not bound) stays compact.
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget
        hint = self._hint()
        if hint:
            yield FooterLabel(hint, classes="-hint")

    def _hint(self) -> str | None:
        """The keys a focused terminal lets through, or the focused widget's `FOOTER_HINT`."""
        focused = self.screen.focused
        hint = getattr(focused, "FOOTER_HINT", None)
        # Not imported here: the sessions screen, the first one drawn, has no terminal and loads without it.
        terminal_view = loaded_class("bbrowse.tui.terminal.widget", "TerminalView")
        if focused is not None and terminal_view is not None and isinstance(focused, terminal_view):
            leave = focused._leave_hint() if hasattr(focused, "_leave_hint") else "ctrl+] leave"
            # A screen without tabs (broadcast typing) sets TAB_SWITCH_HINT to "".
            switch = getattr(self.screen, "TAB_SWITCH_HINT", "alt+1… switch tabs")
            hint = " · ".join(part for part in ("every key goes to the program", switch, leave) if part)
        return hint

    def _keys_shown(self) -> tuple:
        """Everything `compose` draws from: the screen's shown bindings (and the palette's), their state, the hint."""
        palette = self.app.COMMAND_PALETTE_BINDING
        bindings = tuple(
            (key, binding.action, self.app.get_key_display(binding), binding.description, enabled, tooltip,
             binding.group, binding.tooltip)
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == palette
        )
        return bindings, self.compact, self.show_command_palette, self._hint()

    def bindings_changed(self, screen: Screen) -> None:
        """Textual's, but at most one recompose a frame, and none when the keys shown stay the same."""
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen or self._recompose_asked:
            return
        self._recompose_asked = True
        self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        self._recompose_asked = False
        if self.is_attached and self._keys_shown() != self._drawn:
            await self.recompose()

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        for child in self.children:
            if not child.display:  # (setting it when shown lays the screen out once more)
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
