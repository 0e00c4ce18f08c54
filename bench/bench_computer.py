"""Computer controls through the service: how long each call takes, and a click until a screenshot shows it.

Run on purpose, not in the test suite:

    .venv/bin/python bench/bench_computer.py [--count 50]

It starts its own `bbrowse serve` and, for a headless session (CDP input) and a headful one (xdotool
on its Xvfb), opens a page whose button turns from red to green and back on each click. With
bbrowse's client, --count times each, it measures p50/p95 of:

- `click` (the call's round trip), `type_text` of one character, `press_key`, `move_mouse` (not smooth),
  `mouse_position`;
- click → screenshot: a click on the button, then screenshots until one shows the new colour (the
  service-side part of the live view's "click until the changed pixels are drawn" target, 400 ms p50);
- the screenshot alone, as the baseline of that loop.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from conftest import start_service, stop_service
from PIL import Image

from bbrowse.client import BrowserClient

PAGE = """<!doctype html><body style="margin:0">
<button id="b" style="position:absolute;left:0;top:0;width:300px;height:200px;border:0;background:rgb(255,0,0)"
 onclick="this.style.background = this.style.background === 'rgb(0, 255, 0)' ? 'rgb(255, 0, 0)' : 'rgb(0, 255, 0)'">
</button><input id="t" style="position:absolute;left:0;top:300px">"""
AT = (150, 100)


def green(png: bytes) -> bool:
    r, g, _b = Image.open(io.BytesIO(png)).convert("RGB").getpixel(AT)
    return g > 200 and r < 60


async def timed(count: int, call: Callable[[], Awaitable[object]]) -> list[float]:
    await call()
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def summary(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"  {name:28} p50 {statistics.median(samples):7.1f} ms   p95 {p95:7.1f} ms"


async def bench(client: BrowserClient, headless: bool, page_url: str, count: int) -> None:
    session = await client.sessions.create(headless=headless, start_url=page_url, timeout_seconds=600)
    sid = session.session_id
    try:
        computer = client.computer
        print(f"{'headless (CDP input)' if headless else 'headful (xdotool on Xvfb)'}:")
        print(summary("click", await timed(count, lambda: computer.click(sid, 400, 400))))
        await computer.click(sid, 10, 310)
        print(summary("type_text (1 char)", await timed(count, lambda: computer.type_text(sid, "a"))))
        print(summary("press_key (BackSpace)", await timed(count, lambda: computer.press_key(sid, "BackSpace"))))
        print(summary("move_mouse (not smooth)", await timed(count, lambda: computer.move_mouse(
            sid, 500, 500, smooth=False))))
        print(summary("mouse_position", await timed(count, lambda: computer.mouse_position(sid))))
        print(summary("screenshot", await timed(count, lambda: computer.screenshot(sid))))

        samples = []
        for _ in range(count):
            before = green(await computer.screenshot(sid))
            started = time.perf_counter()
            await computer.click(sid, *AT)
            while green(await computer.screenshot(sid)) == before:
                if time.perf_counter() - started > 10:
                    raise RuntimeError("the click never showed in a screenshot")
            samples.append((time.perf_counter() - started) * 1000)
        print(summary("click -> screenshot shows it", samples))
    finally:
        await client.sessions.delete(sid)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bbrowse-bench-computer-") as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(PAGE)
        handle = start_service(Path(tmp) / "state")
        try:
            client = BrowserClient(handle.url, handle.token)
            for headless in (True, False):
                await bench(client, headless, page.as_uri(), args.count)
        finally:
            stop_service(handle)


if __name__ == "__main__":
    asyncio.run(main())
