"""The half-cell canvas without a service: what each cell shows, and what a frame of a page changing everywhere
costs in Python calls (a count, the same under any load, where milliseconds are not).

The live view draws every frame with this canvas (1280×800 into 160×45); the frames/s it reaches are
measured by bench/bench_live_view.py.
"""

from __future__ import annotations

import asyncio
import colorsys
import sys

from PIL import Image as PILImage
from PIL import ImageDraw
from textual.app import App, ComposeResult

from bbrowse.tui.widgets.halfcell import CURSOR_CHAR, UPPER_HALF, HalfcellCanvas

SIZE = (160, 45)


class CanvasApp(App[None]):
    def compose(self) -> ComposeResult:
        yield HalfcellCanvas()


def moving_frame(step: int, size: tuple[int, int] = (144, 90)) -> PILImage.Image:
    """A frame as the screencast sends it for the pane (the page scaled to two pixels a cell down): a
    gradient that moves each step with boxes flying over it, so every row changes and colours are new."""
    image = PILImage.new("RGB", size)
    draw = ImageDraw.Draw(image)
    for x in range(size[0]):
        red, green, blue = colorsys.hsv_to_rgb(((x + step * 5) % size[0]) / size[0], 0.8, 0.9)
        draw.line((x, 0, x, size[1]), fill=(int(red * 255), int(green * 255), int(blue * 255)))
    for box in range(12):
        x, y = (box * 23 + step * 3) % size[0], (box * 13 + step) % size[1]
        draw.rectangle((x, y, x + 8, y + 5), fill=((box * 40) % 256, (box * 90 + step) % 256, 200))
    return image


def cells(canvas: HalfcellCanvas) -> list[list[tuple[str, tuple[int, int, int] | None, tuple[int, int, int] | None]]]:
    """Each drawn cell: its character and its colour and background as RGB."""
    rows = []
    for y in range(canvas.size.height):
        row = []
        for segment in canvas.render_line(y):
            style = segment.style
            colour = style.color.triplet if style and style.color else None
            background = style.bgcolor.triplet if style and style.bgcolor else None
            row.extend((char, colour and tuple(colour), background and tuple(background)) for char in segment.text)
        rows.append(row)
    return rows


async def test_each_cell_shows_its_top_pixel_over_its_bottom_pixel_and_the_mark() -> None:
    image = PILImage.new("RGB", (4, 4), (255, 255, 255))
    image.putpixel((0, 0), (200, 10, 10))  # the first cell: red over white
    image.putpixel((1, 3), (10, 10, 200))  # the second cell of the second row: white over blue
    async with CanvasApp().run_test(size=(4, 2)) as pilot:
        canvas = pilot.app.query_one(HalfcellCanvas)
        canvas.show(image)
        await pilot.pause()
        drawn = cells(canvas)
        assert drawn[0][0] == (UPPER_HALF, (200, 8, 8), (248, 248, 248))  # five bits a channel
        assert drawn[1][1] == (UPPER_HALF, (248, 248, 248), (8, 8, 200))
        assert drawn[0][1:] == [(UPPER_HALF, (248, 248, 248), (248, 248, 248))] * 3
        assert len(list(canvas.render_line(0))) == 2  # a run of equal cells is one segment
        canvas.show(image, cursor=(2, 2))
        await pilot.pause()
        assert cells(canvas)[1][2][0] == CURSOR_CHAR
        assert canvas.rows_changed == 1  # only the row the mark moved into


async def test_a_frame_of_a_page_changing_everywhere_costs_few_python_calls() -> None:
    """Textual's ANSI-to-truecolor filter copying every segment and a style built per cell made such a frame
    cost 23,500 Python calls (60 ms of CPU in the app); the canvas keeps one segment per colour pair between
    frames and skips that filter (5,100 calls, 19 ms)."""
    frames = [moving_frame(step) for step in range(8)]
    async with CanvasApp().run_test(size=SIZE) as pilot:
        canvas = pilot.app.query_one(HalfcellCanvas)

        async def draw(frame: PILImage.Image) -> None:
            drawn = asyncio.Event()
            canvas.show(frame, size=(1280, 800))
            pilot.app.call_after_refresh(drawn.set)
            await drawn.wait()

        for frame in frames[:4]:  # the colours of the page seen once (a live view's first frames)
            await draw(frame)
        calls = 0

        def count(frame: object, event: str, argument: object) -> None:
            nonlocal calls
            if event == "call":
                calls += 1

        sys.setprofile(count)
        try:
            for step, frame in enumerate(frames[4:]):
                await draw(frame)
                assert canvas.rows_changed == canvas.geometry.rows, step  # every row of the picture changed
        finally:
            sys.setprofile(None)
        per_frame = calls / len(frames[4:])
        assert per_frame < 10_000, per_frame
