"""The service's worker threads: a fixed pool, all started with the service.

Blocking work (directory walks of retention, zip and file I/O, a stray-child look) goes to the event
loop's default executor through `asyncio.to_thread`. asyncio's own executor starts its threads lazily,
one more each time every started thread is busy, up to `min(32, cores + 4)`: a service that has run for
a week has more threads than a fresh one, for no reason a user can see, and a soak cannot tell that
growth from a leak. This pool has its final size from the start, so the thread count of a healthy
service is a constant.
"""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor

#: As asyncio's default executor would grow to, on this machine.
WORKERS = min(32, (os.cpu_count() or 1) + 4)


async def start_worker_threads(workers: int = WORKERS) -> ThreadPoolExecutor:
    """Make the running loop's default executor a pool of `workers` threads, every one of them started."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bbrowse-worker")
    # Each first task blocks until all have started, so each runs on a thread of its own: all are made now.
    everyone = threading.Barrier(workers)
    await asyncio.gather(*(asyncio.wrap_future(pool.submit(everyone.wait, 10)) for _ in range(workers)))
    asyncio.get_running_loop().set_default_executor(pool)
    return pool
