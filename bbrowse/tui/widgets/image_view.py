"""An image drawn inline with textual-image, scaled to the space it has, keeping its aspect ratio.

textual-image picks its protocol (kitty graphics, sixel, half-cell blocks, unicode) when it is first
imported, from the terminal's answers (`image_widgets`: the app's probe's, else its own questions, which
are possible only before Textual owns the terminal: the app then imports this module before `App.run()`).
`BBROWSE_IMAGE_RENDERING` overrides the choice: `auto` (default), `tgp` (kitty),
`sixel`, `halfcell` or `unicode`. Tests force `halfcell`. Half cells and kitty graphics are drawn by
bbrowse's own canvases (`halfcell.py`, fast enough for the live view; `kitty.py`, one image id, pixels
sent only when they change).
"""

from __future__ import annotations

import io
import os
import re

from PIL import Image as PILImage
from PIL import ImageDraw
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center, Middle
from textual.message import Message
from textual.widget import Widget

from bbrowse.config import ENV_IMAGE_RENDERING, Rendering, parse_rendering
from bbrowse.tui.remote_input import RemoteInput
from bbrowse.tui.widgets.halfcell import Geometry, HalfcellCanvas, cell_size

# Imported at module import on purpose: textual-image detects the terminal's graphics support now.
from bbrowse.tui.widgets.image_widgets import image_widgets
from bbrowse.tui.widgets.kitty import KittyCanvas

_RENDERINGS: dict[Rendering, type[Widget]] = {
    "auto": image_widgets.Image,
    "tgp": image_widgets.TGPImage,
    "sixel": image_widgets.SixelImage,
    "halfcell": image_widgets.HalfcellImage,
    "unicode": image_widgets.UnicodeImage,
}


def image_widget_class(rendering: str | None = None) -> type[Widget]:
    """The textual-image widget class for `rendering` (else `$BBROWSE_IMAGE_RENDERING`, else auto)."""
    return _RENDERINGS[parse_rendering(rendering or os.environ.get(ENV_IMAGE_RENDERING)) or "auto"]


def rendering_name(cls: type[Widget]) -> str:
    """`halfcell`, `sixel`, ... for a widget class from `image_widget_class`."""
    return next((name for name, known in _RENDERINGS.items() if known is cls and name != "auto"), cls.__name__)


#: What each rendering is called on screen.
RENDERING_LABELS = {"tgp": "kitty graphics", "sixel": "sixel", "halfcell": "half cells", "unicode": "unicode blocks"}


def rendering_label(cls: type[Widget]) -> str:
    """The renderer in words for a widget class from `image_widget_class`; for textual-image's automatic
    choice, the one it chose for this terminal (never the class name `AutoImage`)."""
    name = rendering_name(cls)
    if name in RENDERING_LABELS:
        return RENDERING_LABELS[name]
    from textual_image import renderable

    chosen = {renderable.TGPImage: "tgp", renderable.SixelImage: "sixel", renderable.HalfcellImage: "halfcell",
              renderable.UnicodeImage: "unicode"}.get(renderable.Image)
    return RENDERING_LABELS.get(chosen or "", name)


def image_error_text(error: BaseException) -> str:
    """Pillow's reason in words, without the `<_io.BytesIO object at 0x…>` it names the bytes by."""
    if isinstance(error, PILImage.UnidentifiedImageError):
        return "its format is not recognised"
    text = re.sub(r"<_io\.BytesIO object at 0x[0-9a-fA-F]+>", "the file", str(error)).strip()
    return text or type(error).__name__


def decode_image(data: bytes) -> PILImage.Image:
    """Decode and fully load image bytes (so errors surface here, not while drawing)."""
    image = PILImage.open(io.BytesIO(data))
    image.load()
    return image


