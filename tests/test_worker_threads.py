"""The service's worker threads are all there from the start: a burst of blocking work adds none."""

from __future__ import annotations

import asyncio
import threading
import time

from bbrowse.service.worker_threads import start_worker_threads


def _workers() -> int:
    return sum(thread.name.startswith("bbrowse-worker") for thread in threading.enumerate())


def test_the_pool_is_full_at_start_and_a_burst_adds_no_thread() -> None:
    async def main() -> tuple[int, int, int]:
        pool = await start_worker_threads(3)
        at_start = _workers()
        await asyncio.gather(*(asyncio.to_thread(time.sleep, 0.05) for _ in range(12)))  # 4x the pool, at once
        after_burst = _workers()
        loop_pool = asyncio.get_running_loop()._default_executor  # type: ignore[attr-defined]
        pool.shutdown(wait=True)
        return at_start, after_burst, int(loop_pool is pool)

    at_start, after_burst, is_default = asyncio.run(main())
    assert (at_start, after_burst, is_default) == (3, 3, 1)
