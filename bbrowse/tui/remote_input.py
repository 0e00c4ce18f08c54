"""Keys and mouse of the app turned into the browser's: Textual key names to X11 key names, and one
ordered queue of computer calls per live view.

Typed characters go through `type` (so any text, accents included, arrives as typed); special keys and
chords (`ctrl+a`, `shift+tab`, `f5`) go through `press_key` with the names xdotool takes. Calls are
sent one at a time in the order they were made, so a click and the text typed after it never swap;
what piles up while a call is in flight is merged (text joined, pointer moves collapsed to the last,
wheel ticks at one place summed) so a fast typist or a spun wheel never builds a backlog.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from textual.keys import REPLACED_KEYS, key_to_character

from bbrowse.client import ClientError
from bbrowse.client.computer import Computer

#: Textual's names of keys that have no character, as X11 key names.
SPECIAL_KEYS = {
    "enter": "Return", "tab": "Tab", "backspace": "BackSpace", "delete": "Delete", "escape": "Escape",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right", "home": "Home", "end": "End",
    "pageup": "Page_Up", "pagedown": "Page_Down", "insert": "Insert", "space": "space",
}
#: Printable characters whose X11 key name is not the character itself (for chords such as ctrl+minus).
CHARACTER_KEYS = {
    " ": "space", "-": "minus", "=": "equal", "+": "plus", ".": "period", ",": "comma", "/": "slash",
    "\\": "backslash", ";": "semicolon", "'": "apostrophe", "`": "grave", "[": "bracketleft",
    "]": "bracketright", "!": "exclam", "@": "at", "#": "numbersign", "$": "dollar", "%": "percent",
    "^": "asciicircum", "&": "ampersand", "*": "asterisk", "(": "parenleft", ")": "parenright",
    "_": "underscore", "{": "braceleft", "}": "braceright", "|": "bar", ":": "colon", '"': "quotedbl",
    "<": "less", ">": "greater", "?": "question", "~": "asciitilde",
}
MODIFIERS = {"ctrl": "Ctrl", "shift": "Shift", "alt": "Alt", "meta": "Alt", "super": "Super", "hyper": "Super"}
FUNCTION_KEY = re.compile(r"f([1-9]|1[0-9]|2[0-4])")


@dataclass(frozen=True)
class TypeText:
    text: str


@dataclass(frozen=True)
class PressKey:
    name: str


def translate_key(key: str, character: str | None) -> TypeText | PressKey | None:
    """What a Textual key event does in the browser: text to type, a key (chord) to press, or nothing."""
    *modifiers, base = key.split("+")
    chord = [m for m in modifiers if m != "shift"]
    if not chord and character is not None and len(character) == 1 and character.isprintable():
        return TypeText(character)
    name = key_name(base, character)
    if name is None:
        return None
    held = []
    for modifier in modifiers:
        mapped = MODIFIERS.get(modifier)
        if mapped is None:
            return None
        if mapped not in held:
            held.append(mapped)
    return PressKey("+".join([*held, name]))


def key_name(base: str, character: str | None) -> str | None:
    """The X11 name of a key without its modifiers (Textual's `a`, `minus`, `f5`, `pageup`...)."""
    if base in SPECIAL_KEYS:
        return SPECIAL_KEYS[base]
    if FUNCTION_KEY.fullmatch(base):
        return base.upper()
    char = base if len(base) == 1 else key_to_character(REPLACED_KEYS.get(base, base)) or key_to_character(base)
    if char is None and character and len(character) == 1:
        char = character
    if char is None or len(char) != 1 or not char.isprintable():
        return None
    if char.isalnum() and char.isascii():
        return char
    return CHARACTER_KEYS.get(char)


# the queue -------------------------------------------------------------------------------------


@dataclass
class Action:
    """One computer call waiting to be sent: `kind` is the client method's, `args` its arguments."""

    kind: str
    args: dict[str, Any] = field(default_factory=dict)


class RemoteInput:
    """Sends input to one session's browser, in order, merging what waits (see the module docstring)."""

    def __init__(self, computer: Computer, session_id: str, *,
                 on_error: Callable[[BaseException], None] | None = None) -> None:
        self.computer = computer
        self.session_id = session_id
        self.on_error = on_error
        self._queue: deque[Action] = deque()
        self._task: asyncio.Task | None = None
        #: Calls sent so far (tests and benchmarks wait on it).
        self.sent = 0
        self._idle = asyncio.Event()
        self._idle.set()

    # what the view calls -------------------------------------------------------

    def key(self, key: str, character: str | None) -> bool:
        """Send a key event; False when it has no meaning in the browser."""
        action = translate_key(key, character)
        if isinstance(action, TypeText):
            self._put(Action("type", {"text": action.text}))
        elif isinstance(action, PressKey):
            self._put(Action("key", {"keys": action.name}))
        else:
            return False
        return True

    def paste(self, text: str) -> None:
        if text:
            self._put(Action("type", {"text": text}))

    def move(self, x: int, y: int) -> None:
        self._put(Action("move", {"x": x, "y": y}))

    def button(self, x: int, y: int, *, button: str, down: bool, hold_keys: Sequence[str] = ()) -> None:
        self._put(Action("click", {"x": x, "y": y, "button": button, "click_type": "down" if down else "up",
                                   "hold_keys": tuple(hold_keys)}))

    def click(self, x: int, y: int, *, button: str = "left", hold_keys: Sequence[str] = ()) -> None:
        self._put(Action("click", {"x": x, "y": y, "button": button, "click_type": "click",
                                   "hold_keys": tuple(hold_keys)}))

    def scroll(self, x: int, y: int, dx: int, dy: int, hold_keys: Sequence[str] = ()) -> None:
        self._put(Action("scroll", {"x": x, "y": y, "dx": dx, "dy": dy, "hold_keys": tuple(hold_keys)}))

    async def drained(self) -> None:
        """Wait until everything queued so far has been sent (or failed)."""
        await self._idle.wait()

    def close(self) -> None:
        self._queue.clear()
        if self._task is not None:
            self._task.cancel()
        self._idle.set()

    # sending -----------------------------------------------------------------------

    def _put(self, action: Action) -> None:
        last = self._queue[-1] if self._queue else None
        if last is not None and merge(last, action):
            pass
        else:
            self._queue.append(action)
        self._idle.clear()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._send_all())

    async def _send_all(self) -> None:
        try:
            while self._queue:
                action = self._queue.popleft()
                try:
                    await self._send(action)
                except ClientError as error:
                    if self.on_error is not None:
                        self.on_error(error)
                self.sent += 1
        finally:
            if not self._queue:
                self._idle.set()

    async def _send(self, action: Action) -> None:
        c, sid, a = self.computer, self.session_id, action.args
        if action.kind == "type":
            await c.type_text(sid, a["text"])
        elif action.kind == "key":
            await c.press_key(sid, a["keys"])
        elif action.kind == "move":
            await c.move_mouse(sid, a["x"], a["y"], smooth=False)
        elif action.kind == "click":
            await c.click(sid, a["x"], a["y"], button=a["button"], click_type=a["click_type"],
                          hold_keys=a["hold_keys"])
        elif action.kind == "scroll":
            await c.scroll(sid, a["x"], a["y"], a["dx"], a["dy"], hold_keys=a["hold_keys"])


def merge(waiting: Action, new: Action) -> bool:
    """Fold `new` into the `waiting` action at the end of the queue when sending them as one is the same."""
    if waiting.kind != new.kind:
        return False
    if new.kind == "type":
        waiting.args["text"] += new.args["text"]
        return True
    if new.kind == "move":
        waiting.args.update(new.args)
        return True
    if new.kind == "scroll" and (waiting.args["x"], waiting.args["y"], waiting.args["hold_keys"]) == (
            new.args["x"], new.args["y"], new.args["hold_keys"]):
        waiting.args["dx"] += new.args["dx"]
        waiting.args["dy"] += new.args["dy"]
        return True
    return False
