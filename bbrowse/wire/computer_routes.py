"""The computer operations, by the path each is served at under `/browsers/{id_or_name}/computer/`.

One list for the service's routes and the client's calls (and for a session's VM endpoint, which
serves them under `/vm/{id_or_name}/computer/`).
"""

from enum import StrEnum

#: Where the operations are, under a session's path.
COMPUTER = "computer"


class ComputerRoute(StrEnum):
    SCREENSHOT = "screenshot"
    CLICK_MOUSE = "click_mouse"
    MOVE_MOUSE = "move_mouse"
    DRAG_MOUSE = "drag_mouse"
    SCROLL = "scroll"
    TYPE_TEXT = "type"
    PRESS_KEY = "press_key"
    BATCH = "batch"
    GET_MOUSE_POSITION = "get_mouse_position"
    SET_CURSOR = "cursor"
    READ_CLIPBOARD = "clipboard/read"
    WRITE_CLIPBOARD = "clipboard/write"
