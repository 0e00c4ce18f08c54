"""The Screenshot tab's live view through the whole app: frames per second, click and keystroke until drawn.

Run on purpose, not in the test suite:

    .venv/bin/python bench/bench_live_view.py [--seconds 20] [--count 30] [--headful]

It starts its own `bbrowse serve`, a session with a 1280×800 viewport, and the real app (Pilot) at
160×45 with the Screenshot tab drawn in half cells (bbrowse's canvas). The live view runs on Chromium's
screencast (pushed frames through the session's `cdp_ws_url`); the same measures are then taken with the
pane polling screenshots (its fallback where CDP is not reachable), as the baseline of the same run:

- frames per second sustained for --seconds, on a still page (with the app's CPU and the frames that
  came over the wire), on a page that changes everywhere every frame with new colours (a moving
  gradient), and on a text page scrolling continuously, with each stage's share: capture (the
  screenshot call, polling only), decode (PNG or JPEG to pixels), draw (scaling and building the rows),
  paint (from the frame posted until Textual has refreshed the screen with it);
- click in interact mode until drawn: a click on the picture over a button that toggles red/green,
  until a frame showing the new colour has been drawn in the pane (target ≤ 100 ms p50);
- a typed character until drawn: a key typed in interact mode into a text field with a large font,
  until a frame where the character shows has been drawn (target ≤ 100 ms p50);
- the cost of the other renderings for the same 1280×800 frame at the same size: textual-image's
  half cells, sixel (quantise + encode) and kitty graphics (PNG + base64), against bbrowse's canvas.

The pane is drawn by Textual's headless driver here: writing to a real terminal adds its output time
(see bench/README.md for a run under tmux).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402
from app_support import PaneScreen, make_app, wait_for  # noqa: E402
from browser_page import BUTTON_AT, FIELD, FIELD_AT, open_probe, write_page  # noqa: E402
from conftest import PageServer, start_service, stop_service  # noqa: E402
from PIL import Image  # noqa: E402
from textual import events  # noqa: E402

from bbrowse.tui.panes import screenshot as screenshot_pane  # noqa: E402
from bbrowse.tui.panes.screenshot import ScreenshotPane  # noqa: E402
from bbrowse.tui.screens.sessions import SessionsScreen  # noqa: E402
from bbrowse.tui.widgets.halfcell import HalfcellCanvas  # noqa: E402

SIZE = (160, 45)
VIEWPORT = {"width": 1280, "height": 800}
MOVING = """<!doctype html><body style="margin:0;overflow:hidden">
<canvas id="c" width="1280" height="800"></canvas><script>
const c = document.getElementById("c").getContext("2d"); let t = 0;
function frame() {
  t += 7;
  const g = c.createLinearGradient(t % 1280, 0, 1280 - t % 1280, 800);
  g.addColorStop(0, `hsl(${t % 360},80%,50%)`); g.addColorStop(1, `hsl(${(t + 180) % 360},80%,50%)`);
  c.fillStyle = g; c.fillRect(0, 0, 1280, 800);
  for (let i = 0; i < 40; i++) { c.fillStyle = `hsl(${(i * 9 + t) % 360},90%,60%)`;
    c.fillRect((i * 97 + t * 3) % 1280, (i * 53 + t) % 800, 60, 40); }
  requestAnimationFrame(frame);
}
frame();
</script>"""

SCROLLING = """<!doctype html><body style="margin:0 40px;font:22px/1.5 sans-serif;color:#222;background:#fff">
<script>
const words = "the quick brown fox jumps over the lazy dog while a browser draws its page".split(" ");
for (let i = 0; i < 400; i++) {
  const p = document.createElement(i % 9 ? "p" : "h2");
  p.textContent = Array.from({length: i % 9 ? 40 : 6}, (_, j) => words[(i * 7 + j) % words.length]).join(" ");
  if (i % 13 === 0) p.style.background = `hsl(${i * 37 % 360},60%,85%)`;
  document.body.appendChild(p);
}
function step() { scrollBy(0, 6); if (scrollY > 20000) scrollTo(0, 0); requestAnimationFrame(step); }
step();
</script>"""


def summary(samples: list[float]) -> str:
    if not samples:
        return "none (every frame was the same picture: not decoded, nothing to paint)"
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {statistics.median(samples):6.1f} ms  p95 {p95:6.1f} ms  (n={len(samples)})"


class StageTimes:
    """Wraps the pane's decode and the canvas's draw to time them (the capture time the pane keeps)."""

    def __init__(self) -> None:
        self.decode: list[float] = []
        self.draw: list[float] = []
        self.paint: list[float] = []
        self.rows: list[int] = []
        decode = screenshot_pane.decode_image
        draw = HalfcellCanvas._draw
        drawn = ScreenshotPane._draw

        def timed_decode(png: bytes):
            started = time.perf_counter()
            try:
                return decode(png)
            finally:
                self.decode.append((time.perf_counter() - started) * 1000)

        def timed_draw(canvas: HalfcellCanvas, everything: bool = False) -> None:
            started = time.perf_counter()
            draw(canvas, everything)
            self.draw.append((time.perf_counter() - started) * 1000)
            self.rows.append(canvas.rows_changed)

        async def timed_drawn(pane: ScreenshotPane, frame) -> None:
            started = time.perf_counter()
            await drawn(pane, frame)
            self.paint.append((time.perf_counter() - started) * 1000)

        screenshot_pane.decode_image = timed_decode
        HalfcellCanvas._draw = timed_draw
        ScreenshotPane._draw = timed_drawn

    def reset(self) -> None:
        self.decode.clear()
        self.draw.clear()
        self.paint.clear()
        self.rows.clear()


async def sustained(pilot, pane: ScreenshotPane, seconds: float, stages: StageTimes, target: float = 24) -> None:
    captures: list[float] = []
    stages.reset()
    start_frames, started = pane.frames, time.monotonic()
    cpu, wire = time.process_time(), pane.wire_frames
    last = pane.frames
    if not target:  # a still page: the app's own CPU, without this loop's looking
        await asyncio.sleep(seconds)
    while time.monotonic() - started < seconds:
        await pilot.pause(0.02)
        if pane.frames != last and pane.capture_seconds is not None and pane.source == "polling":
            captures.append(pane.capture_seconds * 1000)
            last = pane.frames
    elapsed = time.monotonic() - started
    fps = (pane.frames - start_frames) / elapsed
    print(f"    {fps:5.1f} frames/s over {seconds:.0f} s "
          f"(target ≥ {target:g}) · rows repainted per frame p50 {statistics.median(stages.rows or [0]):.0f}")
    print(f"      source  {pane.source}{f' ({pane.polling_reason})' if pane.source == 'polling' else ''} · "
          f"app CPU {(time.process_time() - cpu) / elapsed * 100:.1f} % of a core · "
          f"screencast frames on the wire {(pane.wire_frames - wire) / elapsed:.1f}/s")
    if captures:
        print(f"      capture {summary(captures)}")
    print(f"      decode  {summary(stages.decode)}")
    print(f"      draw    {summary(stages.draw)}")
    print(f"      paint   {summary(stages.paint)}   (posted until the screen was refreshed with it)")


def pixel(pane: ScreenshotPane, at: tuple[int, int]) -> tuple[int, int, int]:
    """The shown picture's colour at page pixel `at` (a screencast frame is the page scaled down)."""
    image = pane.image
    width, height = pane.image_size
    return image.convert("RGB").getpixel((at[0] * image.width // width, at[1] * image.height // height))


def green(colour: tuple[int, int, int]) -> bool:
    return colour[1] > 200 and colour[0] < 80


def dark_in_field(pane: ScreenshotPane) -> int:
    """Dark pixels in the left part of the text field (where a typed character shows), in page pixels."""
    image = pane.image
    sx, sy = image.width / pane.image_size[0], image.height / pane.image_size[1]
    box = image.convert("L").crop((int((FIELD[0] + 10) * sx), int((FIELD[1] + 10) * sy), int((FIELD[0] + 200) * sx),
                                   int((FIELD[1] + FIELD[3] - 10) * sy)))
    dark = sum(box.point(lambda value: 255 if value < 100 else 0).histogram()[255:])
    return int(dark / (sx * sy))


async def until_drawn(pilot, pane: ScreenshotPane, shows, started: float) -> float:
    """Wait for the first frame drawn after `started` whose picture `shows(pane)`; ms since `started`."""
    seen = pane.frames
    deadline = started + 15
    while time.perf_counter() < deadline:
        await asyncio.sleep(0.002)
        if pane.frames != seen:
            seen = pane.frames
            if shows(pane):
                return (time.perf_counter() - started) * 1000
    raise RuntimeError("the change never showed in the pane")


def terminal_click(app, widget, cell: tuple[int, int]) -> None:
    """A left click at `cell` of `widget` as the terminal driver delivers it (no Pilot: Pilot waits for the
    app to be idle around each event, which a live view never is)."""
    x, y = widget.region.x + cell[0], widget.region.y + cell[1]
    for kind in (events.MouseDown, events.MouseUp, events.Click):
        app.post_message(kind(None, x, y, 0, 0, 1, False, False, False, screen_x=x, screen_y=y))


def terminal_key(app, key: str, character: str | None) -> None:
    app.post_message(events.Key(key, character))


async def click_latency(pilot, pane: ScreenshotPane, count: int) -> None:
    cell = pane.view.geometry.cell_of(*BUTTON_AT)
    samples = []
    for _ in range(count):
        await wait_for(pilot, lambda: pane.frames > 0)
        before = green(pixel(pane, BUTTON_AT))
        started = time.perf_counter()
        terminal_click(pilot.app, pane.view, cell)
        samples.append(await until_drawn(pilot, pane, lambda p, was=before: green(pixel(p, BUTTON_AT)) != was,
                                         started))
    print(f"    click → drawn      {summary(samples)}   (target ≤ 100 ms p50)")


async def typing_latency(pilot, pane: ScreenshotPane, count: int) -> None:
    terminal_click(pilot.app, pane.view, pane.view.geometry.cell_of(*FIELD_AT))
    samples = []
    for _ in range(count):
        await until_drawn(pilot, pane, lambda p: dark_in_field(p) == 0, time.perf_counter())  # empty field drawn
        started = time.perf_counter()
        terminal_key(pilot.app, "W", "W")
        samples.append(await until_drawn(pilot, pane, lambda p: dark_in_field(p) > 50, started))
        terminal_key(pilot.app, "backspace", "\x7f")
    print(f"    keystroke → drawn  {summary(samples)}   (target ≤ 100 ms p50)")


def rendering_costs(png: bytes, repeat: int = 5) -> None:
    """One 1280×800 frame at the pane's size, drawn by each rendering (ms per frame, bytes to the terminal)."""
    from rich.console import Console
    from textual.geometry import Size
    from textual_image._pixeldata import PixelData
    from textual_image._terminal import CellSize, get_cell_size
    from textual_image.renderable.halfcell import Image as HalfcellImage
    from textual_image.renderable.sixel import Image as SixelImage

    from bbrowse.tui.widgets.halfcell import cell_keys, fit

    get_cell_size._result = CellSize(10, 20)
    image = Image.open(io.BytesIO(png))
    image.load()
    columns, rows = fit(image.size, Size(SIZE[0], SIZE[1] - 4), (10, 20))
    console = Console(width=columns, height=rows, file=io.StringIO(), color_system="truecolor", force_terminal=True)

    def timed(render) -> tuple[float, int]:
        times, size = [], 0
        for _ in range(repeat):
            started = time.perf_counter()
            size = render()
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times), size

    def rich_output(renderable) -> int:
        buffer = io.StringIO()
        Console(width=columns, height=rows, file=buffer, color_system="truecolor", force_terminal=True).print(
            renderable)
        return len(buffer.getvalue().encode())

    canvas = HalfcellCanvas()

    def ours() -> int:
        cells = cell_keys(image, columns, rows)
        return sum(len(canvas._row_segments(cells[row * columns:(row + 1) * columns], -1)) for row in range(rows))

    results = {
        "bbrowse canvas (half cells)": timed(ours),
        "textual-image half cells": timed(lambda: rich_output(HalfcellImage(image, columns, rows))),
        "sixel (textual-image)": timed(lambda: rich_output(SixelImage(image, columns, rows))),
        "kitty graphics (PNG+base64)": timed(
            lambda: len(PixelData(image).scaled(columns * 10, rows * 20).to_base64())),
    }
    del console
    print(f"  rendering one 1280×800 frame into {columns}×{rows} cells (10×20 px cells):")
    for name, (ms, size) in results.items():
        unit = "segments" if name.startswith("bbrowse") else "bytes to the terminal"
        print(f"    {name:30} {ms:7.1f} ms   {size:>9,} {unit}")


async def outside_the_app(service, sid: str, probe, moving: str, wanted: tuple[int, int] | None,
                          seconds: float) -> None:
    """The screencast without the app (the baseline of the app's frames/s): a client taking and decoding every
    frame of the moving page at the size the pane asked for, drawing none."""
    from bbrowse.client import BrowserClient
    from bbrowse.client.screencast import Screencast
    from bbrowse.tui.widgets.image_view import decode_image

    await probe.send("Page.navigate", {"url": moving})
    print(f"  the screencast outside the app (taking and decoding every frame, drawing none), "
          f"{wanted[0] if wanted else '-'}×{wanted[1] if wanted else '-'} px, page changing everywhere:")
    client = BrowserClient(service.url, service.token)
    for image_format in ("png", "jpeg"):
        async with Screencast(client, sid, max_width=wanted[0] if wanted else None,
                              max_height=wanted[1] if wanted else None, quality=screenshot_pane.SCREENCAST_QUALITY,
                              image_format=image_format) as cast:
            await cast.next_frame()
            taken, started = 0, time.monotonic()
            while time.monotonic() - started < seconds / 2:
                frame = await cast.next_frame()
                if frame is None:
                    break
                decode_image(frame.jpeg)
                taken += 1
            print(f"    {image_format:4} {taken / (time.monotonic() - started):5.1f} frames/s")


async def open_pane(pilot, app, sid: str, *, screencast: bool) -> ScreenshotPane:
    pane = ScreenshotPane(sid, rendering="halfcell", auto_capture=False, screencast=screencast)
    await app.push_screen(PaneScreen(pane, "Screenshot", "screenshot"))
    pane.focus_default()
    await pilot.press("i")  # interact mode (starts the live view)
    await wait_for(pilot, lambda: pane.frames >= 1, 60)
    return pane


async def run(service, http: httpx.AsyncClient, headless: bool, seconds: float, count: int, pages: PageServer,
              tmp: Path) -> None:
    created = await http.post("/browsers", json={"headless": headless, "viewport": VIEWPORT, "timeout_seconds": 900})
    created.raise_for_status()
    browser = created.json()
    sid = browser["session_id"]
    ws, probe = await open_probe(browser["cdp_ws_url"])
    stages = StageTimes()
    moving, scrolling = pages.url("moving.html", MOVING), pages.url("scrolling.html", SCROLLING)
    try:
        print(f"{'headless' if headless else 'headful'} session, 1280×800, app at {SIZE[0]}×{SIZE[1]}:")
        app = make_app(service)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen), 30)
            await probe.open(write_page(pages))
            cpu, started = time.process_time(), time.monotonic()
            await asyncio.sleep(seconds / 2)
            print(f"  the app without a live view (the still page's baseline): "
                  f"{(time.process_time() - cpu) / (time.monotonic() - started) * 100:.1f} % of a core")
            for screencast in (True, False):
                await probe.open(write_page(pages))
                pane = await open_pane(pilot, app, sid, screencast=screencast)
                wanted = pane.view.frame_pixels()
                name = "screencast" if screencast else "polling screenshots (the baseline)"
                print(f"  live view on {name}:")
                await pilot.pause(1)
                print("  still page:")
                await sustained(pilot, pane, seconds / 2, stages, target=0)
                print("  latency in interact mode:")
                await click_latency(pilot, pane, count)
                await typing_latency(pilot, pane, count)
                await probe.send("Page.navigate", {"url": moving})
                await wait_for(pilot, lambda p=pane: p.image is not None and pixel(p, (640, 400)) != (255,) * 3, 30)
                print("  page changing everywhere every frame (a moving gradient: new colours every frame):")
                await sustained(pilot, pane, seconds, stages)
                await probe.send("Page.navigate", {"url": scrolling})
                await wait_for(pilot, lambda p=pane, shown=pane.frames: p.frames >= shown + 3, 30)
                print("  text page scrolling continuously (every row changes, a page's usual colours):")
                await sustained(pilot, pane, seconds, stages)
                await pilot.press("escape", "a")  # leave interact mode, stop the live view
                await app.pop_screen()
            await probe.open(write_page(pages))
            png = (await http.post(f"/browsers/{sid}/computer/screenshot", json={})).content
        await outside_the_app(service, sid, probe, moving, wanted, seconds)
        rendering_costs(png)
    finally:
        await ws.close()
        await http.delete(f"/browsers/{sid}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--headful", action="store_true", help="Also a headful session (xdotool on its Xvfb).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bbrowse-bench-live-") as tmp:
        service = start_service(Path(tmp) / "state")
        pages = PageServer(Path(tmp))
        try:
            async with httpx.AsyncClient(base_url=service.url, headers=service.headers, timeout=60) as http:
                for headless in (True, False) if args.headful else (True,):
                    await run(service, http, headless, args.seconds, args.count, pages, Path(tmp))
        finally:
            pages.close()
            stop_service(service)


if __name__ == "__main__":
    asyncio.run(main())
