"""Keys: a Textual key event -> the bytes the program expects, as the terminal's modes want them.

The encoding itself is libghostty's key encoder (Ghostty's own): it reads the terminal's state at
each key (cursor keys mode DECCKM, keypad mode, alt-sends-escape, xterm's modifyOtherKeys, the kitty
keyboard protocol flags a program pushed) and writes legacy xterm sequences, modifyOtherKeys forms or
kitty `CSI u` forms accordingly. This module only says which key was pressed, in the encoder's
terms: Textual names keys as `[modifier+]...name` (`ctrl+shift+up`, `alt+x`, `f5`, `left_square_bracket`)
and gives the typed character when there is one; the encoder wants the physical key (US layout),
the modifiers, the text the key produces without ctrl/alt, and its unshifted codepoint.

Textual reports xterm's shift+F1..F12 as f13..f24; they map back to the shifted keys. A key whose
character is a bare C0 control (ctrl+\\ arriving as 0x1c, say) with no better description is sent
as that byte. Super and hyper chords belong to the desktop, not the program: nothing is sent.

A paste is data, not keystrokes: `encode_paste` wraps it in ESC[200~ ... ESC[201~ when the program
turned bracketed paste on (`?2004h`), and sends newlines as CR as a terminal does.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pyghostty import ffi, lib
from textual.keys import REPLACED_KEYS, key_to_character

SHIFT = 1
CTRL = 2
ALT = 4

_NAMED = {
    "up": "ARROW_UP", "down": "ARROW_DOWN", "left": "ARROW_LEFT", "right": "ARROW_RIGHT",
    "home": "HOME", "end": "END", "insert": "INSERT", "delete": "DELETE",
    "pageup": "PAGE_UP", "pagedown": "PAGE_DOWN", "enter": "ENTER", "return": "ENTER", "tab": "TAB",
    "backspace": "BACKSPACE", "escape": "ESCAPE", "space": "SPACE",
    **{f"f{n}": f"F{n}" for n in range(1, 13)},
}
_PUNCTUATION = {
    "`": "BACKQUOTE", "\\": "BACKSLASH", "[": "BRACKET_LEFT", "]": "BRACKET_RIGHT", ",": "COMMA", "=": "EQUAL",
    "-": "MINUS", ".": "PERIOD", "'": "QUOTE", ";": "SEMICOLON", "/": "SLASH",
}
# US layout: shifted character -> the key's unshifted character.
_UNSHIFTED = {
    "~": "`", "!": "1", "@": "2", "#": "3", "$": "4", "%": "5", "^": "6", "&": "7", "*": "8", "(": "9", ")": "0",
    "_": "-", "+": "=", "{": "[", "}": "]", "|": "\\", ":": ";", '"': "'", "<": ",", ">": ".", "?": "/",
}

# xterm's control characters for ctrl+<key> (by the key's character, shifted or not).
_CONTROL = {
    "@": 0x00, " ": 0x00, "2": 0x00, "`": 0x00, "[": 0x1B, "3": 0x1B, "\\": 0x1C, "4": 0x1C, "]": 0x1D, "5": 0x1D,
    "^": 0x1E, "6": 0x1E, "~": 0x1E, "_": 0x1F, "7": 0x1F, "-": 0x1F, "/": 0x1F, "8": 0x7F, "?": 0x7F,
}

# libghostty's key functions, looked up once (attribute access on `lib` is slow in cffi's ABI mode).
_SUCCESS = lib.GHOSTTY_SUCCESS
_PRESS = lib.GHOSTTY_KEY_ACTION_PRESS
_set_action = lib.ghostty_key_event_set_action
_set_key = lib.ghostty_key_event_set_key
_set_mods = lib.ghostty_key_event_set_mods
_set_consumed = lib.ghostty_key_event_set_consumed_mods
_set_utf8 = lib.ghostty_key_event_set_utf8
_set_unshifted = lib.ghostty_key_event_set_unshifted_codepoint
_setopt_from_terminal = lib.ghostty_key_encoder_setopt_from_terminal
_encode = lib.ghostty_key_encoder_encode

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"


@dataclass(frozen=True)
class KeyPress:
    """A key press in the encoder's terms."""

    key: int  # GhosttyKey: the physical key (US layout), or GHOSTTY_KEY_UNIDENTIFIED
    mods: int  # SHIFT | CTRL | ALT
    text: str  # what the key types without ctrl/alt ("" for function keys)
    unshifted: int  # the key's unshifted codepoint (0 for function keys)


def split_key(key: str) -> tuple[frozenset[str], str]:
    """`ctrl+shift+up` -> ({"ctrl", "shift"}, "up")."""
    if key == "ctrl-at":  # an odd Textual alias
        return frozenset({"ctrl"}), "@"
    *mods, base = key.split("+") if key != "+" else ("+",)
    return frozenset(mods), base


def _base_character(base: str, character: str | None) -> str | None:
    if character and len(character) == 1 and character.isprintable():
        return character
    if len(base) == 1:
        return base
    return key_to_character(REPLACED_KEYS.get(base, base))


