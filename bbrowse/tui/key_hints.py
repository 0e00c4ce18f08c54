"""Key hints from the bindings in force: a hint names a binding by id (`{logs.open} open`), and the key shown
is the one the app's keymap gives it (a `[keys]` remap in the configuration), else the binding's own.

The hint lines of the panes and the README's keys table are written this way, so none of them names a
key that a remap changed; `scripts/key_tables.py` writes the README's table and docs/configuration.md's
binding table from these and from the bindings themselves (a test fails when they differ).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from textual.binding import Binding
from textual.dom import DOMNode
from textual.keys import format_key

#: `{binding.id}` in a hint: its first key in force; `{+binding.id}`: all of them, `end/G`.
_PLACEHOLDER = re.compile(r"\{(\+?)([a-z_]+\.[a-z0-9_]+)\}")
#: Key names shown as people say them (Textual's own display of these is a symbol).
_SAID = {"enter": "enter", "escape": "esc"}
_MODIFIERS = ("ctrl", "alt", "shift", "meta", "super")

_defaults: dict[str, Binding] = {}


def bbrowse_bindings() -> Iterator[tuple[type, Binding]]:
    """(class, binding) for every `Binding(id=...)` of the classes loaded now, in class order."""
    pending: list[type] = [DOMNode]
    seen: set[type] = set()
    while pending:
        cls = pending.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        pending.extend(cls.__subclasses__())
        for binding in cls.__dict__.get("BINDINGS", ()):
            if isinstance(binding, Binding) and binding.id:
                yield cls, binding


def default_binding(binding_id: str) -> Binding:
    """The binding with this id, as its class declares it. Raises KeyError for an id no loaded class has."""
    if binding_id not in _defaults:
        for _, binding in bbrowse_bindings():
            _defaults.setdefault(binding.id or "", binding)
    return _defaults[binding_id]


def keys_in_force(binding_id: str, keymap: Mapping[str, str]) -> list[str]:
    """The keys of a binding after the keymap: a remap replaces the default keys."""
    keys = keymap.get(binding_id) or default_binding(binding_id).key
    return [key.strip() for key in keys.split(",") if key.strip()]


def say_key(key: str) -> str:
    """A key as a hint writes it: `ctrl+s`, `/`, `~`, `enter`, `esc`."""
    *names, base = key.split("+")
    modifiers = [name for name in _MODIFIERS if name in names]
    return "+".join([*modifiers, _SAID.get(base) or format_key(base)])


def hint_text(template: str, keymap: Mapping[str, str], *, quote: bool = False) -> str:
    """`template` with each `{binding.id}` replaced by the first key in force (in backticks with `quote`)."""

    def key(match: re.Match[str]) -> str:
        keys = keys_in_force(match[2], keymap)
        said = [say_key(k) for k in (keys if match[1] else keys[:1])]
        return "/".join(f"`{k}`" for k in said) if quote else "/".join(said)

    return _PLACEHOLDER.sub(key, template)


def binding_ids(template: str) -> list[str]:
    return [binding_id for _, binding_id in _PLACEHOLDER.findall(template)]


#: The README's keys table: what each screen's row says.
README_KEYS: tuple[tuple[str, str], ...] = (
    ("Sessions", "{sessions.create} new · {sessions.delete} delete (asks first) · {sessions.open} open · "
                 "{sessions.filter} filter (remembered) · {sessions.show_ended} show ended sessions too (dimmed; "
                 "`enter` opens one read-only: its Replays and Events) · {sessions.refresh} refresh · "
                 "{sessions.quit} quit · many at once: {sessions.select} select · {sessions.wall} the wall · on the "
                 "selection {sessions.delete} delete · {sessions.screenshots} screenshot each · {sessions.record} "
                 "record on each · {sessions.broadcast} broadcast typing"),
    ("Wall", "arrows move (past an edge: the next page) · `PgUp`/`PgDn` page · {wall.open} open · {wall.select} "
             "select · {wall.delete} {wall.screenshots} {wall.record} {wall.broadcast} as on the table · {wall.back} "
             "back"),
    ("Broadcast", "every key goes to every shell still running (the bar on top says so) · {terminal.leave} leaves "
                  "the terminals, then {broadcast.toggle} broadcast on/off · {broadcast.previous}/{broadcast.next} "
                  "pick a shell · {broadcast.enter} back in · {broadcast.back} close (the shells are hung up)"),
    ("Session", "opens on its tab bar · {session.tab_shells}–{session.tab_events} switch tabs from anywhere, "
                "inside a terminal too (`1`–`6` elsewhere, or click a tab): Shells, Logs, Files, Screenshot, "
                "Replays, Events · Shells always lands on the tab bar, {session.enter} into the tab (into the "
                "shell) · {session.back} back"),
    ("Shell", "every key goes to the remote program, Esc included; **{terminal.leave} leaves the terminal** (shown "
              "in its border) · {shells.new} new shell · {shells.close} close (asks first when the shell runs "
              "something) · {shells.focus} back in · `r` restart after exit · shift+PgUp/PgDn scrollback · leaving "
              "the session keeps its shells running: reopening it reattaches them (quitting the app hangs them "
              "up)"),
    ("Logs", "{logs.open} open (path or supervised program; one already open is focused) · {logs.close} close · "
             "{logs.search} search, {logs.next_match}/{logs.previous_match} · {logs.filter} filter · {logs.wrap} "
             "wrap · {logs.timestamps} timestamps (the line's own, else `~` when read) · {logs.json} JSON · "
             "{logs.copy} copy · {logs.save} save (what is shown, filter included) · {+logs.follow} follow"),
    ("Files", "`enter` open · `tab` to the viewer · {files.goto} go to path · {files.home} work dir · {files.root} "
              "root · {files.hex} hex · {files.more} more · {files.save} save the highlighted file · "
              "{files.upload} upload · {files.mkdir} new dir · {files.move} rename/move (a path resolving outside "
              "the directory is shown and asked about) · {files.delete} delete · {files.chmod} mode · {files.zip} "
              "zip a dir (its size first)"),
    ("Screenshot", "{screenshot.capture} capture · {screenshot.live} live view on/off · {screenshot.slower}/"
                   "{screenshot.faster} interval · {screenshot.interact} interact (keys and mouse to the browser; "
                   "{screenshot.leave_interact} leaves) · {screenshot.region} region · {screenshot.save} save PNG"),
    ("Replays", "{replays.toggle} record / stop · {replays.download} download (progress bar) · {replays.copy_url} "
                "copy the view URL"),
    ("Events", "{events.follow} follow / pause · {events.category} category · {events.errors} errors only · "
               "{events.search} regex filter · {events.detail} details (headers, timing, stack) · {events.copy} "
               "copy JSON · {events.frame} the replay's frame at the event, then {events.frame_back}/"
               "{events.frame_on} a frame back/on, {events.prev}/{events.next} previous/next event · "
               "{events.telemetry_on} turn telemetry on"),
)
