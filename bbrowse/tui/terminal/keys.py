"""Keys: a Textual key event -> the bytes the program expects, as the terminal's modes want them.

The encoding itself is libghostty's key encoder (Ghostty's own), or `PythonKeyEncoder` for the Python
core: it reads the terminal's state at each key (DECCKM, keypad mode, modifyOtherKeys, the kitty keyboard
flags a program pushed) and writes legacy xterm, modifyOtherKeys or kitty `CSI u` forms accordingly.
This module says which key was pressed, in the encoder's terms: Textual names keys as
`[modifier+]...name` and gives the typed character; the encoder wants the physical key (US layout), the
modifiers, the text the key produces without ctrl/alt, and its unshifted codepoint. Pastes are data, not
keystrokes (`encode_paste`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

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

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"


@dataclass(frozen=True)
class KeyPress:
    """A key press in the encoder's terms."""

    key: str  # the physical key (US layout) by libghostty's name (`ARROW_UP`, `A`, `DIGIT_1`), or ""
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
    control character, or None for keys that mean nothing to a terminal.

    Textual reports xterm's shift+F1..F12 as f13..f24; they map back to the shifted keys. A bare C0
    character (ctrl+\\ arriving as 0x1c, say) with no better description is sent as that byte. Super and
    hyper chords belong to the desktop, not the program: nothing is sent."""
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
        return KeyPress(named, mods, " " if space else "", 32 if space else 0)
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
        code = unshifted.upper()
    elif "0" <= unshifted <= "9":
        code = f"DIGIT_{unshifted}"
    elif unshifted in _PUNCTUATION:
        code = _PUNCTUATION[unshifted]
    else:
        code = ""
    return KeyPress(code, mods, char, ord(unshifted[0]))


def legacy_control(press: KeyPress) -> bytes | None:
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


# xterm's final bytes / numbers for the keys that are not text.
_CURSOR = {"ARROW_UP": "A", "ARROW_DOWN": "B", "ARROW_RIGHT": "C", "ARROW_LEFT": "D", "HOME": "H", "END": "F"}
_TILDE = {"INSERT": 2, "DELETE": 3, "PAGE_UP": 5, "PAGE_DOWN": 6, "F5": 15, "F6": 17, "F7": 18, "F8": 19, "F9": 20,
          "F10": 21, "F11": 23, "F12": 24}
_SS3_F = {"F1": "P", "F2": "Q", "F3": "R", "F4": "S"}
_C0 = {"ENTER": (b"\r", 13), "TAB": (b"\t", 9), "BACKSPACE": (b"\x7f", 127), "ESCAPE": (b"\x1b", 27)}


def _mods_param(mods: int) -> int:
    return 1 + (1 if mods & SHIFT else 0) + (2 if mods & ALT else 0) + (4 if mods & CTRL else 0)


class PythonKeyEncoder:
    """xterm's key encodings in Python, for the portable core: legacy sequences with DECCKM,
    modifyOtherKeys (level 2, as vim asks) and the kitty keyboard protocol's disambiguate, report-all
    and report-text flags. Checked against libghostty's encoder key by key where both are installed."""

    def encode(self, key: str, character: str | None, *, cursor_keys: bool, modify_other_keys: int,
               kitty_flags: int) -> bytes | None:
        press = key_press(key, character)
        if press is None or isinstance(press, bytes):
            return press
        mods, name = press.mods, press.key
        param = _mods_param(mods)
        if name in _CURSOR:
            final = _CURSOR[name]
            if param > 1:
                return f"\x1b[1;{param}{final}".encode()
            return f"\x1bO{final}".encode() if cursor_keys else f"\x1b[{final}".encode()
        if name in _TILDE:
            number = _TILDE[name]
            return f"\x1b[{number};{param}~".encode() if param > 1 else f"\x1b[{number}~".encode()
        if name in _SS3_F:
            final = _SS3_F[name]
            return f"\x1b[1;{param}{final}".encode() if param > 1 else f"\x1bO{final}".encode()
        if kitty_flags:
            return self._kitty(press, param, kitty_flags)
        if name in _C0:
            plain, code = _C0[name]
            if name == "TAB" and mods == SHIFT:
                return b"\x1b[Z"
            if name == "BACKSPACE" and mods & CTRL:
                plain = b"\x08"
            if modify_other_keys == 2 and mods & ~SHIFT and name != "ESCAPE" and not (name == "BACKSPACE"):
                return f"\x1b[27;{param};{code}~".encode()
            return (b"\x1b" if mods & ALT else b"") + plain
        text = press.text
        if mods & CTRL and modify_other_keys == 2:
            return f"\x1b[27;{param};{press.unshifted}~".encode()
        if mods & CTRL:
            control = legacy_control(press)
            if control is not None:
                return control
            if modify_other_keys:
                return f"\x1b[27;{param};{press.unshifted}~".encode()
            return None
        if not text:
            return None
        return (b"\x1b" if mods & ALT else b"") + text.encode("utf-8", "surrogateescape")

    @staticmethod
    def _kitty(press: KeyPress, param: int, flags: int) -> bytes | None:
        """The kitty keyboard protocol (CSI code ; mods u) for text and C0 keys."""
        mods, name, text = press.mods, press.key, press.text
        report_all = bool(flags & 8)
        if name in _C0:
            plain, code = _C0[name]
            if name == "ESCAPE" or report_all or mods:
                return f"\x1b[{code};{param}u".encode() if param > 1 else f"\x1b[{code}u".encode()
            return plain
        code = press.unshifted or (ord(text[0]) if text else 0)
        if not code:
            return None
        shifted_text = mods == SHIFT and text and ord(text[0]) != code
        if not report_all and (not mods or shifted_text) and text:
            return text.encode("utf-8", "surrogateescape")
        if not report_all and mods == SHIFT:
            return text.encode("utf-8", "surrogateescape")
        head = f"\x1b[{code}"
        modifier = str(param) if param > 1 else ""
        associated = ""
        if flags & 16 and text and not mods & (CTRL | ALT):
            associated = ";" + ":".join(str(ord(c)) for c in text)
        if modifier or associated:
            return f"{head};{modifier}{associated}u".encode()
        return f"{head}u".encode()

def encode_paste(text: str, bracketed: bool) -> bytes:
    """Pasted text as a terminal sends it: newlines as CR, and wrapped in ESC[200~ ... ESC[201~ when the
    program turned bracketed paste on (`?2004h`).

    The end marker is removed from inside the text so a paste can never end the bracket early and
    have the rest run as typed commands.
    """
    text = text.replace("\r\n", "\r").replace("\n", "\r")
    if bracketed:
        text = PASTE_START + text.replace(PASTE_END, "").replace(PASTE_START, "") + PASTE_END
    return text.encode("utf-8", "surrogateescape")
