"""`bbrowse serve --kernel-compat`: what counts as activity, how a VM going away closes its sockets, and
the computer controls' defaults, as on Kernel's cloud (a row of the README's table a test).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from browser_support import needs_chromium
from conftest import ServiceHandle, start_service, stop_service
from test_compat_kernel_vm import TIMEOUT, Vm, vm_of
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

pytestmark = needs_chromium


@pytest.fixture(scope="module")
async def compat(compat_http: httpx.AsyncClient) -> AsyncIterator[Vm]:
    async for vm in vm_of(compat_http):
        yield vm


async def closed(ws: ClientConnection) -> tuple[int | None, str | None]:
    """Read (and drop) what comes until the service closes the socket: its close code and reason."""
    with contextlib.suppress(ConnectionClosed):
        while True:
            await ws.recv()
    return ws.close_code, ws.close_reason


async def test_only_cdp_keeps_a_session_and_a_vm_going_away_closes_sockets_1001(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Kernel's rule (docs, "Standby Mode"): a session with only a bare attach socket open is reaped after its
    timeout; one with a CDP client connected is not. Its sockets close with 1001 `browser shutting down`
    when its VM goes away, at the reap and at a service stop (`main.go` 298-303)."""
    handle: ServiceHandle = await asyncio.to_thread(
        start_service, tmp_path_factory.mktemp("bbrowse-compat-activity"), {"BBROWSE_KERNEL_COMPAT": "1"}
    )
    try:
        async with httpx.AsyncClient(base_url=handle.url, headers=handle.headers, timeout=30) as http:
            created = await asyncio.gather(*(http.post("/browsers", json={"timeout_seconds": 10}) for _ in "ab"))
            started = time.monotonic()
            shell_only, with_cdp = (Vm(r.json()) for r in created)
            sockets: list[ClientConnection] = []
            for vm in (shell_only, with_cdp):
                pid = await vm.spawn("cat", allocate_tty=True, rows=24, cols=80)
                sockets.append(await connect(vm.attach_url(pid), open_timeout=TIMEOUT))
            cdp = await connect(created[1].json()["cdp_ws_url"], open_timeout=TIMEOUT)
            async with asyncio.timeout(30):  # reaped after 10 s idle (a reaper pass a second)
                while (await http.get(f"/browsers/{shell_only.sid}")).status_code == 200:
                    await sockets[0].send(b"typing\n")  # a person typing in the shell is not activity
                    await asyncio.sleep(0.5)
            assert time.monotonic() - started >= 9
            assert await asyncio.wait_for(closed(sockets[0]), TIMEOUT) == (1001, "browser shutting down")
            r = await http.get(f"/browsers/{with_cdp.sid}")
            assert r.status_code == 200, r.text  # as old, as idle otherwise: its CDP client kept it

            await asyncio.to_thread(stop_service, handle)
            assert await asyncio.wait_for(closed(sockets[1]), TIMEOUT) == (1001, "browser shutting down")
            assert await asyncio.wait_for(closed(cdp), TIMEOUT) == (1001, "browser shutting down")
            for vm in (shell_only, with_cdp):
                await vm.http.aclose()
    finally:
        await asyncio.to_thread(stop_service, handle)


async def test_type_is_smooth_by_default_and_a_click_eases_the_pointer_there(compat: Vm) -> None:
    """`computer.go` 450-545: `smooth` unset means smooth (word bursts, 50-120 ms a key); 233-236: a click
    moves the pointer smoothly to its target first."""
    text = "hello world again"

    async def timed(path: str, body: dict) -> float:
        started = time.monotonic()
        r = await compat.http.post(path, json=body)
        assert r.status_code == 200, r.text
        return time.monotonic() - started

    smooth = await timed("/computer/type", {"text": text})
    assert smooth >= 0.05 * len(text), smooth
    direct = await timed("/computer/type", {"text": text, "smooth": False})
    assert direct < smooth, (direct, smooth)

    await timed("/computer/move_mouse", {"x": 0, "y": 0, "smooth": False})
    eased = await timed("/computer/click_mouse", {"x": 1200, "y": 700})
    assert eased >= 0.3, eased  # a smooth move of ~1400 px takes ~0.55 s
    r = await compat.http.post("/computer/get_mouse_position")
    assert r.json() == {"x": 1200, "y": 700}
