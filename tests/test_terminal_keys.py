"""Keys: Textual key events to the bytes the program's modes want (libghostty's encoder): xterm's
legacy encodings with DECCKM off and on, the kitty keyboard protocol and modifyOtherKeys when a
program asks for them; pastes."""

from __future__ import annotations

import pytest
from terminal_cores import CORE_PARAMS, use_core

from bbrowse.tui.terminal.core import TerminalCore
from bbrowse.tui.terminal.keys import encode_paste


@pytest.fixture(autouse=True, params=CORE_PARAMS)
def core_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on both terminal cores."""
    return use_core(request, monkeypatch)

CASES = [
    # key, character, normal cursor keys, application cursor keys (DECCKM on)
    ("a", "a", b"a", b"a"),
    ("A", "A", b"A", b"A"),
    ("shift+a", "A", b"A", b"A"),
    ("space", " ", b" ", b" "),
    ("latin_small_letter_e_with_acute", "é", "é".encode(), "é".encode()),
    ("full_stop", ".", b".", b"."),
    ("enter", "\r", b"\r", b"\r"),
    ("tab", "\t", b"\t", b"\t"),
    ("shift+tab", None, b"\x1b[Z", b"\x1b[Z"),
    ("backspace", "\x7f", b"\x7f", b"\x7f"),
    ("ctrl+backspace", None, b"\x08", b"\x08"),
    ("escape", "\x1b", b"\x1b", b"\x1b"),
    ("up", None, b"\x1b[A", b"\x1bOA"),
    ("down", None, b"\x1b[B", b"\x1bOB"),
    ("right", None, b"\x1b[C", b"\x1bOC"),
    ("left", None, b"\x1b[D", b"\x1bOD"),
    ("home", None, b"\x1b[H", b"\x1bOH"),
    ("end", None, b"\x1b[F", b"\x1bOF"),
    ("shift+up", None, b"\x1b[1;2A", b"\x1b[1;2A"),
    ("alt+left", None, b"\x1b[1;3D", b"\x1b[1;3D"),
    ("ctrl+right", None, b"\x1b[1;5C", b"\x1b[1;5C"),
    ("ctrl+shift+down", None, b"\x1b[1;6B", b"\x1b[1;6B"),
    ("ctrl+home", None, b"\x1b[1;5H", b"\x1b[1;5H"),
    ("insert", None, b"\x1b[2~", b"\x1b[2~"),
    ("delete", None, b"\x1b[3~", b"\x1b[3~"),
    ("pageup", None, b"\x1b[5~", b"\x1b[5~"),
    ("pagedown", None, b"\x1b[6~", b"\x1b[6~"),
    ("shift+pageup", None, b"\x1b[5;2~", b"\x1b[5;2~"),
    ("ctrl+delete", None, b"\x1b[3;5~", b"\x1b[3;5~"),
    ("f1", None, b"\x1bOP", b"\x1bOP"),
    ("f2", None, b"\x1bOQ", b"\x1bOQ"),
    ("f3", None, b"\x1bOR", b"\x1bOR"),
    ("f4", None, b"\x1bOS", b"\x1bOS"),
    ("f5", None, b"\x1b[15~", b"\x1b[15~"),
    ("f6", None, b"\x1b[17~", b"\x1b[17~"),
    ("f7", None, b"\x1b[18~", b"\x1b[18~"),
    ("f8", None, b"\x1b[19~", b"\x1b[19~"),
    ("f9", None, b"\x1b[20~", b"\x1b[20~"),
    ("f10", None, b"\x1b[21~", b"\x1b[21~"),
    ("f11", None, b"\x1b[23~", b"\x1b[23~"),
    ("f12", None, b"\x1b[24~", b"\x1b[24~"),
    ("ctrl+f1", None, b"\x1b[1;5P", b"\x1b[1;5P"),
    ("ctrl+f5", None, b"\x1b[15;5~", b"\x1b[15;5~"),
    ("shift+f5", None, b"\x1b[15;2~", b"\x1b[15;2~"),
    ("f13", None, b"\x1b[1;2P", b"\x1b[1;2P"),  # Textual's name for xterm's shift+F1
    ("f17", None, b"\x1b[15;2~", b"\x1b[15;2~"),  # shift+F5
    ("ctrl+f13", None, b"\x1b[1;6P", b"\x1b[1;6P"),  # ctrl+shift+F1
    ("ctrl+a", "\x01", b"\x01", b"\x01"),
    ("ctrl+c", "\x03", b"\x03", b"\x03"),
    ("ctrl+d", None, b"\x04", b"\x04"),
    ("ctrl+z", None, b"\x1a", b"\x1a"),
    ("ctrl+shift+c", None, b"\x03", b"\x03"),
    ("ctrl+@", "\x00", b"\x00", b"\x00"),
    ("ctrl+space", None, b"\x00", b"\x00"),
    ("ctrl+2", None, b"\x00", b"\x00"),
    ("ctrl+left_square_bracket", None, b"\x1b", b"\x1b"),
    ("ctrl+backslash", "\x1c", b"\x1c", b"\x1c"),
    ("ctrl+right_square_bracket", "\x1d", b"\x1d", b"\x1d"),
    ("ctrl+circumflex_accent", "\x1e", b"\x1e", b"\x1e"),
    ("ctrl+underscore", "\x1f", b"\x1f", b"\x1f"),
    ("ctrl+slash", None, b"\x1f", b"\x1f"),
    ("alt+x", "x", b"\x1bx", b"\x1bx"),
    ("alt+shift+x", "X", b"\x1bX", b"\x1bX"),
    ("alt+enter", None, b"\x1b\r", b"\x1b\r"),
    ("alt+backspace", None, b"\x1b\x7f", b"\x1b\x7f"),
    ("ctrl+alt+c", None, b"\x1b\x03", b"\x1b\x03"),
    ("super+c", "c", None, None),
]




@pytest.mark.parametrize(("key", "character", "normal", "application"), CASES, ids=[c[0] for c in CASES])
def test_legacy_keys_with_and_without_decckm(key: str, character: str | None, normal: bytes | None,
                                             application: bytes | None) -> None:
    core = TerminalCore(80, 24)
    assert core.encode_key(key, character) == normal
    core.feed(b"\x1b[?1h")  # the program sets DECCKM
    assert core.encode_key(key, character) == application


KITTY = [
    # key, character, with `CSI > 1 u` (disambiguate escape codes)
    ("a", "a", b"a"),
    ("A", "A", b"A"),
    ("escape", "\x1b", b"\x1b[27u"),
    ("ctrl+c", "\x03", b"\x1b[99;5u"),
    ("ctrl+shift+c", None, b"\x1b[99;6u"),
    ("alt+x", "x", b"\x1b[120;3u"),
    ("enter", "\r", b"\r"),
    ("up", None, b"\x1b[A"),
    ("f5", None, b"\x1b[15~"),
    ("shift+tab", None, b"\x1b[9;2u"),
]


@pytest.mark.parametrize(("key", "character", "expected"), KITTY, ids=[c[0] for c in KITTY])
def test_kitty_keyboard_protocol_when_a_program_pushes_it(key: str, character: str | None, expected: bytes) -> None:
    core = TerminalCore(80, 24)
    core.feed(b"\x1b[>1u")
    assert core.kitty_keyboard_flags == 1
    assert core.encode_key(key, character) == expected
    core.feed(b"\x1b[<u")  # popped: legacy again
    assert core.encode_key("escape", "\x1b") == b"\x1b"


def test_kitty_protocol_reporting_all_keys_with_text() -> None:
    core = TerminalCore(80, 24)
    core.feed(b"\x1b[>31u")
    assert core.encode_key("a", "a") == b"\x1b[97;;97u"


def test_modify_other_keys_when_a_program_sets_it() -> None:
    """vim sets xterm's modifyOtherKeys (`CSI > 4;2 m`): ctrl chords come as CSI 27 ; m ; code ~."""
    core = TerminalCore(80, 24)
    core.feed(b"\x1b[>4;2m")
    assert core.encode_key("ctrl+c", "\x03") == b"\x1b[27;5;99~"
    assert core.encode_key("a", "a") == b"a"
    core.feed(b"\x1b[>4m")
    assert core.encode_key("ctrl+c", "\x03") == b"\x03"


def test_paste_plain_and_bracketed() -> None:
    assert encode_paste("echo one\necho two\n", bracketed=False) == b"echo one\recho two\r"
    assert encode_paste("echo one\r\necho two", bracketed=True) == b"\x1b[200~echo one\recho two\x1b[201~"


def test_bracketed_paste_cannot_be_ended_early_by_its_content() -> None:
    hostile = "harmless\x1b[201~rm -rf ~\n"
    sent = encode_paste(hostile, bracketed=True)
    assert sent.startswith(b"\x1b[200~") and sent.endswith(b"\x1b[201~")
    assert sent.count(b"\x1b[201~") == 1
    assert b"rm -rf ~" in sent


def test_unicode_paste_is_utf8() -> None:
    assert encode_paste("中文 😀", bracketed=False) == "中文 😀".encode()
