"""The client against the service's own app in this process (httpx's ASGITransport): no port, no process,
no browser. For what the client makes of the service's answers, where the subject is the code, not the
wiring; the same calls over loopback to a running `bbrowse serve` are in tests/test_client*.py."""

from __future__ import annotations

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
