"""Key names: what `press_key`, `hold_keys` and typed text mean, for xdotool and for CDP alike.

Names are X11 keysym names as xdotool takes them ("Return", "BackSpace", "F5", "a", "minus"),
plus the aliases people write ("Ctrl", "Enter", "Esc", "PageUp", "Cmd"), matched without regard
to case when the exact spelling is not a keysym. A combination joins names with "+" ("Ctrl+t",
"Ctrl+Shift+Tab"); a literal "-" or "+" is accepted for minus and plus ("Ctrl+-", "Ctrl++").
Each name resolves to a `Key`: its keysym for xdotool and the DOM description CDP needs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from dataclasses import dataclass, replace

from bbrowse.service.files import field_error

#: CDP `modifiers` bits.
ALT, CTRL, META, SHIFT = 1, 2, 4, 8


@dataclass(frozen=True)
class Key:
    keysym: str
    key: str
    code: str
    key_code: int
    #: What the key types when pressed without Ctrl/Alt/Meta ("" for none).
    text: str = ""
    #: The CDP modifier bit this key sets while held (0 for ordinary keys).
    modifier: int = 0
    #: Only X11 knows this key: a headless session cannot press it.
    x11_only: bool = False


@dataclass(frozen=True)
class Combo:
    """Keys pressed together: modifiers first, the last key is the one tapped."""

    keys: tuple[Key, ...]

    @property
    def xdotool(self) -> str:
        return "+".join(k.keysym for k in self.keys)


def _table() -> dict[str, Key]:
    keys: list[Key] = [
        Key("Shift_L", "Shift", "ShiftLeft", 16, modifier=SHIFT),
        Key("Shift_R", "Shift", "ShiftRight", 16, modifier=SHIFT),
        Key("Control_L", "Control", "ControlLeft", 17, modifier=CTRL),
        Key("Control_R", "Control", "ControlRight", 17, modifier=CTRL),
        Key("Alt_L", "Alt", "AltLeft", 18, modifier=ALT),
        Key("Alt_R", "Alt", "AltRight", 18, modifier=ALT),
        Key("Meta_L", "Meta", "MetaLeft", 91, modifier=META),
        Key("Meta_R", "Meta", "MetaRight", 92, modifier=META),
        Key("Super_L", "Meta", "MetaLeft", 91, modifier=META),
        Key("Super_R", "Meta", "MetaRight", 92, modifier=META),
        Key("Return", "Enter", "Enter", 13, "\r"),
        Key("KP_Enter", "Enter", "NumpadEnter", 13, "\r"),
        Key("Tab", "Tab", "Tab", 9),
        Key("ISO_Left_Tab", "Tab", "Tab", 9),
        Key("Escape", "Escape", "Escape", 27),
        Key("BackSpace", "Backspace", "Backspace", 8),
        Key("Delete", "Delete", "Delete", 46),
        Key("Insert", "Insert", "Insert", 45),
        Key("Home", "Home", "Home", 36),
        Key("End", "End", "End", 35),
        Key("Prior", "PageUp", "PageUp", 33),
        Key("Next", "PageDown", "PageDown", 34),
        Key("Page_Up", "PageUp", "PageUp", 33),
        Key("Page_Down", "PageDown", "PageDown", 34),
        Key("Left", "ArrowLeft", "ArrowLeft", 37),
        Key("Up", "ArrowUp", "ArrowUp", 38),
        Key("Right", "ArrowRight", "ArrowRight", 39),
        Key("Down", "ArrowDown", "ArrowDown", 40),
        Key("space", " ", "Space", 32, " "),
        Key("Caps_Lock", "CapsLock", "CapsLock", 20),
        Key("Num_Lock", "NumLock", "NumLock", 144),
        Key("Scroll_Lock", "ScrollLock", "ScrollLock", 145),
        Key("Pause", "Pause", "Pause", 19),
        Key("Print", "PrintScreen", "PrintScreen", 44),
        Key("Menu", "ContextMenu", "ContextMenu", 93),
    ]
    keys += [Key(f"F{n}", f"F{n}", f"F{n}", 111 + n) for n in range(1, 25)]
    for letter in "abcdefghijklmnopqrstuvwxyz":
        keys.append(Key(letter, letter, f"Key{letter.upper()}", ord(letter.upper()), letter))
        keys.append(Key(letter.upper(), letter.upper(), f"Key{letter.upper()}", ord(letter.upper()), letter.upper()))
    for digit in "0123456789":
        keys.append(Key(digit, digit, f"Digit{digit}", ord(digit), digit))
    for n in range(10):
        keys.append(Key(f"KP_{n}", str(n), f"Numpad{n}", 96 + n, str(n)))
    # (keysym, character, code, virtual key code) of the US layout's punctuation.
    punctuation = [
        ("minus", "-", "Minus", 189), ("underscore", "_", "Minus", 189),
        ("equal", "=", "Equal", 187), ("plus", "+", "Equal", 187),
        ("bracketleft", "[", "BracketLeft", 219), ("braceleft", "{", "BracketLeft", 219),
        ("bracketright", "]", "BracketRight", 221), ("braceright", "}", "BracketRight", 221),
        ("backslash", "\\", "Backslash", 220), ("bar", "|", "Backslash", 220),
        ("semicolon", ";", "Semicolon", 186), ("colon", ":", "Semicolon", 186),
        ("apostrophe", "'", "Quote", 222), ("quotedbl", '"', "Quote", 222),
        ("grave", "`", "Backquote", 192), ("asciitilde", "~", "Backquote", 192),
        ("comma", ",", "Comma", 188), ("less", "<", "Comma", 188),
        ("period", ".", "Period", 190), ("greater", ">", "Period", 190),
        ("slash", "/", "Slash", 191), ("question", "?", "Slash", 191),
        ("exclam", "!", "Digit1", 49), ("at", "@", "Digit2", 50), ("numbersign", "#", "Digit3", 51),
        ("dollar", "$", "Digit4", 52), ("percent", "%", "Digit5", 53), ("asciicircum", "^", "Digit6", 54),
        ("ampersand", "&", "Digit7", 55), ("asterisk", "*", "Digit8", 56), ("parenleft", "(", "Digit9", 57),
        ("parenright", ")", "Digit0", 48),
    ]
    keys += [Key(sym, char, code, vk, char) for sym, char, code, vk in punctuation]
    return {k.keysym: k for k in keys}


KEYS: dict[str, Key] = _table()

#: What people write for keys whose keysym is spelled otherwise (matched case-insensitively).
ALIASES: dict[str, str] = {
    "shift": "Shift_L", "lshift": "Shift_L", "rshift": "Shift_R",
    "ctrl": "Control_L", "control": "Control_L", "lctrl": "Control_L", "rctrl": "Control_R",
    "alt": "Alt_L", "option": "Alt_L", "lalt": "Alt_L", "ralt": "Alt_R", "altgr": "Alt_R",
    "meta": "Meta_L", "super": "Super_L", "win": "Super_L", "windows": "Super_L", "cmd": "Super_L",
    "command": "Super_L",
    "enter": "Return", "ret": "Return", "esc": "Escape", "backspace": "BackSpace", "bksp": "BackSpace",
    "del": "Delete", "ins": "Insert", "pageup": "Page_Up", "pgup": "Page_Up", "pagedown": "Page_Down",
    "pgdn": "Page_Down", "arrowleft": "Left", "arrowright": "Right", "arrowup": "Up", "arrowdown": "Down",
    "capslock": "Caps_Lock", "numlock": "Num_Lock", "scrolllock": "Scroll_Lock", "printscreen": "Print",
    "contextmenu": "Menu", "spacebar": "space",
}
_FOLDED: dict[str, str] = {name.lower(): name for name in KEYS if len(name) > 1}

#: Characters and the keysym that types them, for typed text and single-character key names.
CHAR_KEYS: dict[str, Key] = {k.text: k for k in KEYS.values() if len(k.text) == 1 and not k.keysym.startswith("KP_")}
CHAR_KEYS["\n"] = KEYS["Return"]
CHAR_KEYS["\r"] = KEYS["Return"]
CHAR_KEYS["\t"] = KEYS["Tab"]


@functools.cache
def _libx11() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("X11")
    if not name:
        return None
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    lib.XStringToKeysym.argtypes = [ctypes.c_char_p]
    lib.XStringToKeysym.restype = ctypes.c_ulong
    return lib


def x11_knows(name: str) -> bool:
    """Whether X11 has a keysym of this exact name (needs no display; False without libX11)."""
    lib = _libx11()
    if lib is None or not name.isascii() or not name.isprintable():
        return False
    return lib.XStringToKeysym(name.encode()) != 0


def resolve(name: str, field: str, allow_x11: bool) -> Key:
    """The `Key` a name means; 400 naming `field` when there is none.

    A name neither in the table nor a single character is refused; with `allow_x11` (a headful session)
    any other name X11 itself knows (`XStringToKeysym`, e.g. "XF86AudioMute") is let through to xdotool,
    since only a headless session needs the DOM description."""
    if name in KEYS:
        return KEYS[name]
    if len(name) == 1:
        if name in CHAR_KEYS:
            return CHAR_KEYS[name]
        if name.isprintable():
            # Any other character: typed as text; xdotool reaches it through its Unicode keysym.
            return Key(f"U{ord(name):04X}", name, "", 0, name)
    folded = name.lower()
    if folded in ALIASES:
        return KEYS[ALIASES[folded]]
    if folded in _FOLDED:
        return KEYS[_FOLDED[folded]]
    if allow_x11 and x11_knows(name):
        return Key(name, name, "", 0, x11_only=True)
    if not name:
        raise field_error(field, "empty key name")
    raise field_error(field, f"unknown key name {name!r} (use X11 keysym names such as Return, Tab, "
                             f"Escape, BackSpace, Left, F5, a, minus, or modifiers Ctrl, Shift, Alt, Super)")


def _split(combo: str) -> list[str]:
    """"Ctrl+Shift+t" -> [Ctrl, Shift, t]; a "+" standing for itself ("Ctrl++", "+") is kept."""
    if combo == "+":
        return ["+"]
    parts = combo.split("+")
    if combo.endswith("++"):
        parts = [*parts[:-2], "+"]
    return parts


def parse_combo(combo: str, field: str, allow_x11: bool) -> Combo:
    """A key or "+"-joined combination; 400 naming `field` for an unknown or empty part."""
    names = _split(combo)
    if not combo or any(not name for name in names):
        raise field_error(field, f"{combo!r} is not a key or a combination like Ctrl+t")
    keys = tuple(resolve(name, field, allow_x11) for name in names)
    return Combo(keys)


def parse_keys(names: list[str], field: str, allow_x11: bool) -> list[Combo]:
    return [parse_combo(name, f"{field}.{i}", allow_x11) for i, name in enumerate(names)]


def parse_hold_keys(names: list[str], field: str, allow_x11: bool) -> list[Key]:
    """Keys held during an action: single keys, not combinations ("Ctrl", "Shift")."""
    held: list[Key] = []
    for i, name in enumerate(names):
        combo = parse_combo(name, f"{field}.{i}", allow_x11)
        held.extend(combo.keys)
    return held


def shifted(key: Key) -> Key:
    """The key as typed with Shift held (a letter becomes upper case)."""
    if len(key.text) == 1 and key.text.isalpha() and key.text.islower():
        return KEYS.get(key.text.upper(), replace(key, key=key.text.upper(), text=key.text.upper()))
    return key


def require_headless_support(keys: list[Key], field: str) -> None:
    for key in keys:
        if key.x11_only:
            raise field_error(field, f"{key.keysym!r} exists only on an X display; this session is headless")

