"""`bounded`: a cancellation that arrives together with the answer ends the caller (Python 3.11's
`asyncio.wait_for` returned the answer and dropped it), and a slow answer is a TimeoutError; bbrowse awaits with
a limit only through it."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

import bbrowse
from bbrowse.timeouts import bounded


async def frames_until_cancelled(answers: asyncio.Queue[asyncio.Future[int]], taken: list[int]) -> None:
    """A loop taking one answer after another, as the live view takes frames."""
    while True:
        taken.append(await bounded(await answers.get(), 5.0))


async def test_a_cancellation_arriving_with_the_answer_ends_the_loop() -> None:
    answers: asyncio.Queue[asyncio.Future[int]] = asyncio.Queue()
    taken: list[int] = []
    loop_task = asyncio.create_task(frames_until_cancelled(answers, taken))
    for frame in range(5):
        answer = asyncio.get_running_loop().create_future()
        await answers.put(answer)
        await asyncio.sleep(0.01)  # the loop now awaits this answer
        answer.set_result(frame)  # the answer and the cancellation, in the same turn of the event loop
        loop_task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await bounded(asyncio.shield(loop_task), 2.0)
        assert loop_task.cancelled()
        assert taken == []
        loop_task = asyncio.create_task(frames_until_cancelled(answers, taken))
    loop_task.cancel()


async def test_an_answer_slower_than_the_limit_is_a_timeout_and_is_cancelled() -> None:
    slow = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await bounded(slow, 0.05)
    assert slow.cancelled()
    assert await bounded(asyncio.sleep(0, "now"), None) == "now"


def test_bbrowse_never_calls_asyncio_wait_for() -> None:
    root = Path(bbrowse.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            named = (isinstance(node, ast.Attribute) and node.attr == "wait_for"
                     and isinstance(node.value, ast.Name) and node.value.id == "asyncio")
            imported = isinstance(node, ast.ImportFrom) and node.module == "asyncio" and any(
                alias.name == "wait_for" for alias in node.names)
            if named or imported:
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == [], "use bbrowse.timeouts.bounded (asyncio.wait_for drops a cancellation on 3.11)"
