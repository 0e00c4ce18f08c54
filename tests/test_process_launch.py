"""Starting a program in a session's sandbox: the wait for the program nsenter forks."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time

from bbrowse.service.process_launch import FORK_WAIT_SECONDS, forked_child


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0].decode()


def test_a_program_that_ended_at_once_is_seen_at_once() -> None:
    """Nothing reaps nsenter during this wait: an nsenter that has already ended (its program too) stays a zombie
    meanwhile. That is the end, seen at once, not after FORK_WAIT_SECONDS."""
    nsenter_like = subprocess.Popen(["sh", "-c", "sh -c 'exit 0'; exit 3"])
    try:
        for _ in range(500):
            if _state(nsenter_like.pid) == "Z":
                break
            time.sleep(0.01)
        assert _state(nsenter_like.pid) == "Z"
        started = time.monotonic()
        assert asyncio.run(forked_child(nsenter_like.pid, controls_tty=True)) is None
        assert time.monotonic() - started < FORK_WAIT_SECONDS / 4
    finally:
        assert nsenter_like.wait(10) == 3


#: nsenter as a machine short of CPU runs it: its child leads a session of its own only after SLOW_SECONDS.
SLOW_FORK = """
import os, sys, time
child = os.fork()
if child == 0:
    time.sleep(float(sys.argv[1]))
    os.setsid()
    time.sleep(30)
    os._exit(0)
os.waitpid(child, 0)
"""
SLOW_SECONDS = 0.5


def test_a_slow_fork_leaves_the_service_free_to_answer_meanwhile() -> None:
    """Every request of the service waits while its loop does: the wait for a fork slowed by a busy machine must
    leave the loop to them."""
    nsenter_like = subprocess.Popen([sys.executable, "-c", SLOW_FORK, str(SLOW_SECONDS)], start_new_session=True)
    leader = None
    try:
        leader, waited, ticks = asyncio.run(_wait_with_a_ticker(nsenter_like.pid))
        assert leader is not None and os.getsid(leader) == leader  # the child, once it leads its session
        assert waited >= SLOW_SECONDS * 0.9
        assert ticks >= waited / 0.01 / 4, (ticks, waited)  # with the loop held: none
    finally:
        os.killpg(nsenter_like.pid, signal.SIGKILL)
        nsenter_like.wait(10)
        if leader is not None:
            with contextlib.suppress(OSError):
                os.killpg(leader, signal.SIGKILL)


async def _wait_with_a_ticker(pid: int) -> tuple[int | None, float, int]:
    """`forked_child(pid)` beside another task's turns on the loop: (its answer, seconds waited, turns taken)."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    started = time.monotonic()
    try:
        leader = await forked_child(pid)
        return leader, time.monotonic() - started, ticks
    finally:
        ticking.cancel()
