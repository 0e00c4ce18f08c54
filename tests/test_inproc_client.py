"""The client against the service's own app in this process (httpx's ASGITransport): no port, no process,
no browser. For what the client makes of the service's answers, where the subject is the code, not the
wiring; the same calls over loopback to a running `bbrowse serve` are in tests/test_client*.py."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from bbrowse.client import BadRequest, BrowserClient, ClientConfig, NotFound, Unauthorized
from bbrowse.service.app import create_app
from bbrowse.service.config import ServiceConfig

TOKEN = "in-process-token"
BASE = "http://bbrowse.test"
PID = "00000000-0000-4000-8000-000000000001"


def client_of(app, token: str = TOKEN) -> BrowserClient:
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE,
                             headers={"Authorization": f"Bearer {token}"})
    return BrowserClient(config=ClientConfig(base_url=BASE, token=token), http=http)


@pytest.fixture(scope="module")
def app():
    """The service's app, its routes served without its lifespan (no browsers, no sessions made)."""
    with tempfile.TemporaryDirectory() as state:
        yield create_app(ServiceConfig(token=TOKEN, state_dir=Path(state)))


@pytest.fixture
async def client(app) -> AsyncIterator[BrowserClient]:
    client = client_of(app)
    yield client
    await client.transport.http.aclose()


async def test_no_sessions_list_as_empty(client: BrowserClient) -> None:
    assert [browser async for browser in client.sessions.list()] == []


async def test_an_unknown_session_is_not_found_naming_it_for_sessions_processes_and_files(client) -> None:
    for call in (client.sessions.get("nope-session"), client.processes.status("nope-session", PID),
                 client.fs.list_files("nope-session", "/")):
        with pytest.raises(NotFound) as raised:
            await call
        assert "nope-session" in str(raised.value)


async def test_a_refused_body_is_bad_request_whose_details_name_the_field(client) -> None:
    with pytest.raises(BadRequest) as raised:
        await client.sessions.create(timeout_seconds=5)
    assert raised.value.status == 400
    assert any("timeout_seconds" in detail.message for detail in raised.value.details), raised.value.details


async def test_a_wrong_token_is_unauthorized(app) -> None:
    client = client_of(app, token="not-the-token")
    try:
        with pytest.raises(Unauthorized):
            [browser async for browser in client.sessions.list()]
    finally:
        await client.transport.http.aclose()


class CancelsTheCallerWithItsAnswer(httpx.AsyncBaseTransport):
    """The service's answer, and the caller cancelled as it arrives (ctrl-c during a call)."""

    def __init__(self, app) -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.caller: asyncio.Task | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        await response.aread()
        assert self.caller is not None
        asyncio.get_running_loop().call_soon(self.caller.cancel)  # as the signal handler does: by the loop
        await asyncio.sleep(0)  # the answer's last read
        return response


async def test_a_cancellation_arriving_with_a_probes_answer_is_not_lost(app) -> None:
    """`bbrowse logs --follow` probes a quiet stream every few seconds; a ctrl-c whose cancellation comes with the
    probe's answer ends the caller (Python 3.11's `wait_for` would return the answer instead)."""
    transport = CancelsTheCallerWithItsAnswer(app)
    http = httpx.AsyncClient(transport=transport, base_url=BASE, headers={"Authorization": f"Bearer {TOKEN}"})
    client = BrowserClient(config=ClientConfig(base_url=BASE, token=TOKEN), http=http)
    went_on = []

    async def probe_then_go_on() -> None:
        await client.transport.probe("/browsers", timeout=5)
        went_on.append(True)

    try:
        for _ in range(5):
            transport.caller = asyncio.create_task(probe_then_go_on())
            with pytest.raises(asyncio.CancelledError):
                await transport.caller
        assert went_on == []
    finally:
        await http.aclose()
