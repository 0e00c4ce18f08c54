"""The command palette's commands: the app's global actions first, then every action of the screen shown.

"Every action" means every binding of bbrowse's own screens, panes and widgets that has an id (the ids
`[keys]` remaps), so Textual's built-in movement bindings ("Cursor down", "Home") never pad the list.
On a session screen the actions of every tab are there, also of tabs not opened yet: choosing one
shows its tab first. A command names where it acts and its key.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

from textual import events, on
from textual.binding import Binding
from textual.command import Command, CommandInput, CommandList, CommandPalette, DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget

from bbrowse.tui.footer import BbrowseFooter
from bbrowse.tui.textual_private import keymap_of


@dataclass(frozen=True)
class PaletteCommand:
    title: str
    help: str
    run: Callable[[], object]


class PaletteHost(Protocol):
    """The app, as the palette sees it (`BbrowseApp`): it says which commands to list on a screen."""

    def palette_commands(self, screen: Screen) -> Iterable[PaletteCommand]: ...


@runtime_checkable
class TabbedScreen(Protocol):
    """A screen whose widgets live in tabs (the session screen): the palette lists the actions of every tab,
    also of a tab not opened yet, and opens the tab before it runs one."""

    def palette_tab_of(self, widget: Widget) -> tuple[str, str] | None:
        """(tab id, label) of the tab holding `widget`, None when it is in none."""
        ...

    def palette_tabs(self) -> Iterable[tuple[str, str, Callable[[str], Widget]]]:
        """(tab id, label, pane factory) of the tabs whose pane is not mounted yet."""
        ...

    async def open_tab(self, tab_id: str) -> Widget:
        """Show the tab (mounting its pane if needed) and return its pane."""
        ...


def own_bindings(cls: type) -> Iterator[Binding]:
    """The bindings with an id that bbrowse's classes in `cls`'s MRO declare (Textual's own are skipped)."""
    for klass in cls.__mro__:
        if not klass.__module__.startswith("bbrowse."):
            continue
        for binding in klass.__dict__.get("BINDINGS", ()):
            if isinstance(binding, Binding) and binding.id and binding.description:
                yield binding


def typed_character(key: str) -> str | None:
    """The character of a key Textual names after it (`trade_mark_sign` → `™`, `question_mark` → `?`); None for
    a key that is not one character (`enter`, `alt+1`)."""
    if "+" in key or len(key) == 1:
        return key if len(key) == 1 else None
    try:
        return unicodedata.lookup(key.replace("_", " "))
    except KeyError:
        return None


def key_label(node: DOMNode, binding: Binding) -> str:
    """The key(s) in effect for `binding` (after `[keys]` remaps), as a person names them: `alt+1, 1`.

    A key bound only as the character a terminal without the kitty protocol sends for another key (alt+2
    arrives as `™` in xterm and tmux) is left out when the binding has a key that says it better."""
    app = node.app
    in_force = keymap_of(app).get(binding.id, binding.key) if binding.id else binding.key
    keys = [key.strip() for key in in_force.split(",")]
    plain = [key for key in keys if not _stand_in(key)] or keys
    labels: list[str] = []
    for key in plain:
        label = app.get_key_display(Binding(key, ""))
        if label not in labels:
            labels.append(label)
    return ", ".join(labels)


def _stand_in(key: str) -> bool:
    """A non-ASCII character as a key of its own: what a terminal sends for an alt+key combination."""
    character = typed_character(key)
    return character is not None and not character.isascii()


def _in_chain(widget: DOMNode, focused: Widget | None) -> bool:
    return focused is not None and (widget is focused or widget in focused.ancestors)


def screen_commands(screen: Screen, skip_actions: set[str]) -> Iterator[PaletteCommand]:
    """Every action of `screen`: its own bindings, then those of the widgets in it (and of its tabs' panes)."""
    seen: set[tuple[type, str]] = set()
    where = getattr(screen, "PALETTE_NAME", None) or type(screen).__name__.removesuffix("Screen")
    tabbed = screen if isinstance(screen, TabbedScreen) else None

    def emit(node: DOMNode | type, binding: Binding, place: str, run: Callable[[], object]) -> Iterator[PaletteCommand]:
        key = (type(node) if isinstance(node, DOMNode) else node, binding.action)
        if binding.action in skip_actions or key in seen:
            return
        seen.add(key)
        yield PaletteCommand(binding.description, f"{place} · key {key_label(screen, binding)}", run)

    for binding in own_bindings(type(screen)):
        yield from emit(screen, binding, where, _runner(screen, binding.action))

    focused = screen.focused
    widgets = [w for w in screen.walk_children(Widget) if any(True for _ in own_bindings(type(w)))]
    widgets.sort(key=lambda w: not _in_chain(w, focused))  # the focused chain's instance wins
    for widget in widgets:
        tab = tabbed.palette_tab_of(widget) if tabbed is not None else None
        place = getattr(widget, "PALETTE_NAME", None) or (tab[1] if tab else where)
        for binding in own_bindings(type(widget)):
            run = (_tab_runner(tabbed, tab[0], widget, binding.action) if tabbed is not None and tab
                   else _runner(widget, binding.action))
            yield from emit(widget, binding, place, run)

    # a session's tabs not opened yet: their panes' actions, which open the tab first
    if tabbed is None:
        return
    for tab_id, label, factory in tabbed.palette_tabs():
        if not isinstance(factory, type):
            continue
        for binding in own_bindings(factory):
            yield from emit(factory, binding, label, _lazy_tab_runner(tabbed, tab_id, binding.action))


def _runner(node: Widget, action: str) -> Callable[[], Awaitable[object]]:
    async def run() -> None:
        await node.run_action(action)

    return run


def _tab_runner(screen: TabbedScreen, tab_id: str, widget: Widget, action: str) -> Callable[[], Awaitable[object]]:
    async def run() -> None:
        await screen.open_tab(tab_id)
        if widget.focusable:
            widget.focus()
        await widget.run_action(action)

    return run


def _lazy_tab_runner(screen: TabbedScreen, tab_id: str, action: str) -> Callable[[], Awaitable[object]]:
    async def run() -> None:
        pane = await screen.open_tab(tab_id)
        await pane.run_action(action)

    return run


class BbrowsePalette(CommandPalette):
    """Textual's command palette with a footer of its own: the footer of the screen behind listed keys that
    do nothing while the palette is open."""

    @on(events.Mount)
    async def _palette_footer(self) -> None:
        await self.mount(BbrowseFooter())
        self.refresh_bindings()

    def _refresh_command_list(self, command_list: CommandList, commands: list[Command], clear_current: bool) -> None:
        """As Textual's, but a picker's list opens on the entry marked "(current)" (the theme or profile in
        use), not on its first."""
        super()._refresh_command_list(command_list, commands, clear_current)
        if self.query_one(CommandInput).value:
            return
        for index in range(command_list.option_count):
            option = command_list.get_option_at_index(index)
            if isinstance(option, Command) and "(current)" in str(option.hit.help or ""):
                command_list.highlighted = index
                break


class BbrowseCommands(Provider):
    """Global commands first (in the app's order), then the screen's; nothing else."""

    def _commands(self) -> list[PaletteCommand]:
        return list(cast(PaletteHost, self.app).palette_commands(self.screen))

    async def discover(self) -> Hits:
        for command in self._commands():
            yield DiscoveryHit(command.title, command.run, help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        commands = self._commands()
        for index, command in enumerate(commands):
            score = matcher.match(command.title)
            if score > 0:
                # equal matches keep the order: global commands before the screen's
                yield Hit(score - index * 1e-6, matcher.highlight(command.title), command.run, help=command.help)


def global_commands(entries: Iterable[tuple[str, str, Callable[[], object]]]) -> list[PaletteCommand]:
    return [PaletteCommand(title, help_text, run) for title, help_text, run in entries]
