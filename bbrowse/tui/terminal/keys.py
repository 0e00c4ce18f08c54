"""Key translation: a Textual key event (key name + character) -> the bytes an xterm would send.

Textual names keys as `[modifier+]...name` (`ctrl+shift+up`, `alt+x`, `f5`, `pageup`) and gives the
typed character when there is one. The remote program expects xterm's encodings:

- printable characters as UTF-8; `alt+x` as ESC x (xterm's metaSendsEscape);
- enter CR, tab HT, shift+tab CSI Z, backspace DEL (ctrl+backspace BS), escape ESC;
- ctrl+letter as the C0 control (ctrl+c -> 0x03), ctrl+space / ctrl+@ / ctrl+2 -> NUL,
  ctrl+[ \\ ] ^ _ -> 0x1b..0x1f;
- arrows, Home and End as CSI A..D/H/F, or SS3 (ESC O) when the program set DECCKM (`?1h`),
  with modifiers as `CSI 1 ; m X` where m = 1 + shift + 2*alt + 4*ctrl;
- Insert, Delete, PgUp, PgDn and F5-F12 as `CSI n ~` (`CSI n ; m ~` modified), F1-F4 as SS3 P..S
  (`CSI 1 ; m P..S` modified). Textual reports xterm's shift+F1..F12 as f13..f24 and ctrl+shift+Fn as
  ctrl+f13.., which map back to the shifted forms.

A paste is data, not keystrokes: `encode_paste` wraps it in ESC[200~ ... ESC[201~ when the program
turned bracketed paste on (`?2004h`), and sends newlines as CR as a terminal does.
"""

from __future__ import annotations

ESC = "\x1b"
CSI = "\x1b["
SS3 = "\x1bO"

_CURSOR_FINALS = {"up": "A", "down": "B", "right": "C", "left": "D", "home": "H", "end": "F"}
_TILDE_CODES = {
    "insert": 2, "delete": 3, "pageup": 5, "pagedown": 6,
    "f5": 15, "f6": 17, "f7": 18, "f8": 19, "f9": 20, "f10": 21, "f11": 23, "f12": 24,
}
_SS3_FUNCTION_KEYS = {"f1": "P", "f2": "Q", "f3": "R", "f4": "S"}

# ctrl+<key> -> C0 control, by Textual key name (and the character itself).
_CTRL_SYMBOLS = {
    "@": "\x00", "at": "\x00", "space": "\x00", "2": "\x00", "grave_accent": "\x00", "`": "\x00",
    "left_square_bracket": "\x1b", "[": "\x1b", "3": "\x1b",
    "backslash": "\x1c", "\\": "\x1c", "4": "\x1c",
    "right_square_bracket": "\x1d", "]": "\x1d", "5": "\x1d",
    "circumflex_accent": "\x1e", "^": "\x1e", "6": "\x1e", "tilde": "\x1e", "~": "\x1e",
    "underscore": "\x1f", "_": "\x1f", "minus": "\x1f", "-": "\x1f", "7": "\x1f", "slash": "\x1f", "/": "\x1f",
    "8": "\x7f", "question_mark": "\x7f", "?": "\x7f",
}

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"


def split_key(key: str) -> tuple[frozenset[str], str]:
    """`ctrl+shift+up` -> ({"ctrl", "shift"}, "up")."""
    if key == "ctrl-at":  # an odd Textual alias
        return frozenset({"ctrl"}), "@"
    *mods, base = key.split("+")
    return frozenset(mods), base


def _modifier_param(mods: frozenset[str]) -> int:
    """xterm's modifier parameter: 1 + shift + 2 * alt (or meta) + 4 * ctrl."""
    return 1 + ("shift" in mods) + 2 * bool(mods & {"alt", "meta"}) + 4 * ("ctrl" in mods)


def translate_key(key: str, character: str | None, *, application_cursor: bool = False) -> bytes | None:
    """The bytes to send for a key press, or None when the key means nothing to a terminal."""
    text = _translate(key, character, application_cursor)
    return text.encode("utf-8", "surrogateescape") if text is not None else None


def _translate(key: str, character: str | None, application_cursor: bool) -> str | None:
    mods, base = split_key(key)
    if mods & {"super", "hyper"}:
        return None
    alt = "alt" in mods or "meta" in mods
    ctrl = "ctrl" in mods
    shift = "shift" in mods

    # Textual's f13..f24 are xterm's shift+F1..F12.
    if base.startswith("f") and base[1:].isdigit() and 13 <= int(base[1:]) <= 24:
        base = f"f{int(base[1:]) - 12}"
        mods = mods | {"shift"}
        shift = True

    param = _modifier_param(mods)
    final = _CURSOR_FINALS.get(base)
    if final is not None:
        if param == 1:
            return (SS3 if application_cursor else CSI) + final
        return f"{CSI}1;{param}{final}"
    code = _TILDE_CODES.get(base)
    if code is not None:
        return f"{CSI}{code}~" if param == 1 else f"{CSI}{code};{param}~"
    final = _SS3_FUNCTION_KEYS.get(base)
    if final is not None:
        return SS3 + final if param == 1 else f"{CSI}1;{param}{final}"

    prefix = ESC if alt else ""
    if base in ("enter", "return"):
        return prefix + "\r"
    if base == "tab":
        return prefix + (f"{CSI}Z" if shift else "\t")
    if base == "backspace":
        return prefix + ("\x08" if ctrl else "\x7f")
    if base == "escape":
        return prefix + ESC
    if base == "space" and not ctrl:
        return prefix + " "

    if ctrl:
        control = _ctrl_code(base, character)
        if control is not None:
            return prefix + control

    if character and character.isprintable():
        return prefix + character
    if alt and len(base) == 1 and base.isprintable():
        return prefix + (base.upper() if shift else base)
    if character and len(character) == 1 and (ord(character) < 0x20 or character == "\x7f"):
        return prefix + character
    return None


def _ctrl_code(base: str, character: str | None) -> str | None:
    if len(base) == 1 and base.isascii() and base.isalpha():
        return chr(ord(base.lower()) & 0x1F)
    control = _CTRL_SYMBOLS.get(base)
    if control is None and character:
        control = _CTRL_SYMBOLS.get(character)
    if control is None and character and len(character) == 1 and ord(character) < 0x20:
        control = character
    return control


def encode_paste(text: str, bracketed: bool) -> bytes:
    """Pasted text as a terminal sends it: newlines as CR, and bracketed when the program asked.

    The end marker is removed from inside the text so a paste can never end the bracket early and
    have the rest run as typed commands.
    """
    text = text.replace("\r\n", "\r").replace("\n", "\r")
    if bracketed:
        text = PASTE_START + text.replace(PASTE_END, "").replace(PASTE_START, "") + PASTE_END
    return text.encode("utf-8", "surrogateescape")
