"""Pictures inside the shell: images a program draws with the kitty graphics protocol.

libghostty-vt stores the images and their placements and answers the program's queries itself, so
`kitten icat` and the like see a terminal that supports graphics. This module reads back what is
visible in the view (`KittyImages`); the painter draws it with half blocks. PNG payloads are decoded
with Pillow through libghostty's process-wide decoder hook, installed once. Only the direct medium
(data inside the escape sequence) is enabled: a program on the remote side must not be able to make
the app read local files.
"""

from __future__ import annotations

from PIL import Image
from pyghostty import ffi, lib

from .images import Placement

_MODES = {
    lib.GHOSTTY_KITTY_IMAGE_FORMAT_RGB: "RGB",
    lib.GHOSTTY_KITTY_IMAGE_FORMAT_RGBA: "RGBA",
    lib.GHOSTTY_KITTY_IMAGE_FORMAT_GRAY_ALPHA: "LA",
    lib.GHOSTTY_KITTY_IMAGE_FORMAT_GRAY: "L",
}
_MAX_DECODED_PIXELS = 64 * 1024 * 1024


def _decode_png(_userdata, allocator, data, length, out) -> bool:
    import io

    try:
        with Image.open(io.BytesIO(ffi.buffer(data, length))) as image:
            if image.width * image.height > _MAX_DECODED_PIXELS:
                return False
            pixels = image.convert("RGBA").tobytes()
            width, height = image.size
    except Exception:
        return False
    target = lib.ghostty_alloc(allocator, len(pixels))
    if target == ffi.NULL:
        return False
    ffi.memmove(target, pixels, len(pixels))
    out.width, out.height, out.data, out.data_len = width, height, target, len(pixels)
    return True


_png_decoder = ffi.callback("GhosttySysDecodePngFn", _decode_png)
lib.ghostty_sys_set(lib.GHOSTTY_SYS_OPT_DECODE_PNG, _png_decoder)


class KittyImages:
    """Reads the placements of one terminal; pictures are cached by image generation.

    For each placement: the image's pixels (cropped to the placement's source rectangle) and the grid
    rectangle it covers. libghostty takes `ESC _G ... ESC \\` (transmit, place, delete, query; raw RGB/RGBA,
    zlib and PNG payloads, sent directly or in chunks)."""

    def __init__(self, terminal) -> None:
        iterator = ffi.new("GhosttyKittyGraphicsPlacementIterator*")
        if lib.ghostty_kitty_graphics_placement_iterator_new(ffi.NULL, iterator) != lib.GHOSTTY_SUCCESS:
            raise MemoryError("libghostty: placement_iterator_new")
        self._iterator_ptr = iterator
        self._iterator = ffi.gc(iterator[0], lib.ghostty_kitty_graphics_placement_iterator_free)
        self._graphics = ffi.new("GhosttyKittyGraphics*")
        self._generation = ffi.new("uint64_t*")
        self._info = ffi.new("GhosttyKittyGraphicsPlacementRenderInfo*")
        self._info.size = ffi.sizeof("GhosttyKittyGraphicsPlacementRenderInfo")
        self._u32 = ffi.new("uint32_t*")
        self._u64 = ffi.new("uint64_t*")
        self._size = ffi.new("size_t*")
        self._pointer = ffi.new("uint8_t**")
        self._pictures: dict[tuple[int, ...], Image.Image] = {}

    def generation(self, terminal) -> int:
        """Changes whenever an image or placement is added or deleted (0: none ever)."""
        if lib.ghostty_terminal_get(terminal, lib.GHOSTTY_TERMINAL_DATA_KITTY_GRAPHICS, self._graphics):
            return 0
        if lib.ghostty_kitty_graphics_get(self._graphics[0], lib.GHOSTTY_KITTY_GRAPHICS_DATA_GENERATION,
                                          self._generation):
            return 0
        return self._generation[0]

    def visible(self, terminal) -> list[Placement]:
        """The placements at least partly inside the view, in the order they are stacked."""
        if not self.generation(terminal):
            return []
        graphics = self._graphics[0]
        if lib.ghostty_kitty_graphics_get(graphics, lib.GHOSTTY_KITTY_GRAPHICS_DATA_PLACEMENT_ITERATOR,
                                          self._iterator_ptr):
            return []
        found: list[tuple[int, Placement]] = []
        keep: dict[tuple[int, ...], Image.Image] = {}
        info = self._info
        z = ffi.new("int32_t*")
        while lib.ghostty_kitty_graphics_placement_next(self._iterator):
            lib.ghostty_kitty_graphics_placement_get(self._iterator, lib.GHOSTTY_KITTY_GRAPHICS_PLACEMENT_DATA_IMAGE_ID,
                                                     self._u32)
            image = lib.ghostty_kitty_graphics_image(graphics, self._u32[0])
            if image == ffi.NULL:
                continue
            if lib.ghostty_kitty_graphics_placement_render_info(self._iterator, image, terminal, info):
                continue
            if not info.viewport_visible or not info.grid_cols or not info.grid_rows or not info.source_width:
                continue
            lib.ghostty_kitty_graphics_image_get(image, lib.GHOSTTY_KITTY_IMAGE_DATA_GENERATION, self._u64)
            source = (info.source_x, info.source_y, info.source_width, info.source_height)
            picture_key = (self._u64[0], *source)
            picture = self._pictures.get(picture_key) or self._picture(image, source)
            if picture is None:
                continue
            keep[picture_key] = picture
            lib.ghostty_kitty_graphics_placement_get(self._iterator, lib.GHOSTTY_KITTY_GRAPHICS_PLACEMENT_DATA_Z, z)
            key = (*picture_key, info.viewport_col, info.viewport_row, info.grid_cols, info.grid_rows)
            found.append((z[0], Placement(key, picture, info.viewport_col, info.viewport_row, info.grid_cols,
                                          info.grid_rows)))
        self._pictures = keep
        found.sort(key=lambda item: item[0])
        return [placement for _, placement in found]

    def _picture(self, image, source: tuple[int, int, int, int]) -> Image.Image | None:
        """The image's pixels cropped to the source rectangle, as an RGBA Pillow image."""
        get = lib.ghostty_kitty_graphics_image_get
        values = {}
        for name, data in (
            ("width", lib.GHOSTTY_KITTY_IMAGE_DATA_WIDTH),
            ("height", lib.GHOSTTY_KITTY_IMAGE_DATA_HEIGHT),
            ("format", lib.GHOSTTY_KITTY_IMAGE_DATA_FORMAT),
        ):
            if get(image, data, self._u32):
                return None
            values[name] = self._u32[0]
        if get(image, lib.GHOSTTY_KITTY_IMAGE_DATA_DATA_PTR, self._pointer):
            return None  # the payload is still arriving
        if get(image, lib.GHOSTTY_KITTY_IMAGE_DATA_DATA_LEN, self._size):
            return None
        mode = _MODES.get(values["format"])
        if mode is None:
            return None
        pixels = ffi.buffer(self._pointer[0], self._size[0])[:]
        try:
            picture = Image.frombytes(mode, (values["width"], values["height"]), pixels)
        except ValueError:
            return None
        x, y, width, height = source
        if (x, y, width, height) != (0, 0, picture.width, picture.height):
            picture = picture.crop((x, y, x + width, y + height))
        return picture.convert("RGBA")