class ImageView(Widget):
    """Shows one PIL image centred and scaled to fit (the screenshot pane's captures, the file viewer's
    image files); `image` is None until something is shown.

    With `interact` (the screenshot pane), keys and the mouse over the picture go to a `RemoteInput`.
    Half-cell rendering uses bbrowse's own `HalfcellCanvas` (fast enough for the live view, and it
    marks the remote mouse with a cell), kitty graphics its `KittyCanvas`; sixel and unicode use
    textual-image, with the mark drawn into the picture. `pixel_at` maps a position in the view back to a
    pixel of the image.
    """

    BINDINGS = [
        Binding("escape", "leave_interact", "Leave interact", id="screenshot.leave_interact"),
    ]

    DEFAULT_CSS = """
    ImageView { height: 1fr; width: 1fr; }
    ImageView.-interacting { border: tall $accent; }
    ImageView > Middle { height: 1fr; width: 1fr; }
    ImageView Center { height: auto; width: 1fr; }
    ImageView .inline-image { width: auto; height: auto; }
    ImageView HalfcellCanvas.inline-image { width: 1fr; height: 1fr; }
    ImageView KittyCanvas.inline-image { width: 1fr; height: 1fr; }
    """

    class LeaveInteract(Message):
        """Interact mode ends: esc (the pane takes the keyboard back), or focus went elsewhere (`blurred`)."""

        def __init__(self, *, blurred: bool = False) -> None:
            super().__init__()
            self.blurred = blurred

    def __init__(self, *, rendering: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._image_class = image_widget_class(rendering)
        self.image: PILImage.Image | None = None
        #: The size the image stands for (a scaled-down screencast frame stands for the page): clicks map to
        #: it and the cursor is given in it. The image's own size unless `show` says otherwise.
        self.image_size: tuple[int, int] = (0, 0)
        #: The remote mouse in pixels of `image_size` (None: not shown).
        self.cursor: tuple[int, int] | None = None
        #: Interact mode: where keys and mouse go (None: the view only shows).
        self.remote: RemoteInput | None = None
        #: Added to a pixel of the picture to get the screen's pixel (the capture region's corner).
        self.origin: tuple[int, int] = (0, 0)
        self._pressed: str | None = None
        self._inline: Widget
        if self.fast:
            self._inline = HalfcellCanvas(classes="inline-image")
        elif self.kitty:
            self._inline = KittyCanvas(classes="inline-image")
        else:
            self._inline = self._image_class(classes="inline-image")  # no image yet: `show` sets it

    @property
    def rendering(self) -> str:
        return rendering_name(self._image_class)

    @property
    def rendering_label(self) -> str:
        """The renderer as the status line names it: kitty graphics, sixel, half cells, unicode blocks."""
        return rendering_label(self._image_class)

    @property
    def fast(self) -> bool:
        """Drawn by bbrowse's half-cell canvas (True) or by textual-image (kitty, sixel, unicode)."""
        return self._image_class is image_widgets.HalfcellImage

    @property
    def kitty(self) -> bool:
        """Drawn with kitty graphics by bbrowse's own canvas (one image id, pixels sent only when they change)."""
        if self._image_class is image_widgets.TGPImage:
            return True
        if self._image_class is not image_widgets.Image:
            return False
        from textual_image import renderable

        return renderable.Image is renderable.TGPImage  # textual-image's automatic choice for this terminal

    def compose(self) -> ComposeResult:
        if self.fast or self.kitty:
            yield self._inline
            return
        with Middle(), Center():
            yield self._inline

    def show(self, image: PILImage.Image | None, cursor: tuple[int, int] | None = None,
             size: tuple[int, int] | None = None) -> None:
        """Draw `image` (or clear with None), standing for a picture of `size` (default: its own), with the
        remote mouse marked at `cursor` (pixels of `size`). Drawing into a view that is being taken apart
        draws nothing and raises nothing."""
        self.image = image
        self.image_size = size or (image.size if image is not None else (0, 0))
        self.cursor = cursor
        widget = self._inline
        if isinstance(widget, HalfcellCanvas | KittyCanvas):
            widget.show(image, cursor, self.image_size)
            return
        if image is not None and cursor is not None and self.image_size != image.size:
            cursor = (cursor[0] * image.width // max(1, self.image_size[0]),
                      cursor[1] * image.height // max(1, self.image_size[1]))
        widget.image = with_cursor_mark(image, cursor) if image is not None else None  # type: ignore[attr-defined]

    def frame_pixels(self) -> tuple[int, int] | None:
        """The picture size in pixels worth asking a screencast for, to fill this view (None before layout):
        two pixels a cell down in half cells, the terminal's cell size in pixels otherwise."""
        size = self._inline.size if self.fast or self.kitty else self.content_region.size
        if size.width <= 0 or size.height <= 0:
            return None
        if self.fast:
            return size.width, size.height * 2
        cell_w, cell_h = cell_size()
        return size.width * cell_w, size.height * cell_h

    @property
    def changed_rows(self) -> int | None:
        """Rows the last `show` repainted (0: the screen is already right), None when not known (textual-image)."""
        widget = self._inline
        return widget.rows_changed if isinstance(widget, HalfcellCanvas) else None

    @property
    def geometry(self) -> Geometry | None:
        """Where the picture is drawn in the view (cells), and the image's size; None before the first."""
        widget = self._inline
        if isinstance(widget, HalfcellCanvas | KittyCanvas):
            found = widget.geometry
            if found is None:
                return None
            offset = widget.region.offset - self.region.offset
            return Geometry(found.x + offset.x, found.y + offset.y, found.columns, found.rows,
                            found.image_width, found.image_height)
        if self.image is None or widget.region.width <= 0 or widget.region.height <= 0:
            return None
        offset = widget.content_region.offset - self.region.offset
        size = widget.content_region.size
        return Geometry(offset.x, offset.y, size.width, size.height, *self.image_size)

    def pixel_at(self, x: float, y: float) -> tuple[int, int] | None:
        """The image pixel under view position (x, y), None outside the picture."""
        geometry = self.geometry
        return geometry.pixel_at(x, y) if geometry is not None else None


    # interact mode ----------------------------------------------------------------------

    def interact(self, remote: RemoteInput | None) -> None:
        """Start sending keys and mouse to `remote` (and take the keyboard), or stop with None (what was
        already queued is still sent: the last keys typed before esc are not lost)."""
        self.remote = remote
        self._pressed = None
        self.can_focus = remote is not None
        self.set_class(remote is not None, "-interacting")
        if remote is not None:
            self.focus()
        elif self.has_focus:
            self.blur()
        self.refresh_bindings()

    def check_consume_key(self, key: str, character: str | None) -> bool:
        """In interact mode every key belongs to the browser except esc (leave), ctrl+q (quit the app) and
        alt+digit (switch tabs)."""
        return self.remote is not None and not _kept_by_app(key)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "leave_interact":
            return self.remote is not None
        return True

    def action_leave_interact(self) -> None:
        self.post_message(self.LeaveInteract())

    def on_blur(self) -> None:
        """Focus went elsewhere (a click on the tab bar, another tab): interact mode ends with it."""
        if self.remote is not None:
            self.post_message(self.LeaveInteract(blurred=True))

    def on_key(self, event: events.Key) -> None:
        if self.remote is None or _kept_by_app(event.key):
            return
        event.stop()
        event.prevent_default()
        self.remote.key(event.key, event.character)

    def on_paste(self, event: events.Paste) -> None:
        if self.remote is not None:
            event.stop()
            event.prevent_default()
            self.remote.paste(event.text)

    def _remote_pixel(self, event: events.MouseEvent) -> tuple[int, int] | None:
        """The screen pixel under the mouse event (the picture's pixel plus the capture region's corner)."""
        found = self.pixel_at(event.pointer_screen_x - self.region.x, event.pointer_screen_y - self.region.y)
        if found is None:
            return None
        return found[0] + self.origin[0], found[1] + self.origin[1]

    def _mark(self, pixel: tuple[int, int]) -> None:
        """Move the mouse mark now, before the next frame shows where the browser put it."""
        local = (pixel[0] - self.origin[0], pixel[1] - self.origin[1])
        if self.image is not None and local != self.cursor:
            self.show(self.image, local, self.image_size)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        if self.remote is None:
            return
        event.stop()
        pixel = self._remote_pixel(event)
        button = MOUSE_BUTTONS.get(event.button)
        if pixel is None or button is None:
            return
        self.capture_mouse()
        self._pressed = button
        self.remote.button(*pixel, button=button, down=True, hold_keys=held_keys(event))
        self._mark(pixel)

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self.remote is None or self._pressed is None:
            return
        event.stop()
        self.capture_mouse(False)
        button, self._pressed = self._pressed, None
        pixel = self._remote_pixel(event) or self._clamped_pixel(event)
        self.remote.button(*pixel, button=button, down=False, hold_keys=held_keys(event))
        self._mark(pixel)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self.remote is None:
            return
        pixel = self._remote_pixel(event) if self._pressed is None else self._clamped_pixel(event)
        if pixel is not None and (self.cursor is None or pixel != self._screen_cursor()):
            self.remote.move(*pixel)
            self._mark(pixel)

    def _screen_cursor(self) -> tuple[int, int] | None:
        return None if self.cursor is None else (self.cursor[0] + self.origin[0], self.cursor[1] + self.origin[1])

    def _clamped_pixel(self, event: events.MouseEvent) -> tuple[int, int]:
        """The nearest pixel of the picture (a drag may leave it)."""
        geometry = self.geometry
        if geometry is None:
            return self._screen_cursor() or self.origin
        x = min(max(event.pointer_screen_x - self.region.x, geometry.x), geometry.x + geometry.columns - 0.01)
        y = min(max(event.pointer_screen_y - self.region.y, geometry.y), geometry.y + geometry.rows - 0.01)
        px, py = geometry.pixel_at(x, y) or (0, 0)
        return px + self.origin[0], py + self.origin[1]

    def _wheel(self, event: events.MouseEvent, dx: int, dy: int) -> None:
        if self.remote is None:
            return
        event.stop()
        event.prevent_default()
        pixel = self._remote_pixel(event)
        if pixel is not None:
            self.remote.scroll(*pixel, dx, dy, hold_keys=held_keys(event))

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._wheel(event, 0, -1)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self._wheel(event, 0, 1)

    def on_mouse_scroll_left(self, event: events.MouseScrollLeft) -> None:
        self._wheel(event, -1, 0)

    def on_mouse_scroll_right(self, event: events.MouseScrollRight) -> None:
        self._wheel(event, 1, 0)


#: Textual's mouse buttons (1 left, 2 middle, 3 right) as the computer API names them.
MOUSE_BUTTONS = {1: "left", 2: "middle", 3: "right"}


def held_keys(event: events.MouseEvent) -> list[str]:
    """Modifier keys held during a mouse event, as key names."""
    return [name for name, held in (("Ctrl", event.ctrl), ("Shift", event.shift), ("Alt", event.meta)) if held]


def _kept_by_app(key: str) -> bool:
    """Keys interact mode leaves to the app: esc leaves it, ctrl+q quits, alt+digit switches tabs."""
    return key in ("escape", "ctrl+q") or (key.startswith("alt+") and key[4:].isdigit())


def with_cursor_mark(image: PILImage.Image, cursor: tuple[int, int] | None) -> PILImage.Image:
    """A copy of `image` with a ring around `cursor` (for renderings that draw pixels, not cells)."""
    if cursor is None:
        return image
    marked = image.convert("RGB")
    if marked is image:
        marked = image.copy()
    radius = max(6, image.width // 120)
    x, y = cursor
    draw = ImageDraw.Draw(marked)
    draw.ellipse((x - radius, y - radius, x + radius, y + radius), outline=(220, 0, 120), width=max(2, radius // 3))
    return marked
