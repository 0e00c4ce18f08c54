"""Pure helpers of the file viewer: the hex dump layout, file kind detection, display lines."""

from __future__ import annotations

import io
import shutil
import subprocess

import pytest
from PIL import Image as PILImage

from bbrowse.tui import hexdump
from bbrowse.tui.file_kind import SNIFF_BYTES, FileKind, detect_kind, image_format, is_binary, language_for
from bbrowse.tui.widgets.file_viewer import MAX_LINE_CHARS, TextLines, display_line, highlight_lines

# hex dump ----------------------------------------------------------------------------------------


def test_full_line_layout() -> None:
    line = hexdump.format_line(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 0)
    assert line == "00000000  89 50 4e 47 0d 0a 1a 0a  00 00 00 0d 49 48 44 52  |.PNG........IHDR|"
    assert len(line) == hexdump.line_width()


def test_partial_last_line_keeps_the_gutter_aligned() -> None:
    lines = hexdump.hexdump(b"Hello\n\x00\x01ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert lines == [
        "00000000  48 65 6c 6c 6f 0a 00 01  41 42 43 44 45 46 47 48  |Hello...ABCDEFGH|",
        "00000010  49 4a 4b 4c 4d 4e 4f 50  51 52 53 54 55 56 57 58  |IJKLMNOPQRSTUVWX|",
        "00000020  59 5a                                             |YZ|",
    ]
    assert lines[2].index("|") == lines[0].index("|")
    # fewer than 8 bytes: the second group is all padding
    short = hexdump.format_line(b"abc", 0x30)
    assert short == "00000030  61 62 63" + " " * 42 + "|abc|"
    assert short.index("|") == lines[0].index("|")


def test_offsets_count_from_the_base_and_grow_past_4_gib() -> None:
    assert hexdump.line_at(bytes(64), 2, base_offset=0x1000) == "00001020  " + "00 " * 7 + "00  " + "00 " * 7 + \
        "00  |................|"
    assert hexdump.offset_digits(0) == 8
    assert hexdump.offset_digits(0xFFFF_FFFF + 1) == 8  # last offset 0xffffffff still fits
    assert hexdump.offset_digits(0x1_0000_0001) == 9
    assert hexdump.format_line(b"x", 0x1_0000_0000, digits=9).startswith("100000000  78")


def test_line_count_and_bounds() -> None:
    assert [hexdump.line_count(n) for n in (0, 1, 16, 17, 32)] == [0, 1, 1, 2, 2]
    with pytest.raises(IndexError):
        hexdump.line_at(b"abc", 1)
    with pytest.raises(ValueError):
        hexdump.format_line(bytes(17), 0)


def test_gutter_shows_only_printable_ascii() -> None:
    assert hexdump.gutter(bytes([0x1F, 0x20, 0x41, 0x7E, 0x7F, 0x80, 0xFF])) == ". A~..."
    assert [hexdump.byte_class(b) for b in (0, 0x41, 0x20, 0x0A, 0xFF)] == [
        "null", "printable", "whitespace", "whitespace", "other"]


@pytest.mark.skipif(shutil.which("hexdump") is None, reason="no hexdump(1) to compare with")
def test_matches_hexdump_dash_c() -> None:
    data = bytes(range(256)) + b"tail"
    expected = subprocess.run(["hexdump", "-C"], input=data, capture_output=True, check=True).stdout.decode()
    assert hexdump.hexdump(data) == expected.splitlines()[:-1]  # hexdump -C ends with the total length


# file kind -------------------------------------------------------------------------------------


def _png() -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (2, 2)).save(out, format="PNG")
    return out.getvalue()


@pytest.mark.parametrize(("head", "expected"), [
    (_png(), "png"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF", "jpeg"),
    (b"GIF89a\x01\x00", "gif"),
    (b"GIF87a\x01\x00", "gif"),
    (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "webp"),
    (b"RIFF\x24\x00\x00\x00WAVEfmt ", None),
    (b"hello", None),
])
def test_image_format_by_magic_bytes(head: bytes, expected: str | None) -> None:
    assert image_format(head) == expected


def test_detect_kind() -> None:
    assert detect_kind(_png()) is FileKind.IMAGE
    assert detect_kind(b"plain text\nwith lines\n") is FileKind.TEXT
    assert detect_kind("ünïcödé text — ok\n".encode()) is FileKind.TEXT
    assert detect_kind(b"text with a \x00 NUL") is FileKind.BINARY
    assert detect_kind(b"latin-1 caf\xe9 is not UTF-8", complete=True) is FileKind.BINARY
    assert detect_kind(b"\x7fELF\x02\x01\x01\x00") is FileKind.BINARY
    assert detect_kind(b"", complete=True) is FileKind.TEXT


def test_a_character_cut_at_the_end_of_the_first_block_is_not_binary() -> None:
    block = b"a" * (SNIFF_BYTES - 1) + "é".encode()  # the é straddles the sniffed block's end
    assert is_binary(block[:SNIFF_BYTES]) is False
    assert detect_kind(block) is FileKind.TEXT
    # ...but a short file that really ends in the middle of a character is not UTF-8
    assert is_binary("é".encode()[:1], complete=True) is True


@pytest.mark.parametrize(("name", "first_line", "language"), [
    ("/srv/app/main.py", "", "python"),
    ("index.TSX", "", "tsx"),
    ("Makefile", "", "make"),
    ("/etc/Dockerfile", "", "docker"),
    ("config.yml", "", "yaml"),
    ("run", "#!/usr/bin/env python3", "python"),
    ("run", "#!/bin/bash -e", "bash"),
    ("notes", "hello", None),
])
def test_language_for(name: str, first_line: str, language: str | None) -> None:
    assert language_for(name, first_line) == language


# display lines ---------------------------------------------------------------------------------


def test_display_line_is_safe_to_draw() -> None:
    assert display_line("a\tb\r") == "a   b"
    assert display_line("esc \x1b[31m red") == "esc ␛[31m red"  # never reaches the terminal raw
    assert display_line("bell\x07 del\x7f c1\x9b") == "bell␇ del␡ c1\ufffd"
    long = display_line("x" * (MAX_LINE_CHARS + 10))
    assert len(long) == MAX_LINE_CHARS + 1 and long.endswith("…")


def test_text_lines_decode_incrementally() -> None:
    text = TextLines()
    data = "première ligne\nsecond\r\nthird without end".encode()
    for i in range(len(data)):  # one byte at a time: characters cut anywhere
        text.feed(data[i:i + 1])
    assert [text[i] for i in range(len(text))] == ["première ligne", "second", "third without end"]
    text.feed(b"\xff\n", final=True)
    assert text[2] == "third without end\ufffd"


def test_highlight_lines_keeps_lines_and_text() -> None:
    lines = ['"""doc', 'string"""', "def f(x):", "    return x + 1"]
    result = highlight_lines(lines, "python")
    assert result is not None and len(result) == len(lines)
    assert ["".join(t for t, _ in runs) for runs in result] == lines
    styles = {style for runs in result for _, style in runs}
    assert len(styles) > 2  # keywords, strings, names get different styles
    assert highlight_lines(lines, "no-such-language") is None
