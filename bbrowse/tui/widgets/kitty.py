"""A picture drawn with kitty's graphics protocol, one image id for the widget's life: a new frame replaces
the image's pixels under the same id, and the cells showing it (Unicode placeholders) never change.

textual-image's kitty widget sends each picture as a new image with a new id, deletes the old one, and
lays the widget out again; every repaint (a status line redrawn next to it) sends the picture again. Here
the placeholder cells are drawn once per size, so Textual repaints nothing for a new frame; the frame's
pixels go to the terminal (raw RGB, zlib, base64, in 4 KiB chunks, after Textual's own output) only when
they differ from the last sent, followed by the small virtual placement that points the cells at them.
"""

from __future__ import annotations

import base64
import random
import zlib
from collections.abc import Callable

from PIL import Image as PILImage
from PIL import ImageDraw
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from bbrowse.tui.widgets.halfcell import Geometry, cell_size, fit

#: The placeholder character of kitty's Unicode placements, and the diacritics numbering rows and columns.
PLACEHOLDER = "\U0010eeee"
# fmt: off
DIACRITICS = [chr(c) for c in (
    0x0305, 0x030D, 0x030E, 0x0310, 0x0312, 0x033D, 0x033E, 0x033F, 0x0346, 0x034A, 0x034B, 0x034C, 0x0350,
    0x0351, 0x0352, 0x0357, 0x035B, 0x0363, 0x0364, 0x0365, 0x0366, 0x0367, 0x0368, 0x0369, 0x036A, 0x036B,
    0x036C, 0x036D, 0x036E, 0x036F, 0x0483, 0x0484, 0x0485, 0x0486, 0x0487, 0x0592, 0x0593, 0x0594, 0x0595,
    0x0597, 0x0598, 0x0599, 0x059C, 0x059D, 0x059E, 0x059F, 0x05A0, 0x05A1, 0x05A8, 0x05A9, 0x05AB, 0x05AC,
    0x05AF, 0x05C4, 0x0610, 0x0611, 0x0612, 0x0613, 0x0614, 0x0615, 0x0616, 0x0617, 0x0657, 0x0658, 0x0659,
    0x065A, 0x065B, 0x065D, 0x065E, 0x06D6, 0x06D7, 0x06D8, 0x06D9, 0x06DA, 0x06DB, 0x06DC, 0x06DF, 0x06E0,
    0x06E1, 0x06E2, 0x06E4, 0x06E7, 0x06E8, 0x06EB, 0x06EC, 0x0730, 0x0732, 0x0733, 0x0735, 0x0736, 0x073A,
    0x073D, 0x073F, 0x0740, 0x0741, 0x0743, 0x0745, 0x0747, 0x0749, 0x074A, 0x07EB, 0x07EC, 0x07ED, 0x07EE,
    0x07EF, 0x07F0, 0x07F1, 0x07F3, 0x0816, 0x0817, 0x0818, 0x0819, 0x081B, 0x081C, 0x081D, 0x081E, 0x081F,
    0x0820, 0x0821, 0x0822, 0x0823, 0x0825, 0x0826, 0x0827, 0x0829, 0x082A, 0x082B, 0x082C, 0x082D, 0x0951,
    0x0953, 0x0954, 0x0F82, 0x0F83, 0x0F86, 0x0F87, 0x135D, 0x135E, 0x135F, 0x17DD, 0x193A, 0x1A17, 0x1A75,
    0x1A76, 0x1A77, 0x1A78, 0x1A79, 0x1A7A, 0x1A7B, 0x1A7C, 0x1B6B, 0x1B6D, 0x1B6E, 0x1B6F, 0x1B70, 0x1B71,
    0x1B72, 0x1B73, 0x1CD0, 0x1CD1, 0x1CD2, 0x1CDA, 0x1CDB, 0x1CE0, 0x1DC0, 0x1DC1, 0x1DC3, 0x1DC4, 0x1DC5,
    0x1DC6, 0x1DC7, 0x1DC8, 0x1DC9, 0x1DCB, 0x1DCC, 0x1DD1, 0x1DD2, 0x1DD3, 0x1DD4, 0x1DD5, 0x1DD6, 0x1DD7,
    0x1DD8, 0x1DD9, 0x1DDA, 0x1DDB, 0x1DDC, 0x1DDD, 0x1DDE, 0x1DDF, 0x1DE0, 0x1DE1, 0x1DE2, 0x1DE3, 0x1DE4,
    0x1DE5, 0x1DE6, 0x1DFE, 0x20D0, 0x20D1, 0x20D4, 0x20D5, 0x20D6, 0x20D7, 0x20DB, 0x20DC, 0x20E1, 0x20E7,
    0x20E9, 0x20F0, 0x2CEF, 0x2CF0, 0x2CF1, 0x2DE0, 0x2DE1, 0x2DE2, 0x2DE3, 0x2DE4, 0x2DE5, 0x2DE6, 0x2DE7,
    0x2DE8, 0x2DE9, 0x2DEA, 0x2DEB, 0x2DEC, 0x2DED, 0x2DEE, 0x2DEF, 0x2DF0, 0x2DF1, 0x2DF2, 0x2DF3, 0x2DF4,
    0x2DF5, 0x2DF6, 0x2DF7, 0x2DF8, 0x2DF9, 0x2DFA, 0x2DFB, 0x2DFC, 0x2DFD, 0x2DFE, 0x2DFF, 0xA66F, 0xA67C,
    0xA67D, 0xA6F0, 0xA6F1, 0xA8E0, 0xA8E1, 0xA8E2, 0xA8E3, 0xA8E4, 0xA8E5, 0xA8E6, 0xA8E7, 0xA8E8, 0xA8E9,
    0xA8EA, 0xA8EB, 0xA8EC, 0xA8ED, 0xA8EE, 0xA8EF, 0xA8F0, 0xA8F1, 0xAAB0, 0xAAB2, 0xAAB3, 0xAAB7, 0xAAB8,
    0xAABE, 0xAABF, 0xAAC1, 0xFE20, 0xFE21, 0xFE22, 0xFE23, 0xFE24, 0xFE25, 0xFE26, 0x10A0F, 0x10A38, 0x1D185,
    0x1D186, 0x1D187, 0x1D188, 0x1D189, 0x1D1AA, 0x1D1AB, 0x1D1AC, 0x1D1AD, 0x1D242, 0x1D243, 0x1D244,
)]
# fmt: on
#: Base64 characters per escape sequence (the protocol's limit).
CHUNK = 4096
MARK_COLOUR = (220, 0, 120)


