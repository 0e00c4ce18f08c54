"""The file viewer over a slow link to `--kernel-compat`: what the first screen of a huge file costs on the
wire, and replies that come late (after another file was opened, after the viewer is gone).

The viewer is hosted alone (a small app giving it a client through a `BadLink`), on one session for the
module. How fast the first screen arrives is measured in bench/bench_file_viewer.py; here, the bytes.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest
from app_support import wait_for
from conftest import ServiceHandle, session_area
from PIL import Image as PILImage
from textual.app import App, ComposeResult

from bbrowse.client import BrowserClient
from bbrowse.config import ENV_IMAGE_RENDERING
from bbrowse.tui.widgets.file_viewer import FIRST_READ, FileViewer
from bbrowse.tui.widgets.image_view import ImageView

pytest_plugins = ["net_support"]

LINE = b"2024-05-01T12:00:00Z INFO request served path=/index.html status=200 bytes=5120\n"
MIB = 1024 * 1024


class ViewerHost(App[None]):
    """A `FileViewer` alone, with what it asks of its app: a client (through the link) and error reports."""

    def __init__(self, client: BrowserClient, session_id: str) -> None:
        super().__init__()
        self.client = client
        self.session_id = session_id
        self.errors: list[BaseException] = []

    def compose(self) -> ComposeResult:
        yield FileViewer(self.session_id)

    def connected_client(self) -> BrowserClient:
        return self.client

    def report_error(self, error: BaseException, title: str = "Request failed") -> None:
        self.errors.append(error)


@pytest.fixture(scope="module")
async def compat_sid(browserless_compat_service: ServiceHandle) -> AsyncIterator[str]:
    client = BrowserClient(browserless_compat_service.url, browserless_compat_service.token)
    sid = (await client.sessions.create(timeout_seconds=600)).session_id
    yield sid
    await client.sessions.delete(sid)


def big_text_file(service: ServiceHandle, sid: str, name: str, size: int) -> str:
    """A file of `size` bytes in the session starting with 1 MiB of log lines (the rest a hole: cheap to make)."""
    path = session_area(service, sid, name) / "big.log"
    with open(path, "wb") as out:
        out.write(LINE * (MIB // len(LINE)))
        out.truncate(size)
    return str(path)


async def test_the_first_screen_of_a_200_mb_file_costs_at_most_256_kib_at_10_mbit(
    browserless_compat_service: ServiceHandle, compat_sid: str, bad_link, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Then an image (which the first read finds, and reads whole on a normal connection) is drawn."""
    monkeypatch.setenv(ENV_IMAGE_RENDERING, "halfcell")
    size = 200 * MIB
    path = big_text_file(browserless_compat_service, compat_sid, "viewer-link", size)
    link = bad_link(browserless_compat_service, delay=0.05, rate=10e6 / 8)  # 100 ms round trip, 10 Mbit/s
    app = ViewerHost(BrowserClient(link.url, browserless_compat_service.token), compat_sid)
    async with app.run_test(size=(120, 40)) as pilot:
        viewer = app.query_one(FileViewer)
        viewer.open_remote(path, size)
        await wait_for(pilot, lambda: viewer.is_settled and viewer.lines.first_paint_at is not None,
                       what="the first screen")
        assert viewer.lines.row_text(0) == LINE.decode().rstrip("\n")
        assert viewer.loaded_bytes == FIRST_READ and not viewer.complete
        # the read's connection is closed and nothing more comes down the link
        await wait_for(pilot, lambda: link.open_connections == 0, what="the read's connection closed")
        assert link.bytes_down <= 256 * 1024, f"{link.bytes_down:,} bytes down for the first screen"

        picture = session_area(browserless_compat_service, compat_sid, "viewer-link-image") / "noise.png"
        PILImage.frombytes("RGB", (256, 256), random.Random(7).randbytes(256 * 256 * 3)).save(picture, format="PNG")
        viewer.open_remote(str(picture), picture.stat().st_size)
        view = viewer.query_one(ImageView)
        await wait_for(pilot, lambda: view.image is not None, what="the image drawn")
        assert view.image.size == (256, 256) and viewer.loaded_bytes == picture.stat().st_size
        assert app.errors == []


async def test_replies_after_another_open_or_after_the_viewer_is_gone_draw_nothing(
    browserless_compat_service: ServiceHandle, compat_sid: str, bad_link,
) -> None:
    path = big_text_file(browserless_compat_service, compat_sid, "viewer-late", 200 * MIB)
    small = session_area(browserless_compat_service, compat_sid, "viewer-late-small") / "small.txt"
    small.write_bytes(b"the small file\n")
    link = bad_link(browserless_compat_service, rate=1e6 / 8)  # 1 Mbit/s: the first read streams for half a second
    app = ViewerHost(BrowserClient(link.url, browserless_compat_service.token), compat_sid)
    async with app.run_test(size=(120, 40)) as pilot:
        viewer = app.query_one(FileViewer)
        viewer.open_remote(path)
        await wait_for(pilot, lambda: viewer.lines.first_paint_at is not None, what="the big file's first rows")
        # another file opened while the big one's blocks are arriving: only its own bytes are shown
        viewer.open_remote(str(small))
        await wait_for(pilot, lambda: viewer.is_settled and viewer.path == str(small), what="the small file")
        assert [viewer.lines.row_text(row) for row in range(viewer.lines.content_rows)] == ["the small file"]
        assert viewer.complete and viewer.loaded_bytes == len(b"the small file\n")

        # the viewer removed while a read streams into it (a further step, blocks every 3 ms at 10 Mbit/s):
        # the rest of the reply draws nothing, raises nothing
        link.set(rate=10e6 / 8)
        viewer.open_remote(path)
        await wait_for(pilot, lambda: viewer.path == path and viewer.is_settled, what="the big file's first read")
        first = viewer.loaded_bytes
        viewer.load_more()
        for _ in range(2000):  # removed as soon as the step's first bytes are shown: most of it is still to come
            if viewer.loaded_bytes > first:
                break
            await asyncio.sleep(0.002)
        lines = viewer.lines
        await viewer.remove()
        shown = len(lines.data)
        await wait_for(pilot, lambda: link.open_connections == 0, what="the read closed")
        await pilot.pause(0.2)
        assert len(lines.data) == shown
        assert app.errors == []
    assert app.return_code in (None, 0)
