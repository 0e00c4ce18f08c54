"""Polling the service for what is on screen, and only that, ever less often while nothing changes.

A table that refreshes itself (the sessions, a session's replays) asks the service again only while a
person can see it: its screen is the one shown (a dialog over it still shows it) and no hidden tab holds
it. Each answer that changed nothing doubles the wait before the next (up to `longest`); a change, a
key of the user's (`poke`) or the table coming back into view starts again from `every`. A 429's
`Retry-After` (`RateLimited.retry_after`) is waited out before the next call, whatever the backoff says.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widget import Widget

from bbrowse.client.retry import wait_before_asking_again


def in_view(node: DOMNode) -> bool:
    """Whether `node` can be seen: on the screen shown (or under dialogs only), in no hidden container."""
    try:
        screen = node.screen
        stack = node.app.screen_stack
    except Exception:  # not attached to a screen or an app (any more)
        return False
    if screen not in stack:
        return False
    if any(not isinstance(above, ModalScreen) for above in stack[stack.index(screen) + 1:]):
        return False
    current: DOMNode | None = node
    while current is not None and current is not screen:
        if isinstance(current, Widget) and not current.display:
            return False
        current = current.parent
    return True


class Poller:
    """Calls `refresh` (which starts the owner's worker) while `visible()` holds and the wait is over.

    The ticking timer is local (no request, at most a second apart): a tick asks the service only when
    the table is in view and its wait is over, or at once when it has just come back into view. The
    owner's worker does the call and reports how it went with `done(...)`.
    """

    def __init__(self, owner: Widget, refresh: Callable[[], object], *, visible: Callable[[], bool] | None = None,
                 every: float = 2.0, longest: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.owner = owner
        self._refresh = refresh
        self._visible = visible or (lambda: in_view(owner))
        self.every = every
        self.longest = longest
        self._clock = clock
        #: The wait after the last answer (grows while nothing changes).
        self.wait = every
        self._due = 0.0
        self._busy = False
        self._was_visible = False
        self._timer: Timer | None = None

    def start(self, *, answered: bool = False) -> None:
        """Ask now (when in view), then tick; the owner's timers stop with it. `answered`: the owner's data was
        just listed: the first ask waits `every` (a `poke` still asks at once)."""
        self._timer = self.owner.set_interval(min(self.every, 1.0), self._tick, name="poll")
        if answered:
            self._was_visible, self._due = True, self._clock() + self.every
            return
        self._tick()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def poke(self) -> None:
        """The user asked, or the table came back into view: ask at once and from the shortest wait again."""
        self.wait = self.every
        self._due = 0.0
        self._tick()

    def _tick(self) -> None:
        visible = self._visible()
        if visible and not self._was_visible:  # back in view: up to date at once
            self.wait, self._due = self.every, 0.0
        self._was_visible = visible
        if self._busy or not visible or self._clock() < self._due:
            return
        self._busy = True
        self._refresh()

    def done(self, *, changed: bool = False, error: BaseException | None = None) -> None:
        """The call of the last `refresh` ended: set the wait before the next one."""
        self._busy = False
        if changed:
            self.wait = self.every
        else:
            self.wait = min(self.longest, self.wait * 2)
        self._due = self._clock() + wait_before_asking_again(error, self.wait)