def graphics_command(payload: str = "", **keys: int | str) -> str:
    """One kitty graphics escape sequence: `ESC _ G key=value,... ; payload ESC \\`."""
    control = ",".join(f"{key}={value}" for key, value in keys.items())
    return f"\x1b_G{control}{';' + payload if payload else ''}\x1b\\"


def transmit(image_id: int, rgb: bytes, width: int, height: int) -> str:
    """Escape sequences replacing image `image_id`'s pixels with `rgb` (width×height, 3 bytes a pixel), quietly."""
    data = base64.standard_b64encode(zlib.compress(rgb, 1)).decode("ascii")
    chunks = [data[i:i + CHUNK] for i in range(0, len(data), CHUNK)] or [""]
    out = [graphics_command(chunks[0], a="t", f=24, o="z", s=width, v=height, i=image_id, q=2,
                            m=1 if len(chunks) > 1 else 0)]
    for index, chunk in enumerate(chunks[1:], start=2):
        out.append(graphics_command(chunk, m=1 if index < len(chunks) else 0))
    return "".join(out)


class KittyCanvas(Widget):
    """Shows one PIL image with kitty graphics, centred and scaled to fit, under one image id."""

    DEFAULT_CSS = """
    KittyCanvas { width: 1fr; height: 1fr; }
    """

    def __init__(self, *, write: Callable[[str], None] | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        """`write`: where the escape sequences go (default: the app's driver, after its own output)."""
        super().__init__(id=id, classes=classes)
        #: The image id, 24 bits so it fits the placeholder cells' foreground colour.
        self.image_id = random.randint(1, 0xFFFFFF)
        self.image: PILImage.Image | None = None
        self.image_size: tuple[int, int] = (0, 0)
        self.cursor: tuple[int, int] | None = None
        self.geometry: Geometry | None = None
        #: Escape sequences sent and the bytes they took (tests and benchmarks look).
        self.transmissions = 0
        self.bytes_sent = 0
        self._write = write
        self._cell = cell_size()
        self._strips: list[Strip] = []
        self._sent: tuple[tuple[int, int], bytes] | None = None

    def show(self, image: PILImage.Image | None, cursor: tuple[int, int] | None = None,
             size: tuple[int, int] | None = None) -> None:
        """Draw `image` (None clears) standing for a picture of `size` (default: its own), the remote mouse
        ringed at `cursor` (pixels of `size`); sends pixels only when they changed."""
        self.image = image
        self.image_size = size or (image.size if image is not None else (0, 0))
        self.cursor = cursor
        self._draw()

    def on_resize(self) -> None:
        self._draw(everything=True)

    def on_unmount(self) -> None:
        if self._sent is not None:
            self._send(graphics_command(a="d", d="I", i=self.image_id, q=2))  # the image and its data go

    def _draw(self, everything: bool = False) -> None:
        size = self.size
        if self.image is None or size.width <= 0 or size.height <= 0:
            self.geometry, self._strips = None, []
            self.refresh()
            return
        columns, rows = fit(self.image_size, size, self._cell)
        columns, rows = min(columns, len(DIACRITICS)), min(rows, len(DIACRITICS))
        geometry = Geometry((size.width - columns) // 2, (size.height - rows) // 2, columns, rows, *self.image_size)
        if geometry != self.geometry or everything or len(self._strips) != size.height:
            self.geometry = geometry
            self._strips = self._placeholders(geometry, size.width, size.height)
            self._sent = None  # a new size: the pixels and the placement go again
            self.refresh()
        width, height = columns * self._cell[0], rows * self._cell[1]
        picture = self.image.convert("RGB")
        if picture.size != (width, height):
            picture = picture.resize((width, height), PILImage.Resampling.BILINEAR)
        if self.cursor is not None:
            picture = self._ringed(picture, geometry)
        rgb = picture.tobytes()
        if self._sent == ((width, height), rgb):
            return  # the same pixels are already on the terminal
        self._sent = ((width, height), rgb)
        self._send(transmit(self.image_id, rgb, width, height)
                   + graphics_command(a="p", U=1, i=self.image_id, c=columns, r=rows, q=2))

    def _ringed(self, picture: PILImage.Image, geometry: Geometry) -> PILImage.Image:
        assert self.cursor is not None
        if picture is self.image:
            picture = picture.copy()
        x = self.cursor[0] * picture.width // max(1, geometry.image_width)
        y = self.cursor[1] * picture.height // max(1, geometry.image_height)
        radius = max(4, picture.width // 120)
        ImageDraw.Draw(picture).ellipse((x - radius, y - radius, x + radius, y + radius), outline=MARK_COLOUR,
                                        width=max(2, radius // 3))
        return picture

    def _placeholders(self, geometry: Geometry, width: int, height: int) -> list[Strip]:
        """The cells showing the image: placeholders whose colour is the image id and whose diacritics are
        their row and column (drawn once per size: a new frame changes none of them)."""
        image_id = self.image_id
        style = Style(color=f"rgb({(image_id >> 16) & 255},{(image_id >> 8) & 255},{image_id & 255})")
        strips = [Strip.blank(width)] * height
        left, right = geometry.x, width - geometry.x - geometry.columns
        for row in range(geometry.rows):
            cells = "".join(PLACEHOLDER + DIACRITICS[row] + DIACRITICS[column] for column in range(geometry.columns))
            segments = [Segment(cells, style)]
            if left:
                segments.insert(0, Segment(" " * left))
            if right:
                segments.append(Segment(" " * right))
            strips[geometry.y + row] = Strip(segments, width)
        return strips

    def _send(self, sequence: str) -> None:
        self.transmissions += 1
        self.bytes_sent += len(sequence)
        if self._write is not None:
            self._write(sequence)
            return
        driver = getattr(self.app, "_driver", None)
        if driver is not None:
            driver.write(sequence)

    def render_line(self, y: int) -> Strip:
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width)
