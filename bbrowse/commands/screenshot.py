"""`bbrowse screenshot`: save a PNG of the session's screen, and show it when the terminal can.

Without `-o` the file is `screenshot-<id>-<time>.png` in the current directory and, when stdout is a
terminal that answers the kitty graphics or sixel queries (textual-image asks it), the image is also
drawn inline. The saved path is always printed, so scripts can pick it up.
"""

from __future__ import annotations

import re
import sys
from datetime import datetime
from pathlib import Path

import click

from bbrowse.client import BrowserClient
from bbrowse.commands.output import write_all
from bbrowse.commands.runner import run


class RegionType(click.ParamType):
    """`X,Y,W,H` in pixels."""

    name = "X,Y,W,H"

    def convert(self, value, param, ctx) -> tuple[int, int, int, int]:
        if isinstance(value, tuple):
            return value
        parts = [p.strip() for p in str(value).split(",")]
        try:
            x, y, w, h = (int(p) for p in parts)
        except ValueError:
            self.fail(f"{value!r} is not X,Y,WIDTH,HEIGHT (four integers)", param, ctx)
        if x < 0 or y < 0 or w < 1 or h < 1:
            self.fail(f"{value!r}: X and Y must be >= 0, WIDTH and HEIGHT >= 1", param, ctx)
        return x, y, w, h


def default_file_name(session: str, now: datetime | None = None) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", session)
    return f"screenshot-{safe}-{(now or datetime.now()).strftime('%Y%m%d-%H%M%S')}.png"


def save(path: Path, png: bytes) -> Path:
    """Write the file (blocking is fine: the command has nothing else to do meanwhile)."""
    path.write_bytes(png)
    return path


def draw_inline(png: Path) -> bool:
    """Draw the image on the terminal if it speaks kitty graphics or sixel; False otherwise."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    try:
        from rich.console import Console
        from textual_image import renderable

        if renderable.Image not in (renderable.SixelImage, renderable.TGPImage):
            return False
        Console().print(renderable.Image(str(png)))
    except Exception:  # a terminal that answers oddly must not fail a screenshot that was saved
        return False
    return True


@click.command("screenshot")
@click.argument("session", metavar="ID")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="Where to save the PNG ('-' for stdout). Default: screenshot-<id>-<time>.png.")
@click.option("-r", "--region", type=RegionType(), default=None,
              help="Only this rectangle of the screen, in pixels: X,Y,WIDTH,HEIGHT.")
def screenshot_command(session: str, output: str | None, region: tuple[int, int, int, int] | None) -> None:
    """Capture the session's screen as a PNG.

    \b
    Examples:
      bbrowse screenshot ID                          # screenshot-ID-20260101-120000.png (+ inline)
      bbrowse screenshot ID -o page.png
      bbrowse screenshot ID --region 0,0,640,360 -o top-left.png
      bbrowse screenshot ID -o - | display           # PNG bytes on stdout
    """

    async def work(client: BrowserClient) -> None:
        png = await client.computer.screenshot(session, region)
        if output == "-":
            write_all(sys.stdout.fileno(), png)
            return
        path = save(Path(output or default_file_name(session)), png)
        if output is None:
            draw_inline(path)
        click.echo(str(path))

    run(work)
