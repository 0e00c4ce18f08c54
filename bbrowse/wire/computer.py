"""Computer controls: mouse, keyboard, clipboard, cursor and batches of them.

Shapes and defaults follow the official SDK's `browsers.computer` types and the in-VM API they
reach. Coordinates are pixels of the screenshot (`computer/screenshot`), origin top left. Key
names are X11 keysym names as xdotool takes them ("Return", "Ctrl", "F5", "a"), or combinations
joined with "+" ("Ctrl+t", "Ctrl+Shift+Tab"); which names exist is checked by the service.

Unknown properties are refused (400 naming them), as the cloud's service does.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import ConfigDict, Field, model_validator

from bbrowse.wire.base import WireModel

#: Request bodies: strict types, no unknown properties.
CLOSED = ConfigDict(extra="forbid", strict=True)

MouseButton = Literal["left", "right", "middle", "back", "forward"]
DragButton = Literal["left", "middle", "right"]
ClickType = Literal["down", "up", "click"]
KeyList = Annotated[list[str], Field(description="Key names held down during the action (e.g. Ctrl, Shift).")]
Point = Annotated[list[int], Field(min_length=2, max_length=2, description="[x, y] in screenshot pixels.")]


class ClickMouseRequest(WireModel):
    model_config = CLOSED

    x: int
    y: int
    button: MouseButton = "left"
    click_type: ClickType = "click"
    hold_keys: KeyList = Field(default_factory=list)
    num_clicks: int = Field(default=1, ge=1, le=10)


class MoveMouseRequest(WireModel):
    model_config = CLOSED

    x: int
    y: int
    hold_keys: KeyList = Field(default_factory=list)
    #: A human-like curved path at a human pace (the cloud's default); false jumps at once.
    smooth: bool = True
    duration_ms: int | None = Field(default=None, ge=50, le=5000)


class DragMouseRequest(WireModel):
    model_config = CLOSED

    path: list[Point] = Field(min_length=2)
    button: DragButton = "left"
    delay: int = Field(default=0, ge=0, le=30000)
    steps_per_segment: int = Field(default=10, ge=1, le=1000)
    step_delay_ms: int = Field(default=50, ge=0, le=10000)
    smooth: bool = True
    duration_ms: int | None = Field(default=None, ge=50, le=10000)
    hold_keys: KeyList = Field(default_factory=list)


class ScrollRequest(WireModel):
    model_config = CLOSED

    x: int
    y: int
    #: Wheel ticks ("xdotool wheel units"): positive scrolls right / down.
    delta_x: int = Field(default=0, ge=-1000, le=1000)
    delta_y: int = Field(default=0, ge=-1000, le=1000)
    hold_keys: KeyList = Field(default_factory=list)


class TypeTextRequest(WireModel):
    model_config = CLOSED

    text: str
    #: Milliseconds between keystrokes.
    delay: int = Field(default=0, ge=0, le=10000)
    #: Human-like variable timing (word-sized bursts and pauses); `delay` is then ignored.
    smooth: bool = False
    typo_chance: float = Field(default=0.0, ge=0.0, le=0.10)


class PressKeyRequest(WireModel):
    model_config = CLOSED

    keys: list[str] = Field(min_length=1)
    #: Milliseconds to hold all `keys` down together; 0 taps them one after another.
    duration: int = Field(default=0, ge=0, le=30000)
    hold_keys: KeyList = Field(default_factory=list)


class SetCursorRequest(WireModel):
    model_config = CLOSED

    hidden: bool


class WriteClipboardRequest(WireModel):
    model_config = CLOSED

    text: str


class ClipboardContent(WireModel):
    text: str


class MousePosition(WireModel):
    x: int
    y: int


class SleepAction(WireModel):
    model_config = CLOSED

    duration_ms: int = Field(ge=0, le=30000)


ActionType = Literal[
    "click_mouse", "move_mouse", "type_text", "press_key", "scroll", "drag_mouse", "set_cursor", "sleep",
]

ActionBody = (
    ClickMouseRequest | MoveMouseRequest | TypeTextRequest | PressKeyRequest | ScrollRequest | DragMouseRequest
    | SetCursorRequest | SleepAction
)


class ComputerAction(WireModel):
    """One step of a batch: `type` names it, and the field of the same name carries its parameters."""

    model_config = CLOSED

    type: ActionType
    click_mouse: ClickMouseRequest | None = None
    move_mouse: MoveMouseRequest | None = None
    type_text: TypeTextRequest | None = None
    press_key: PressKeyRequest | None = None
    scroll: ScrollRequest | None = None
    drag_mouse: DragMouseRequest | None = None
    set_cursor: SetCursorRequest | None = None
    sleep: SleepAction | None = None

    @model_validator(mode="after")
    def _exactly_the_named_field(self) -> ComputerAction:
        given = [name for name in ACTION_FIELDS if getattr(self, name) is not None]
        if given != [self.type]:
            others = [name for name in given if name != self.type]
            if others:
                raise ValueError(f"type is {self.type!r} but {', '.join(others)} is given; give only {self.type}")
            raise ValueError(f"type is {self.type!r}: the {self.type} field with its parameters is required")
        return self

    def body(self) -> ActionBody:
        value: ActionBody | None = getattr(self, self.type)
        assert value is not None
        return value


#: The field of each action type (a field of `ComputerAction` by the same name).
ACTION_FIELDS: tuple[str, ...] = get_args(ActionType)


class BatchRequest(WireModel):
    model_config = CLOSED

    actions: list[ComputerAction] = Field(min_length=1, max_length=1000)
