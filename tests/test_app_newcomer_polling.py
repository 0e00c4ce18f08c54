"""What the app asks of the service while a person looks at it (issue 22, item 8): the sessions table is
polled only while it is shown and ever less often while nothing changes, a session's replays only while
the Replays tab is shown, and a 429's `Retry-After` is waited out. The app talks to the real service
through a counting TCP proxy of this test (every request line is recorded on its way through)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
from app_support import screen_shown, wait_for

from bbrowse.client import ClientConfig
from bbrowse.target import Target
from bbrowse.tui import polling
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.panes import replays as replays_pane
from bbrowse.tui.screens import sessions as sessions_screen
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import notifications

REQUEST_LINE = re.compile(rb"(GET|POST|PUT|PATCH|DELETE) (/[^ \r\n]*) HTTP/1\.1\r\n")


@dataclass
class CountingProxy:
    """A TCP proxy to the service that records each request's (time, method, path) as it passes."""

    upstream: tuple[str, int]
    seen: list[tuple[float, str, str]] = field(default_factory=list)
    url: str = ""

    def since(self, started: float, method: str, pattern: str) -> list[str]:
        return [path for at, m, path in self.seen if at >= started and m == method and re.fullmatch(pattern, path)]

    async def _pipe(self, reader, writer, count: bool) -> None:
        pending = b""
        try:
            while chunk := await reader.read(65536):
                if count:
                    data = pending + chunk
                    end = 0
                    for match in REQUEST_LINE.finditer(data):
                        self.seen.append((time.monotonic(), match[1].decode(), match[2].decode()))
                        end = match.end()
                    pending = data[end:][-400:]
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _handle(self, reader, writer) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        with contextlib.suppress(asyncio.CancelledError):  # the test is over
            await asyncio.gather(self._pipe(reader, up_writer, True), self._pipe(up_reader, writer, False))


@contextlib.asynccontextmanager
async def counting_proxy(url: str) -> AsyncIterator[CountingProxy]:
    parts = httpx.URL(url)
    proxy = CountingProxy((parts.host, parts.port or 80))
    server = await asyncio.start_server(proxy._handle, "127.0.0.1", 0)
    proxy.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield proxy
    finally:
        server.close()


#: The table's listings (`limit=1` is the app's probe of a service it lost, which a busy machine may trigger:
#: a request that timed out; that is the recovery, not the table's polling).
LIST = r"/browsers(\?(?!limit=1(&|$)).*)?"


