"""A hex dump in the `hexdump -C` layout, one line at a time, so a viewer can draw only what is visible.

    00000000  89 50 4e 47 0d 0a 1a 0a  00 00 00 0d 49 48 44 52  |.PNG........IHDR|

Offset, 16 bytes in two groups of 8, then the ASCII gutter (printable bytes as themselves, others as
`.`). A partial last line is padded so its gutter lines up with the others. Pure functions: no I/O,
no Textual; the file viewer asks for line `n` and formats `data[16n:16n+16]`.
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


def line_count(size: int) -> int:
    """Lines a dump of `size` bytes takes (a partial last line counts)."""
    return (size + BYTES_PER_LINE - 1) // BYTES_PER_LINE


def line_width(digits: int = 8) -> int:
    """Cells of a full line: offset, hex columns, and the `|…|` gutter."""
    return digits + HEX_WIDTH + 1 + BYTES_PER_LINE + 1


def gutter(chunk: bytes) -> str:
    """The ASCII column: printable bytes as themselves, everything else as `.`."""
    return "".join(_GUTTER[b] for b in chunk)


def hex_columns(chunk: bytes) -> str:
    """`48 65 …  …` padded to the full width of 16 bytes, groups of 8 separated by two spaces."""
    left = " ".join(_HEX[b] for b in chunk[:GROUP])
    right = " ".join(_HEX[b] for b in chunk[GROUP:BYTES_PER_LINE])
    return f"{left:<{GROUP_WIDTH}}  {right:<{GROUP_WIDTH}}"


def format_line(chunk: bytes, offset: int, digits: int = 8) -> str:
    """One dump line for up to 16 bytes starting at `offset`."""
    if len(chunk) > BYTES_PER_LINE:
        raise ValueError(f"a hex dump line holds at most {BYTES_PER_LINE} bytes, got {len(chunk)}")
    return f"{offset:0{digits}x}  {hex_columns(chunk)}  |{gutter(chunk)}|"


def line_at(data: bytes | bytearray | memoryview, index: int, *, base_offset: int = 0, digits: int = 8) -> str:
    """Line `index` of the dump of `data` (whose first byte sits at `base_offset` in the file)."""
    start = index * BYTES_PER_LINE
    if index < 0 or start >= len(data):
        raise IndexError(f"line {index} is past the end of {len(data)} bytes")
    return format_line(bytes(data[start:start + BYTES_PER_LINE]), base_offset + start, digits)


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
