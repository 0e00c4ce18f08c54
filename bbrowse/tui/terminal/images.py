"""A picture a program drew in the shell (kitty graphics), as the painter gets it from a core."""

from __future__ import annotations

from dataclasses import dataclass, field

from PIL import Image


@dataclass(frozen=True)
class Placement:
    """A visible image: `picture` covers `cols` x `rows` cells from (`col`, `row`) of the view (the
    origin may be above or left of the view when the image is partly scrolled away)."""

    key: tuple[int, ...]  # changes whenever the pixels or the geometry change
    picture: Image.Image = field(compare=False)  # compared through `key` (pixels are not compared)
    col: int
    row: int
    cols: int
    rows: int
