"""`StdinWriter` on its own, with a fake send: what its two users rely on beyond order and coalescing
(those are tested against the service in test_client.py and test_client_errors.py).

The terminal pane reports a failed send and keeps typing (`on_error`), drops keys meant for a program
that was restarted (`discard`) and stops when unmounted (`abort`); `bbrowse shell` bounds a request
(`max_request_bytes`), waits while a pipe's input piles up (`pending`, `drain`) and watches the writer
for a failure or the end of input (`wait_closed`, `stopped`).
"""

from __future__ import annotations

import asyncio

import pytest

from bbrowse.client import StdinWriter

WAIT = 5.0


class FakeStdin:
    """Records each send; a send waits for `release` while `hold` is set, and raises for bytes in `fail`."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.started = asyncio.Event()
        self.hold = False
        self.release = asyncio.Event()
        self.fail: set[bytes] = set()

    async def send(self, data: bytes) -> None:
        self.started.set()
        if self.hold:
            await asyncio.wait_for(self.release.wait(), WAIT)
        if data in self.fail:
            raise OSError(f"could not send {data!r}")
        self.sent.append(data)

    async def first_send_in_flight(self) -> None:
        await asyncio.wait_for(self.started.wait(), WAIT)


async def test_with_on_error_a_failed_send_is_reported_and_what_was_typed_after_it_still_goes() -> None:
    stdin, errors = FakeStdin(), []
    stdin.hold, stdin.fail = True, {b"a"}
    writer = StdinWriter(stdin.send, on_error=errors.append)
    writer.write(b"a")
    await stdin.first_send_in_flight()
    writer.write(b"b")  # typed while the doomed send is in flight
    writer.write(b"c")
    stdin.release.set()
    await asyncio.wait_for(writer.drain(), WAIT)
    assert [str(error) for error in errors] == ["could not send b'a'"]
    assert stdin.sent == [b"bc"] and not writer.stopped
    writer.write(b"d")  # the writer keeps working
    await asyncio.wait_for(writer.aclose(), WAIT)
    assert stdin.sent == [b"bc", b"d"]


async def test_without_on_error_a_failed_send_stops_the_writer_and_wait_closed_raises_it() -> None:
    stdin = FakeStdin()
    stdin.fail = {b"x"}
    writer = StdinWriter(stdin.send)
    writer.write(b"x")
    with pytest.raises(OSError, match="could not send"):
        await asyncio.wait_for(writer.wait_closed(), WAIT)
    assert writer.stopped
    with pytest.raises(OSError):
        writer.write(b"y")


async def test_wait_closed_returns_once_everything_written_before_aclose_was_sent() -> None:
    stdin = FakeStdin()
    writer = StdinWriter(stdin.send)
    watcher = asyncio.ensure_future(writer.wait_closed())
    writer.write(b"last words")
    await asyncio.sleep(0)
    assert not watcher.done()
    await asyncio.wait_for(writer.aclose(), WAIT)
    await asyncio.wait_for(watcher, WAIT)
    assert stdin.sent == [b"last words"] and writer.stopped


async def test_a_request_carries_at_most_max_request_bytes_in_order() -> None:
    stdin = FakeStdin()
    writer = StdinWriter(stdin.send, max_request_bytes=4)
    writer.write(b"0123456789")
    assert writer.pending == 10
    await asyncio.wait_for(writer.aclose(), WAIT)
    assert stdin.sent == [b"0123", b"4567", b"89"] and writer.pending == 0


async def test_discard_drops_what_is_queued_and_lets_the_send_in_flight_finish() -> None:
    stdin = FakeStdin()
    stdin.hold = True
    writer = StdinWriter(stdin.send)
    writer.write(b"old")
    await stdin.first_send_in_flight()
    writer.write(b"typed for the old program")
    writer.discard()
    assert writer.pending == 0
    stdin.release.set()
    await asyncio.wait_for(writer.drain(), WAIT)
    writer.write(b"new")
    await asyncio.wait_for(writer.aclose(), WAIT)
    assert stdin.sent == [b"old", b"new"]


async def test_abort_cancels_the_send_in_flight_drops_the_queue_and_wakes_waiters() -> None:
    stdin = FakeStdin()
    stdin.hold = True
    writer = StdinWriter(stdin.send)
    writer.write(b"never")
    await stdin.first_send_in_flight()
    writer.write(b"queued")
    drain, watcher = asyncio.ensure_future(writer.drain()), asyncio.ensure_future(writer.wait_closed())
    await asyncio.sleep(0)
    writer.abort()
    await asyncio.wait_for(asyncio.gather(drain, watcher), WAIT)
    assert stdin.sent == [] and writer.pending == 0 and writer.stopped
    with pytest.raises(RuntimeError, match="closed"):
        writer.write(b"more")
