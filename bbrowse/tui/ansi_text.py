"""Turning a remote log line into something safe and faithful to draw: a rich `Text`, never markup.

A line from the instance may carry SGR colour codes (drawn as colours), other escape sequences
(cursor moves, titles, screen clears: dropped, a log viewer has no screen for them to act on) and
raw control characters (drawn as their Unicode control pictures, e.g. `␍` for a carriage return, so
nothing is hidden and nothing reaches the terminal as a control code). `[bold]` is just text: the
constructors used here never parse markup. Plain lines (the vast majority) take a fast path.
"""

from __future__ import annotations

import json
import operator
import re
from itertools import compress

from rich.cells import cell_len
from rich.text import Text

TAB_SIZE = 8

#: SGR and other CSI escape sequences, and OSC strings: what a terminal would not show as text.
ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")

#: Control characters still present once SGR codes are taken out (tab is expanded later instead).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
#: Select Graphic Rendition: the escape sequences that are colours and text styles.
_SGR = re.compile(r"\x1b\[[0-9;:]*m")


def _control_picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ .. ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return "\ufffd"  # C1 controls have no pictures


def show_controls(text: str) -> str:
    """`text` with its control characters but tab drawn as their Unicode control pictures (`␍` for a
    carriage return, U+FFFD for the C1 controls, which have none): a raw one would act on the real
    terminal. Tabs are left for the caller to expand to its own tab size."""
    return _CONTROL.sub(_control_picture, text)


def visible(text: str) -> str:
    """`text` with non-colour escape sequences dropped and control characters shown as pictures."""
    if "\x1b" in text:
        text = ANSI_ESCAPE.sub("", text)
    return show_controls(text)


def to_text(line: str) -> Text:
    """The styled text of one log line: SGR colours applied, everything else literal and inert."""
    if line.isprintable():  # no control characters (C0, DEL, C1) at all: the fast path
        return Text(line)
    if "\x1b" in line:
        parts: list[str] = []
        position = 0
        for match in _SGR.finditer(line):
            parts.append(visible(line[position : match.start()]))
            parts.append(match.group())
            position = match.end()
        parts.append(visible(line[position:]))
        text = Text.from_ansi("".join(parts), tab_size=TAB_SIZE)
    else:
        text = Text(visible(line))
    if "\t" in text.plain:
        text.expand_tabs(TAB_SIZE)
    return text


def cell_width(line: str) -> int:
    """Columns `to_text(line)` takes, computed without building the `Text` for plain lines."""
    if line.isprintable():
        return cell_len(line)
    return to_text(line).cell_len


def cell_widths(lines: list[str]) -> list[int]:
    """`cell_width` of many lines: C-speed `len` for plain ASCII lines, the full rule only for the others."""
    widths = list(map(len, lines))
    plain = map(operator.and_, map(str.isascii, lines), map(str.isprintable, lines))
    for index in compress(range(len(lines)), map(operator.not_, plain)):
        widths[index] = cell_width(lines[index])
    return widths


#: Lines that may be a JSON object (the cheap test before `json.loads`).
_MAYBE_JSON = re.compile(r"\s*\{")


def maybe_json(lines: list[str]) -> set[int]:
    """Indexes of the lines `pretty_json` may change (those starting with `{`), found at C speed."""
    return set(compress(range(len(lines)), map(_MAYBE_JSON.match, lines)))


def pretty_json(line: str) -> str | None:
    """`line` re-indented when it is a JSON object, else None (arrays and scalars are left as they are).

    The result has no control characters but the newlines between its lines (JSON escapes them in
    strings; C1 controls and DEL, which it leaves, are shown as pictures).
    """
    candidate = line.strip()
    if len(candidate) < 2 or candidate[0] != "{" or candidate[-1] != "}":
        return None
    try:
        value = json.loads(candidate)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    pretty = json.dumps(value, indent=2, ensure_ascii=False)
    return "\n".join(visible(part) for part in pretty.split("\n"))