@lru_cache(maxsize=1024)
def key_press(key: str, character: str | None) -> KeyPress | bytes | None:
    """What was pressed: a `KeyPress` for the encoder, raw bytes for a key only known by its
    control character, or None for keys that mean nothing to a terminal."""
    names, base = split_key(key)
    if names & {"super", "hyper"}:
        return None
    mods = (SHIFT if "shift" in names else 0) | (CTRL if "ctrl" in names else 0)
    mods |= ALT if names & {"alt", "meta"} else 0
    if base.startswith("f") and base[1:].isdigit() and 13 <= int(base[1:]) <= 24:
        base = f"f{int(base[1:]) - 12}"  # Textual's f13..f24 are xterm's shift+F1..F12
        mods |= SHIFT
    named = _NAMED.get(base)
    if named is not None:
        space = base == "space"
        return KeyPress(getattr(lib, f"GHOSTTY_KEY_{named}"), mods, " " if space else "", 32 if space else 0)
    char = _base_character(base, None if mods & (CTRL | ALT) else character)
    if char is None:
        if character and len(character) == 1 and (ord(character) < 0x20 or character == "\x7f"):
            return ((b"\x1b" if mods & ALT else b"") + character.encode())
        return None
    if mods & SHIFT and char.isalpha() and char.islower():
        char = char.upper()
    unshifted = _UNSHIFTED.get(char, char.lower())
    if unshifted != char:
        mods |= SHIFT  # "A" or "?" are shifted keys even when Textual names no shift
    if "a" <= unshifted <= "z":
        code = getattr(lib, f"GHOSTTY_KEY_{unshifted.upper()}")
    elif "0" <= unshifted <= "9":
        code = getattr(lib, f"GHOSTTY_KEY_DIGIT_{unshifted}")
    elif unshifted in _PUNCTUATION:
        code = getattr(lib, f"GHOSTTY_KEY_{_PUNCTUATION[unshifted]}")
    else:
        code = lib.GHOSTTY_KEY_UNIDENTIFIED
    return KeyPress(code, mods, char, ord(unshifted[0]))


class KeyEncoder:
    """libghostty's key encoder and one reusable key event."""

    def __init__(self) -> None:
        encoder = ffi.new("GhosttyKeyEncoder*")
        if lib.ghostty_key_encoder_new(ffi.NULL, encoder) != lib.GHOSTTY_SUCCESS:
            raise MemoryError("libghostty: key_encoder_new")
        self._encoder = ffi.gc(encoder[0], lib.ghostty_key_encoder_free)
        event = ffi.new("GhosttyKeyEvent*")
        if lib.ghostty_key_event_new(ffi.NULL, event) != lib.GHOSTTY_SUCCESS:
            raise MemoryError("libghostty: key_event_new")
        self._event = ffi.gc(event[0], lib.ghostty_key_event_free)
        self._out = ffi.new("char[]", 128)
        self._written = ffi.new("size_t*")

    def encode(self, terminal, key: str, character: str | None, kitty_flags: int = 0) -> bytes | None:
        """The bytes for a key press with `terminal`'s current modes, or None.

        Without the kitty protocol, a ctrl chord that xterm sends as a control character goes as that
        character: libghostty would send a fixterms `CSI ... u` (for ctrl+shift+c, ctrl+@, ctrl+[),
        which a program that did not ask for it cannot read."""
        press = key_press(key, character)
        if press is None or isinstance(press, bytes):
            return press
        event = self._event
        _set_action(event, _PRESS)
        _set_key(event, press.key)
        _set_mods(event, press.mods)
        # Shift is "consumed" when it made the text (A, ?): the key is then plain text, not a chord.
        shifted_text = press.mods & SHIFT and press.text and ord(press.text[0]) != press.unshifted
        _set_consumed(event, SHIFT if shifted_text else 0)
        text = press.text.encode("utf-8", "surrogateescape")
        self._text = text  # the event borrows the bytes until the next key
        _set_utf8(event, text or ffi.NULL, len(text))
        _set_unshifted(event, press.unshifted)
        _setopt_from_terminal(self._encoder, terminal)
        if _encode(self._encoder, event, self._out, 128, self._written) != _SUCCESS or not self._written[0]:
            return None
        data = ffi.buffer(self._out, self._written[0])[:]
        if not kitty_flags and press.mods & CTRL and data.startswith(b"\x1b[") and data.endswith(b"u"):
            control = _legacy_control(press)
            if control is not None:
                return control
        return data


def _legacy_control(press: KeyPress) -> bytes | None:
    """xterm's byte for a ctrl chord (ESC-prefixed with alt), or None if it has none."""
    char = press.text.lower() if press.text else ""
    code: int | None
    if len(char) == 1 and "a" <= char <= "z":
        code = ord(char) & 0x1F
    else:
        code = _CONTROL.get(press.text, _CONTROL.get(chr(press.unshifted) if press.unshifted else ""))
        if code is None:
            return None
    return (b"\x1b" if press.mods & ALT else b"") + bytes([code])


def encode_paste(text: str, bracketed: bool) -> bytes:
    """Pasted text as a terminal sends it: newlines as CR, and bracketed when the program asked.

    The end marker is removed from inside the text so a paste can never end the bracket early and
    have the rest run as typed commands.
    """
    text = text.replace("\r\n", "\r").replace("\n", "\r")
    if bracketed:
        text = PASTE_START + text.replace(PASTE_END, "").replace(PASTE_START, "") + PASTE_END
    return text.encode("utf-8", "surrogateescape")
