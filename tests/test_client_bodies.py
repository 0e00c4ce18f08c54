"""Every JSON body the client sends is one the service's own request model accepts, field for field.

The client builds its bodies from the wire models (`bbrowse.client.bodies`); this records what each call
puts on the wire (an httpx transport that answers in the contract's shapes, no service) and validates it
with the model the service's route validates with, so a field the client spells differently from the
service fails here, not against a live service."""

from __future__ import annotations

import json

import httpx
import pytest
from pydantic import BaseModel

from bbrowse.client import BrowserClient, ClientConfig
from bbrowse.wire import (
    BrowserCreateRequest,
    ExecRequest,
    KillRequest,
    ReplayStartRequest,
    ResizeRequest,
    ScreenshotRequest,
    SpawnRequest,
)
from bbrowse.wire.computer import (
    BatchRequest,
    ClickMouseRequest,
    DragMouseRequest,
    MoveMouseRequest,
    PressKeyRequest,
    ScrollRequest,
    SetCursorRequest,
    TypeTextRequest,
    WriteClipboardRequest,
)
from bbrowse.wire.fs import (
    CreateDirectoryRequest,
    DeletePathRequest,
    MovePathRequest,
    SetFilePermissionsRequest,
    WatchStartRequest,
)
from bbrowse.wire.telemetry import BrowserUpdateRequest, TelemetryRequest

BROWSER = {"session_id": "s1", "cdp_ws_url": "ws://127.0.0.1:1/cdp", "created_at": "2026-01-01T00:00:00Z",
           "headless": True, "stealth": False, "timeout_seconds": 60}
#: The answer of each route, by the last part of its path.
ANSWERS: dict[str, object] = {
    "browsers": BROWSER, "s1": BROWSER, "spawn": {"process_id": "p1", "pid": 2, "started_at": "2026-01-01T00:00:00Z"},
    "exec": {"exit_code": 0, "stdout_b64": "", "stderr_b64": "", "duration_ms": 1},
    "kill": {"ok": True}, "resize": {"ok": True}, "replays": {"replay_id": "r1"}, "watch": {"watch_id": "w1"},
}
#: The request model the service validates each route with, by the last part of its path.
MODELS: dict[str, type[BaseModel]] = {
    "browsers": BrowserCreateRequest, "s1": BrowserUpdateRequest, "spawn": SpawnRequest, "exec": ExecRequest,
    "kill": KillRequest, "resize": ResizeRequest, "replays": ReplayStartRequest, "screenshot": ScreenshotRequest,
    "click_mouse": ClickMouseRequest, "move_mouse": MoveMouseRequest, "drag_mouse": DragMouseRequest,
    "scroll": ScrollRequest, "type": TypeTextRequest, "press_key": PressKeyRequest, "batch": BatchRequest,
    "write": WriteClipboardRequest, "cursor": SetCursorRequest, "create_directory": CreateDirectoryRequest,
    "delete_file": DeletePathRequest, "delete_directory": DeletePathRequest, "move": MovePathRequest,
    "set_file_permissions": SetFilePermissionsRequest, "watch": WatchStartRequest,
}


@pytest.fixture
async def recorded():
    sent: list[tuple[str, dict]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        last = request.url.path.rstrip("/").rsplit("/", 1)[-1]
        sent.append((last, json.loads(request.content)))
        return httpx.Response(200, json=ANSWERS.get(last, {}))

    config = ClientConfig(base_url="http://127.0.0.1:1", token="t")
    http = httpx.AsyncClient(base_url=config.base_url, transport=httpx.MockTransport(answer))
    async with http:
        yield BrowserClient(config=config, http=http), sent


async def test_every_body_the_client_sends_validates_with_the_services_model(recorded):
    client, sent = recorded
    await client.sessions.create(name="n", viewport={"width": 800, "height": 600}, tags={"a": "b"}, stealth=True)
    await client.telemetry.configure("s1", TelemetryRequest(enabled=True))
    await client.processes.spawn("s1", "sh", ["-c", "true"], cwd="/tmp", env={"A": "1"}, allocate_tty=True)
    await client.processes.exec("s1", "true", as_user="kernel", timeout_sec=5)
    await client.processes.kill("s1", "p1", "INT")
    await client.processes.resize("s1", "p1", 30, 100)
    await client.replays.start("s1", framerate=10)
    await client.computer.screenshot("s1", (0, 0, 10, 10))
    await client.computer.click("s1", 1, 2, num_clicks=2, hold_keys=["Ctrl"])
    await client.computer.move_mouse("s1", 3, 4, duration_ms=100)
    await client.computer.drag("s1", [(0, 0), (5, 5)], delay_ms=1)
    await client.computer.scroll("s1", 1, 1, delta_y=3)
    await client.computer.type_text("s1", "hi", delay_ms=5)
    await client.computer.press_key("s1", ["Ctrl+a", "Delete"], duration_ms=10)
    await client.computer.batch("s1", [{"type": "sleep", "sleep": {"duration_ms": 1}}])
    await client.computer.write_clipboard("s1", "x")
    await client.computer.set_cursor("s1", hidden=True)
    await client.fs.create_directory("s1", "/tmp/d", mode="755")
    await client.fs.delete_file("s1", "/tmp/f")
    await client.fs.delete_directory("s1", "/tmp/d")
    await client.fs.move("s1", "/tmp/a", "/tmp/b", overwrite=True)
    await client.fs.set_file_permissions("s1", "/tmp/a", "644", owner="kernel")
    await client.fs.start_watch("s1", "/tmp", recursive=True)

    assert sorted({route for route, _ in sent}) == sorted(MODELS)
    for route, sent_body in sent:
        validated = MODELS[route].model_validate(sent_body)
        # nothing the client sent was dropped or renamed on the way in
        assert validated.model_dump(mode="json", exclude_unset=True) == sent_body, route
    bodies = dict(sent)
    assert bodies["type"] == {"text": "hi", "delay": 5, "smooth": False}  # smooth always said (Kernel's default)
    assert bodies["exec"] == {"command": "true", "args": [], "as_user": "kernel", "timeout_sec": 5}
    assert bodies["spawn"]["cols"] == 80 and bodies["spawn"]["rows"] == 24  # a PTY is never spawned 0x0
