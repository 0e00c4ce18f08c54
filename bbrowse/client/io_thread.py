"""One event loop on a thread of its own, for connections that must go on while the caller's loop is busy.

The wall's screencasts run there: their handshakes (a connect and three CDP round trips each) and their
frames go on while the app's loop lays out and draws 16 tiles, instead of waiting for it at every step.
Started at first use and kept for the life of the process (a daemon thread).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def io_loop() -> asyncio.AbstractEventLoop:
    """The I/O thread's running loop (the thread starts at the first call)."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="bbrowse-io", daemon=True).start()
            _loop = loop
        return _loop


async def on_io_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on the I/O loop and wait here for its result; cancelling the wait cancels it there."""
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, io_loop()))


async def finish_on_io_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """As `on_io_loop`, but the coroutine runs to its end even when the wait here is cancelled (closing)."""
    return await asyncio.shield(asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, io_loop())))
