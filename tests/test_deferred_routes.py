"""`bbrowse serve` builds the sessions' routes before it serves and the others just after: a request for a
route not built yet builds them first and is answered by its handler, and the app ends as it would have been
built at once. In this process, on the service's own app (httpx's ASGITransport, no lifespan: nothing builds
the rest on a timer); every other test's `bbrowse serve` runs with its routes deferred."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from bbrowse.service.app import create_app, flat_routes
from bbrowse.service.config import ServiceConfig

TOKEN = "in-process-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def state_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as state:
        yield Path(state)


def described(app: FastAPI) -> list[tuple[str, str]]:
    return [(type(route).__name__, getattr(route, "path", "")) for route in flat_routes(app.routes)]


def http(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bbrowse.test", headers=HEADERS)


async def test_a_route_not_built_yet_is_built_and_answered_by_its_handler(state_dir) -> None:
    app = create_app(ServiceConfig(token=TOKEN, state_dir=state_dir), defer_routes=True)
    assert all(path.startswith(("/browsers", "/openapi", "/docs")) for _, path in described(app))
    async with http(app) as client:
        listed = await client.get("/browsers")
        assert listed.status_code == 200 and listed.json() == []
        answer = await client.get("/browsers/nope-session/fs/file_info", params={"path": "/"})
    assert answer.status_code == 404
    assert answer.json()["message"] == "browser session 'nope-session' not found"  # the handler's, not "no route"


async def test_deferred_or_not_the_service_ends_with_the_same_routes_in_the_same_order(state_dir) -> None:
    at_once = described(create_app(ServiceConfig(token=TOKEN, state_dir=state_dir / "a")))
    deferred_app = create_app(ServiceConfig(token=TOKEN, state_dir=state_dir / "b"), defer_routes=True)
    async with http(deferred_app) as client:
        document = (await client.get("/openapi.json")).json()  # the document asks for every route
    assert described(deferred_app) == at_once
    assert any(path.endswith("/process/spawn") for path in document["paths"])


def test_the_sessions_routes_alone_load_no_other_area() -> None:
    """What `bbrowse serve` builds before it serves (the rest is imported only when built)."""
    import subprocess

    code = ("import sys, tempfile, pathlib; from bbrowse.service.app import create_app; "
            "from bbrowse.service.config import ServiceConfig; "
            "create_app(ServiceConfig(token='t', state_dir=pathlib.Path(tempfile.mkdtemp())), defer_routes=True); "
            "print(' '.join(m for m in sys.modules if m.startswith('bbrowse.service.routes.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            timeout=60).stdout.split()
    assert loaded == ["bbrowse.service.routes.sessions"]
