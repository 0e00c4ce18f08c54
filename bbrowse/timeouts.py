"""Awaiting with a time limit, without losing a cancellation.

Python 3.11's `asyncio.wait_for` returns an answer that completes together with a cancellation of the caller and
drops the cancellation, so a loop awaiting frames, lines or replies with it can outlive its cancelled worker.
`asyncio.timeout` lets the cancellation through; `bounded` is `wait_for`'s shape on it. bbrowse does not call
`asyncio.wait_for` (tests/test_timeouts.py checks).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def bounded(awaitable: Awaitable[T], seconds: float | None) -> T:
    """`await awaitable`, raising TimeoutError after `seconds` (None: no limit) and cancelling what it awaited."""
    async with asyncio.timeout(seconds):
        return await awaitable
