"""Actions on many sessions at once (the sessions table's and the wall's selection), run concurrently.

Each returns what happened to each session, so the screen says it in one notice: how many worked, and
the first failures by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from bbrowse.client import BrowserClient, ClientError
from bbrowse.tui.saving import download_dir
from bbrowse.wire import Browser

T = TypeVar("T")


def label(browser: Browser) -> str:
    return browser.name or browser.session_id


@dataclass
class Outcome:
    """Sessions the action worked on, and (label, reason) of those it failed on."""

    done: list[Browser]
    failed: list[tuple[str, str]]

    def failures(self, limit: int = 3) -> str:
        shown = "; ".join(f"{name}: {reason}" for name, reason in self.failed[:limit])
        return shown + (" …" if len(self.failed) > limit else "")


async def on_each(browsers: Sequence[Browser], action: Callable[[Browser], Awaitable[object]]) -> Outcome:
    """`action` on every session at once; ClientErrors are collected, not raised."""

    async def one(browser: Browser) -> str | None:
        try:
            await action(browser)
        except ClientError as error:
            return str(error) or type(error).__name__
        return None

    results = await asyncio.gather(*(one(b) for b in browsers))
    return Outcome([b for b, r in zip(browsers, results, strict=True) if r is None],
                   [(label(b), r) for b, r in zip(browsers, results, strict=True) if r is not None])


async def delete_all(client: BrowserClient, browsers: Sequence[Browser]) -> Outcome:
    return await on_each(browsers, lambda b: client.sessions.delete(b.session_id))


def screenshots_folder(now: datetime | None = None) -> Path:
    """A new folder in the download directory for one screenshot of each session."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    base = download_dir() / f"bbrowse-screenshots-{stamp}"
    folder, counter = base, 1
    while folder.exists():
        folder, counter = base.with_name(f"{base.name} ({counter})"), counter + 1
    return folder


async def screenshot_all(client: BrowserClient, browsers: Sequence[Browser], folder: Path) -> Outcome:
    """`<folder>/<name or id>.png` for each session (the folder is made first)."""
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    names = [_file_name(b) for b in browsers]
    taken = {name for name in names if names.count(name) > 1}  # the same name twice: the id tells them apart

    async def one(browser: Browser) -> None:
        png = await client.computer.screenshot(browser.session_id)
        name = _file_name(browser)
        name = f"{name}-{browser.session_id}" if name in taken else name
        await asyncio.to_thread((folder / f"{name}.png").write_bytes, png)

    return await on_each(browsers, one)


def _file_name(browser: Browser) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label(browser)).strip(".") or browser.session_id


async def recording(client: BrowserClient, browser: Browser) -> str | None:
    """The id of the replay recording on the session, None when none is."""
    return next((r.replay_id for r in await client.replays.list(browser.session_id) if r.finished_at is None), None)


async def toggle_recording_all(client: BrowserClient, browsers: Sequence[Browser]) -> tuple[bool, Outcome]:
    """Start recording on every session not recording, when any is not; else stop them all.
    (True, outcome) when it started."""
    running = await asyncio.gather(*(_recording_or_error(client, b) for b in browsers))
    idle = [b for b, replay in zip(browsers, running, strict=True) if replay is None]
    if idle:
        return True, await on_each(idle, lambda b: client.replays.start(b.session_id))
    replays = dict(zip((b.session_id for b in browsers), running, strict=True))

    async def stop(browser: Browser) -> None:
        replay = replays[browser.session_id]
        if replay:
            await client.replays.stop(browser.session_id, replay)

    return False, await on_each(browsers, stop)


async def _recording_or_error(client: BrowserClient, browser: Browser) -> str | None:
    try:
        return await recording(client, browser)
    except ClientError:
        return ""  # unknown: counted as recording, so never started twice


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"
