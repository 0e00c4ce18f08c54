"""An image drawn inline with textual-image, scaled to the space it has, keeping its aspect ratio.

textual-image picks its protocol (kitty graphics, sixel, half-cell blocks, unicode) when it is first
imported, by querying the terminal; once Textual owns the terminal that query is no longer possible.
So this module imports `textual_image.widget` at import time: the app must import it (or anything
that imports it) before `App.run()`.

`BBROWSE_IMAGE_RENDERING` overrides the choice: `auto` (default), `tgp` (kitty), `sixel`, `halfcell`
or `unicode`. Tests force `halfcell`, which draws with coloured half blocks and works everywhere.
"""

from __future__ import annotations

import io
import os

# Imported at module import on purpose: textual-image detects the terminal's graphics support now.
import textual_image.widget as image_widgets
from PIL import Image as PILImage
from textual.app import ComposeResult
from textual.containers import Center, Middle
from textual.widget import Widget

RENDERING_ENV = "BBROWSE_IMAGE_RENDERING"

_RENDERINGS: dict[str, type[Widget]] = {
    "auto": image_widgets.Image,
    "tgp": image_widgets.TGPImage,
    "kitty": image_widgets.TGPImage,
    "sixel": image_widgets.SixelImage,
    "halfcell": image_widgets.HalfcellImage,
    "unicode": image_widgets.UnicodeImage,
}


def image_widget_class(rendering: str | None = None) -> type[Widget]:
    """The textual-image widget class for `rendering` (else `$BBROWSE_IMAGE_RENDERING`, else auto)."""
    name = (rendering or os.environ.get(RENDERING_ENV) or "auto").strip().lower()
    return _RENDERINGS.get(name, _RENDERINGS["auto"])


def rendering_name(cls: type[Widget]) -> str:
    """`halfcell`, `sixel`, ... for a widget class from `image_widget_class`."""
    return next((name for name, known in _RENDERINGS.items() if known is cls and name != "auto"), cls.__name__)


def decode_image(data: bytes) -> PILImage.Image:
    """Decode and fully load image bytes (so errors surface here, not while drawing)."""
    image = PILImage.open(io.BytesIO(data))
    image.load()
    return image


class ScreenshotView(Widget):
    """Shows one PIL image centred and scaled to fit; `image` is None until something is shown."""

    DEFAULT_CSS = """
    ScreenshotView { height: 1fr; width: 1fr; }
    ScreenshotView > Middle { height: 1fr; width: 1fr; }
    ScreenshotView Center { height: auto; width: 1fr; }
    ScreenshotView .inline-image { width: auto; height: auto; }
    """

    def __init__(self, *, rendering: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._image_class = image_widget_class(rendering)
        self.image: PILImage.Image | None = None

    @property
    def rendering(self) -> str:
        return rendering_name(self._image_class)

    def compose(self) -> ComposeResult:
        with Middle(), Center():
            yield self._image_class(None, classes="inline-image")

    def show(self, image: PILImage.Image | None) -> None:
        """Draw `image` (or clear with None); the widget keeps the image for redraws on resize."""
        self.image = image
        widget = self.query_one(".inline-image")
        widget.image = image  # type: ignore[attr-defined]
