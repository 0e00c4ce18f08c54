"""A hex dump in the `hexdump -C` layout, one line at a time, so a viewer can draw only what is visible.

    00000000  89 50 4e 47 0d 0a 1a 0a  00 00 00 0d 49 48 44 52  |.PNG........IHDR|

Offset, 16 bytes in two groups of 8, then the ASCII gutter (printable bytes as themselves, others as
`.`). A partial last line is padded so its gutter lines up with the others. Pure functions: no I/O,
no Textual; the file viewer asks for line `n` and formats `data[16n:16n+16]`. A narrow viewer takes
fewer bytes a line (`fit_per_line`: 8 or 4, one group) and keeps the text column.
"""

from __future__ import annotations

from typing import Literal

BYTES_PER_LINE = 16
GROUP = 8
#: Width of one hex group ("xx " * 8 without the trailing space).
GROUP_WIDTH = GROUP * 3 - 1
#: Characters between the offset and the gutter: "  " + group + "  " + group + "  ".
HEX_WIDTH = 2 + GROUP_WIDTH + 2 + GROUP_WIDTH + 2

ByteClass = Literal["null", "printable", "whitespace", "other"]

_GUTTER = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in range(256))
_HEX = [f"{b:02x}" for b in range(256)]


def offset_digits(total_size: int) -> int:
    """Hex digits for offsets: 8 as `hexdump -C` prints, more for files of 4 GiB and over."""
    return max(8, len(f"{max(total_size - 1, 0):x}"))


def line_count(size: int, per_line: int = BYTES_PER_LINE) -> int:
    """Lines a dump of `size` bytes takes (a partial last line counts)."""
    return (size + per_line - 1) // per_line


def hex_width(per_line: int = BYTES_PER_LINE) -> int:
    """Characters between the offset and the gutter for `per_line` bytes (two groups only for 16)."""
    return 2 + per_line * 3 - 1 + (1 if per_line > GROUP else 0) + 2


def line_width(digits: int = 8, per_line: int = BYTES_PER_LINE) -> int:
    """Cells of a full line: offset, hex columns, and the `|…|` gutter."""
    return digits + hex_width(per_line) + 1 + per_line + 1


def fit_per_line(width: int, digits: int = 8) -> int:
    """Bytes a line for a viewer `width` cells wide: 16, else 8, else 4 (the text column always kept)."""
    for per_line in (BYTES_PER_LINE, GROUP, GROUP // 2):
        if line_width(digits, per_line) <= width:
            return per_line
    return GROUP // 2


def gutter(chunk: bytes) -> str:
    """The ASCII column: printable bytes as themselves, everything else as `.`."""
    return "".join(_GUTTER[b] for b in chunk)


def hex_columns(chunk: bytes, per_line: int = BYTES_PER_LINE) -> str:
    """`48 65 …  …` padded to the full width of `per_line` bytes; for 16, groups of 8 separated by two spaces."""
    if per_line <= GROUP:
        return f"{' '.join(_HEX[b] for b in chunk):<{per_line * 3 - 1}}"
    left = " ".join(_HEX[b] for b in chunk[:GROUP])
    right = " ".join(_HEX[b] for b in chunk[GROUP:per_line])
    return f"{left:<{GROUP_WIDTH}}  {right:<{GROUP_WIDTH}}"


def format_line(chunk: bytes, offset: int, digits: int = 8, per_line: int = BYTES_PER_LINE) -> str:
    """One dump line for up to `per_line` bytes starting at `offset`."""
    if len(chunk) > per_line:
        raise ValueError(f"a hex dump line holds at most {per_line} bytes, got {len(chunk)}")
    return f"{offset:0{digits}x}  {hex_columns(chunk, per_line)}  |{gutter(chunk)}|"


def line_at(data: bytes | bytearray | memoryview, index: int, *, base_offset: int = 0, digits: int = 8,
            per_line: int = BYTES_PER_LINE) -> str:
    """Line `index` of the dump of `data` (whose first byte sits at `base_offset` in the file)."""
    start = index * per_line
    if index < 0 or start >= len(data):
        raise IndexError(f"line {index} is past the end of {len(data)} bytes")
    return format_line(bytes(data[start:start + per_line]), base_offset + start, digits, per_line)


def hexdump(data: bytes, *, base_offset: int = 0) -> list[str]:
    """The whole dump as lines; for small data and tests (the viewer uses `line_at`)."""
    digits = offset_digits(base_offset + len(data))
    return [line_at(data, i, base_offset=base_offset, digits=digits) for i in range(line_count(len(data)))]


def byte_class(byte: int) -> ByteClass:
    """What kind of byte this is, so a viewer can colour NULs, text, whitespace and the rest apart."""
    if byte == 0:
        return "null"
    if 0x21 <= byte < 0x7F:
        return "printable"
    if byte in (0x20, 0x09, 0x0A, 0x0D):
        return "whitespace"
    return "other"
