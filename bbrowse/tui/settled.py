"""Waiting until the app has handled what it was sent: a key, the binding it runs as it bubbles up, the focus
that binding moves. Counted from the message queues, where Textual's own wait (`wait_for_idle`, which Pilot
uses between keys) guesses from the process's CPU time, and a process starved of CPU looks idle to it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from textual.app import ScreenStackError

if TYPE_CHECKING:
    from textual.app import App
    from textual.message_pump import MessagePump

#: Rounds before giving up on a quiet moment (timers keep posting to some widgets; each round lets every node
#: of the screen handle what it had queued, so a key's bubbling and the callbacks it schedules take a few).
MAX_ROUNDS = 50
#: A round's bound: a node closed during the round never runs its callback, and is gone from the next round.
ROUND_SECONDS = 1.0


async def until_settled(app: App) -> None:
    """Until the app and every node of its screen have handled every message queued for them, including those
    posted while handling the ones before (bounded by `MAX_ROUNDS`)."""
    for _ in range(MAX_ROUNDS):
        await _one_round(app)
        if all(node.message_queue_size == 0 for node in _nodes(app)):
            return


async def _one_round(app: App) -> None:
    """Until each node has handled what was queued for it when this was called (or `ROUND_SECONDS`)."""
    waiting = 0
    all_handled = asyncio.Event()

    def handled() -> None:
        nonlocal waiting
        waiting -= 1
        if waiting == 0:
            all_handled.set()

    for node in _nodes(app):
        if node.call_later(handled):  # runs once the messages queued before it have been handled
            waiting += 1
    if waiting:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(ROUND_SECONDS):
                await all_handled.wait()


def _nodes(app: App) -> list[MessagePump]:
    try:
        screen = app.screen
    except ScreenStackError:  # starting or closing: no screen
        return [app]
    return [app, *screen.walk_children(with_self=True)]