async def test_the_app_polls_only_what_is_shown_and_less_often_while_nothing_changes(service, http, monkeypatch):
    # short waits, so the window of the test is short: every 0.2 s at first, at most 1.6 s apart
    monkeypatch.setattr(sessions_screen, "REFRESH_SECONDS", 0.2)
    monkeypatch.setattr(sessions_screen, "LONGEST_REFRESH_SECONDS", 1.6)
    monkeypatch.setattr(replays_pane, "REFRESH_SECONDS", 0.2)
    monkeypatch.setattr(replays_pane, "LONGEST_REFRESH_SECONDS", 1.6)
    name = f"polled-{uuid.uuid4().hex[:6]}"
    session_id = (await http.post("/browsers", json={"name": name})).json()["session_id"]
    try:
        async with counting_proxy(service.url) as proxy:
            app = BbrowseApp(target=Target(ClientConfig(proxy.url, service.token), "remote"))
            async with app.run_test(size=(120, 36)) as pilot:
                await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.screen._loaded
                               and session_id in [k.value for k in app.screen.query_one("#sessions-table").rows])
                # the table shown, nothing changing: 0.4, 0.8, 1.6, 1.6 s apart, not every 0.2 s
                started = time.monotonic()
                await pilot.pause(3.0)
                lists = proxy.since(started, "GET", LIST)
                assert 1 <= len(lists) <= 5, lists  # every 0.2 s would be 15

                # a key of the user's asks at once
                started = time.monotonic()
                await pilot.press("r")
                await wait_for(pilot, lambda: proxy.since(started, "GET", LIST), timeout=5, what="refresh on r")

                # the session opened: the sessions table is not shown, so it is not asked for
                table = app.screen.query_one("#sessions-table")
                table.move_cursor(row=table.get_row_index(session_id))
                await pilot.press("enter")
                await wait_for(pilot, lambda: screen_shown(app, SessionScreen))
                await pilot.pause(0.5)  # a listing already on its way when the screen changed may still come
                started = time.monotonic()
                await pilot.pause(1.5)
                assert proxy.since(started, "GET", LIST) == []
                replays = rf"/browsers/{session_id}/replays(\?.*)?"
                assert proxy.since(started, "GET", replays) == []  # the Replays tab was never shown

                # the Replays tab shown: listed (at once), then shown no more: not listed any more
                started = time.monotonic()
                await pilot.press("5")
                await wait_for(pilot, lambda: proxy.since(started, "GET", replays), timeout=5, what="replays listed")
                await pilot.press("2")
                await wait_for(pilot, lambda: app.screen.query_one("#session-tabs").active == "logs")
                await pilot.pause(0.5)
                started = time.monotonic()
                await pilot.pause(1.5)
                assert proxy.since(started, "GET", replays) == []

                # back on the sessions table: asked again at once
                started = time.monotonic()
                await pilot.press("escape")
                await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
                await wait_for(pilot, lambda: proxy.since(started, "GET", LIST), timeout=5, what="list on return")
    finally:
        await http.delete(f"/browsers/{session_id}")


async def test_a_429_retry_after_is_waited_out_before_the_table_asks_again(monkeypatch):
    """A rate-limited listing with `Retry-After: 60` (longer than a call's own retries wait): the table asks
    again after 60 s, not at its usual pace (every 0.1 s here)."""
    monkeypatch.setattr(sessions_screen, "REFRESH_SECONDS", 0.1)
    monkeypatch.setattr(sessions_screen, "LONGEST_REFRESH_SECONDS", 0.1)
    seen: list[str] = []

    async def handle(reader, writer) -> None:
        with contextlib.suppress(Exception):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                seen.append(head.split(b"\r\n", 1)[0].decode())
                body = b'{"code":"rate_limit_exceeded","message":"slow down"}'
                writer.write(b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
                             b"Retry-After: 60\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        app = BbrowseApp(target=Target(ClientConfig(url, "t"), "remote"))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: seen, what="the first listing")
            await pilot.pause(2.0)
            assert len(seen) == 1, seen  # without honouring it: one every 0.1 s
            assert any("rate_limit_exceeded" in n.message for n in notifications(app))
    finally:
        server.close()


def test_a_poll_waits_at_least_the_retry_after_and_backs_off_while_nothing_changes():
    from bbrowse.client.errors import error_from_response

    now = [0.0]
    calls: list[float] = []
    poller = polling.Poller.__new__(polling.Poller)
    polling.Poller.__init__(poller, owner=None, refresh=lambda: calls.append(now[0]),  # type: ignore[arg-type]
                            visible=lambda: True, every=1.0, longest=8.0, clock=lambda: now[0])
    waits = []
    for _ in range(5):
        poller._tick()
        poller.done(changed=False)
        waits.append(poller.wait)
        now[0] += poller.wait
    assert waits == [2.0, 4.0, 8.0, 8.0, 8.0]
    limited = error_from_response(429, b'{"code":"rate_limit_exceeded","message":"x"}', retry_after=30)
    poller._tick()
    poller.done(error=limited)
    now[0] += 29
    poller._tick()
    assert len(calls) == 6  # not before the 30 s
    now[0] += 1
    poller._tick()
    assert len(calls) == 7
    poller.done(changed=True)
    assert poller.wait == 1.0
