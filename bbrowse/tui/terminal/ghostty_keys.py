"""libghostty's key encoder (Ghostty's own) behind `keys.key_press`: it reads the terminal's state at
each key (DECCKM, keypad mode, alt-sends-escape, modifyOtherKeys, the kitty keyboard flags)."""

from __future__ import annotations

from pyghostty import ffi, lib

from .keys import CTRL, SHIFT, key_press, legacy_control

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

_KEY_CODES: dict[str, int] = {}


def _key_code(name: str) -> int:
    code = _KEY_CODES.get(name)
    if code is None:
        code = _KEY_CODES[name] = getattr(lib, f"GHOSTTY_KEY_{name}") if name else lib.GHOSTTY_KEY_UNIDENTIFIED
    return code


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
        _set_key(event, _key_code(press.key))
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
            control = legacy_control(press)
            if control is not None:
                return control
        return data
