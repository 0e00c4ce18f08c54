"""The primitive input steps every computer action is made of, and what a backend must do with them.

`computer.py` turns a request (click, drag, press_key...) into a list of steps; a backend replays
them on a session's screen: `computer_x11` as one chained xdotool command on the session's Xvfb
display (headful), `computer_cdp` as CDP `Input.*` events to the page (headless). Keeping the
requests' meaning in one place is what makes both kinds of session behave alike.

Coordinates in steps are viewport pixels, the pixels of `computer/screenshot`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bbrowse.service.computer_keys import Combo, Key

#: xdotool's button numbers; CDP's button names are the keys.
BUTTON_NUMBERS = {"left": 1, "middle": 2, "right": 3, "back": 8, "forward": 9}
#: Pixels one wheel tick scrolls in Chromium on X11 (measured), used for CDP wheel events too.
WHEEL_TICK_PIXELS = 120


@dataclass(frozen=True)
class KeyDown:
    key: Key


@dataclass(frozen=True)
class KeyUp:
    key: Key


@dataclass(frozen=True)
class Tap:
    """Press and release a key or combination (modifiers first, released in reverse)."""

    combo: Combo


@dataclass(frozen=True)
class MoveTo:
    x: int
    y: int


@dataclass(frozen=True)
class ButtonDown:
    button: str


@dataclass(frozen=True)
class ButtonUp:
    button: str


@dataclass(frozen=True)
class Click:
    """`count` clicks in quick succession (a double click is two), where the pointer is."""

    button: str
    count: int = 1


@dataclass(frozen=True)
class Wheel:
    """Wheel ticks where the pointer is: positive `dx` scrolls right, positive `dy` down."""

    dx: int
    dy: int


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class TypeText:
    """Type `text` into whatever has focus, `delay` seconds between characters."""

    text: str
    delay: float = 0.0


Step = KeyDown | KeyUp | Tap | MoveTo | ButtonDown | ButtonUp | Click | Wheel | Pause | TypeText


class InputBackend(Protocol):
    """How one session's screen is driven."""

    #: Whether key names only X11 knows can be pressed.
    x11: bool

    async def run(self, steps: list[Step]) -> None:
        """Replay `steps` in order; if interrupted, release whatever keys and buttons it pressed."""

    async def position(self) -> tuple[int, int]:
        """Where the pointer is, in viewport pixels (may lie outside the viewport on a headful screen)."""

    async def read_clipboard(self) -> str: ...

    async def write_clipboard(self, text: str) -> None: ...

    async def set_cursor_hidden(self, hidden: bool) -> None: ...

    async def close(self) -> None:
        """The session ends: stop helpers (a clipboard owner) the backend started."""
