"""When and how long to wait before trying an idempotent call again.

Only calls that are safe to repeat are retried (reads, DELETE, resize, kill, status...): a keystroke
sent to stdin twice, or a process spawned twice, is a bug the user sees. Attempts and the total time
spent are both bounded so a dead service fails fast with `ConnectionLost`.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass

from bbrowse.client.errors import RateLimited, ServerError, ServiceError

#: Statuses worth another try: rate limited, and the server or its proxy failing.
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    #: Total tries of one call, the first included.
    attempts: int = 3
    #: First backoff in seconds; doubles each try, with jitter.
    base_delay: float = 0.1
    max_delay: float = 2.0
    #: Give up when the next wait would end later than this many seconds after the first try.
    total_seconds: float = 15.0
    #: The longest `Retry-After` honoured; a longer one is returned to the caller as RateLimited.
    max_retry_after: float = 10.0

    def backoff(self, retry_number: int) -> float:
        """Exponential backoff with jitter: half fixed, half random, so clients do not retry in lockstep."""
        ceiling = min(self.max_delay, self.base_delay * (2.0 ** retry_number))
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def delay_for(self, retry_number: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry `retry_number` (0-based), or None when the policy says stop."""
        if retry_number + 1 >= self.attempts:
            return None
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            return max(retry_after, 0.0)
        return self.backoff(retry_number)


NO_RETRY = RetryPolicy(attempts=1)

#: The one backoff of every connection that reconnects on its own (a followed log, a shell's output, the
#: CDP keep-alive): waits before attempt 1, 2, ... after a drop, the last one repeated for as long as the
#: link stays down. Short at its end, so a link that comes back is used again within about a second.
RECONNECT_DELAYS = (0.0, 0.25, 0.5, 1.0)
#: A connection that lived this long before it dropped was good: the next reconnect starts the backoff over.
STABLE_SECONDS = 2.0


def reconnect_delay(failures: int) -> float:
    """Seconds to wait before reconnect attempt `failures` (0-based), with a little jitter past the first."""
    delay = RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS) - 1)]
    return delay * random.uniform(0.8, 1.2) if delay else 0.0

#: A caller that asks again on its own (a table's polling) and was rate limited without a `Retry-After`
#: waits at least this long.
RATE_LIMITED_FLOOR = 5.0


def wait_before_asking_again(error: BaseException | None, usual: float) -> float:
    """Seconds a repeating caller (a poll) waits after `error` before its next call: a 429's `Retry-After`
    when that is longer than `usual`, at least `RATE_LIMITED_FLOOR` for a 429 without one; else `usual`."""
    if isinstance(error, RateLimited):
        hint = error.retry_after if error.retry_after is not None else RATE_LIMITED_FLOOR
        return max(usual, hint)
    return usual


def parse_retry_after(value: str | None) -> float | None:
    """`Retry-After` as seconds: either delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(when.timestamp() - time.time(), 0.0)


def is_permanent(error: BaseException) -> bool:
    """Whether another try of the same call can only get the same answer, so a loop that reconnects
    (a log pane's stream, a shell's output) stops and says why instead of trying forever.

    The service refused the call: missing, gone, invalid, not allowed (a 4xx). The kinds of answer the
    retry rules try again are not permanent: rate limiting (`RateLimited`, 429) and the server or its
    proxy failing (`ServerError`, every 5xx: a loop that reconnects waits longer than one call's
    retries, so it waits out a 501 too). Nor is anything but a service answer: a lost connection or a
    garbled stream may go away on the next try.
    """
    return isinstance(error, ServiceError) and not isinstance(error, RateLimited | ServerError)
