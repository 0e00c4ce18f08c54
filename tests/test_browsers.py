"""Browser sessions over real HTTP with a real Chromium: screenshots, `cdp_ws_url`, crash recovery.

One session showing a local two-colour page is shared by the read-only tests of this module; tests
that kill or reconfigure a browser make their own.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import psutil
import pytest
import websockets
from browser_support import browser_process, needs_chromium, session_processes
from conftest import ServiceHandle, start_service, stop_service
from PIL import Image

from bbrowse.service.chromium_tmpdir import UNOWNED_AFTER_SECONDS, ChromiumTmpdir, sweep

pytestmark = [pytest.mark.chromium, needs_chromium]

VIEWPORT = {"width": 800, "height": 600}
RED, BLUE, GREEN = (255, 0, 0), (0, 0, 255), (0, 255, 0)
TITLE = "bbrowse two-colour page"
# Red page with a blue 400x300 block in the top-left corner.
PAGE = f"""<!doctype html><title>{TITLE}</title>
<body style="margin:0;background:rgb(255,0,0)">
<div style="position:absolute;left:0;top:0;width:400px;height:300px;background:rgb(0,0,255)"></div>"""


def rgb(image: Image.Image, x: int, y: int) -> tuple[int, int, int]:
    return image.convert("RGB").getpixel((x, y))


def png(response: httpx.Response) -> Image.Image:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    return Image.open(io.BytesIO(response.content))


def session_dir(service: ServiceHandle, sid: str) -> Path:
    return service.state_dir / "service" / "sessions" / sid


@pytest.fixture(scope="module")
def page_url(pages) -> str:
    return pages.url("two-colour.html", PAGE)


@pytest.fixture(scope="module")
async def shown(http: httpx.AsyncClient, page_url: str) -> AsyncIterator[dict]:
    """A session showing the two-colour page (shared: tests here only look at it)."""
    r = await http.post("/browsers", json={"start_url": page_url, "viewport": VIEWPORT, "timeout_seconds": 600})
    assert r.status_code == 200, r.text
    yield r.json()
    await http.delete(f"/browsers/{r.json()['session_id']}")


async def test_screenshot_is_a_png_of_the_viewport_showing_the_page(http: httpx.AsyncClient, shown: dict) -> None:
    image = png(await http.post(f"/browsers/{shown['session_id']}/computer/screenshot", json={}))
    assert image.format == "PNG"
    assert image.size == (VIEWPORT["width"], VIEWPORT["height"])
    assert rgb(image, 10, 10) == BLUE and rgb(image, 399, 299) == BLUE
    assert rgb(image, 400, 300) == RED and rgb(image, 799, 599) == RED


async def test_screenshot_region_crops_exactly(http: httpx.AsyncClient, shown: dict) -> None:
    region = {"x": 350, "y": 250, "width": 100, "height": 80}
    image = png(await http.post(f"/browsers/{shown['session_id']}/computer/screenshot", json={"region": region}))
    assert image.size == (100, 80)
    # The blue block ends at (400, 300): 50 px in and 50 px down the crop.
    assert rgb(image, 0, 0) == BLUE and rgb(image, 49, 49) == BLUE
    assert rgb(image, 50, 0) == RED and rgb(image, 0, 50) == RED and rgb(image, 99, 79) == RED


@pytest.mark.parametrize("region", [
    {"x": 700, "y": 0, "width": 101, "height": 10},
    {"x": 0, "y": 590, "width": 10, "height": 11},
    {"x": 800, "y": 600, "width": 1, "height": 1},
    {"x": -1, "y": 0, "width": 10, "height": 10},
    {"x": 0, "y": 0, "width": 0, "height": 10},
])
async def test_screenshot_region_outside_the_viewport_is_400_naming_region(
    http: httpx.AsyncClient, shown: dict, region: dict
) -> None:
    r = await http.post(f"/browsers/{shown['session_id']}/computer/screenshot", json={"region": region})
    assert r.status_code == 400
    body = r.json()
    assert body["code"] == "bad_request"
    assert any(d["message"].startswith("region") for d in body["details"]), body


async def test_screenshot_of_unknown_session_is_404(http: httpx.AsyncClient) -> None:
    r = await http.post("/browsers/no-such-session/computer/screenshot", json={})
    assert r.status_code == 404 and r.json()["code"] == "not_found"


async def test_cdp_ws_url_reaches_the_browser_through_the_service(service: ServiceHandle, shown: dict) -> None:
    url = shown["cdp_ws_url"]
    service_ws = service.url.replace("http://", "ws://", 1)
    assert url.startswith(f"{service_ws}/vm/{shown['session_id']}/cdp?jwt="), url
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"id": 1, "method": "Target.getTargets"}))
        targets = json.loads(await asyncio.wait_for(ws.recv(), 10))["result"]["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        await ws.send(json.dumps({"id": 2, "method": "Target.attachToTarget",
                                  "params": {"targetId": page["targetId"], "flatten": True}}))
        session_id = None
        while session_id is None:
            message = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if message.get("id") == 2:
                session_id = message["result"]["sessionId"]
        await ws.send(json.dumps({"id": 3, "sessionId": session_id, "method": "Runtime.evaluate",
                                  "params": {"expression": "document.title", "returnByValue": True}}))
        while True:
            message = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if message.get("id") == 3:
                break
    assert message["result"]["result"]["value"] == TITLE


async def test_official_sdk_captures_screenshots(sdk, shown: dict) -> None:
    sid = shown["session_id"]
    whole = Image.open(io.BytesIO(sdk.browsers.computer.capture_screenshot(sid).read()))
    assert whole.size == (800, 600) and rgb(whole, 10, 10) == BLUE
    part = sdk.browsers.computer.capture_screenshot(sid, region={"x": 400, "y": 0, "width": 40, "height": 30})
    image = Image.open(io.BytesIO(part.read()))
    assert image.size == (40, 30) and rgb(image, 0, 0) == RED


async def test_killed_chromium_answers_503_then_recovers(
    http: httpx.AsyncClient, service: ServiceHandle, page_url: str
) -> None:
    r = await http.post("/browsers", json={"start_url": page_url, "viewport": VIEWPORT})
    sid, first_url = r.json()["session_id"], r.json()["cdp_ws_url"]
    try:
        victim = browser_process(service, sid)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(10)

        down = await http.post(f"/browsers/{sid}/computer/screenshot", json={})
        assert down.status_code == 503
        assert down.json()["code"] == "browser_unavailable"
        assert "SIGKILL" in down.json()["message"]

        # The request after it gets a new Chromium showing the start page again.
        image = png(await http.post(f"/browsers/{sid}/computer/screenshot", json={}))
        assert rgb(image, 10, 10) == BLUE
        # The same endpoint now reaches the new Chromium.
        new_url = (await http.get(f"/browsers/{sid}")).json()["cdp_ws_url"]
        assert new_url.split("?")[0] == first_url.split("?")[0]
        async with websockets.connect(new_url, max_size=None) as ws:
            await ws.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
            assert "Chrome" in json.loads(await asyncio.wait_for(ws.recv(), 10))["result"]["product"]
        assert browser_process(service, sid).pid != victim.pid
        log = (session_dir(service, sid) / "logs" / "chromium.log").read_text()
        assert "killed by SIGKILL" in log and "starting a new Chromium" in log
    finally:
        await http.delete(f"/browsers/{sid}")


async def test_delete_stops_every_chromium_process_and_removes_the_profile(
    http: httpx.AsyncClient, service: ServiceHandle
) -> None:
    sid = (await http.post("/browsers", json={})).json()["session_id"]
    processes = session_processes(service, sid)
    assert len(processes) >= 2  # the browser and at least one helper (renderer, zygote, ...)
    assert (await http.delete(f"/browsers/{sid}")).status_code == 204
    _, alive = psutil.wait_procs(processes, timeout=10)
    assert alive == []
    assert not (session_dir(service, sid) / "chromium-profile").exists()
    assert not (session_dir(service, sid) / "sandbox").exists()  # a sandboxed session's profile was there


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb for a headful session")
async def test_headful_session_runs_under_xvfb_at_the_viewport_size(http: httpx.AsyncClient) -> None:
    green = 'data:text/html,<body style="background:rgb(0,255,0)">'
    r = await http.post("/browsers", json={"headless": False, "start_url": green,
                                           "viewport": {"width": 640, "height": 480}})
    assert r.status_code == 200, r.text
    sid = r.json()["session_id"]
    try:
        assert r.json()["headless"] is False and r.json()["cdp_ws_url"].startswith("ws://")
        image = png(await http.post(f"/browsers/{sid}/computer/screenshot", json={}))
        assert image.size == (640, 480)
        assert rgb(image, 5, 5) == GREEN and rgb(image, 634, 474) == GREEN
    finally:
        await http.delete(f"/browsers/{sid}")


async def test_without_chromium_sessions_work_and_browser_calls_say_how_to_install(
    tmp_path: Path,
) -> None:
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    # No Chromium (explicit missing path) and no Xvfb either (empty PATH).
    handle = start_service(tmp_path / "state", extra_env={"BBROWSE_CHROMIUM": "/nonexistent/chromium",
                                                         "PATH": str(empty_path)})
    try:
        async with httpx.AsyncClient(base_url=handle.url, headers=handle.headers, timeout=30) as client:
            r = await client.post("/browsers", json={})
            assert r.status_code == 200, r.text
            sid = r.json()["session_id"]
            with pytest.raises(websockets.InvalidStatus) as refused_cdp:
                await websockets.connect(r.json()["cdp_ws_url"])
            assert refused_cdp.value.response.status_code == 503
            assert b"apt-get install chromium" in refused_cdp.value.response.body

            for method, path in (("POST", "computer/screenshot"), ("POST", "replays")):
                refused = await client.request(method, f"/browsers/{sid}/{path}", json={})
                assert refused.status_code == 503, refused.text
                assert refused.json()["code"] == "browser_unavailable"
                assert "apt-get install chromium" in refused.json()["message"]
            assert (await client.get(f"/browsers/{sid}/replays")).json() == []

            headful = await client.post("/browsers", json={"headless": False})
            assert headful.status_code == 400
            assert headful.json()["details"][0]["message"].startswith("headless")
            assert "Xvfb" in headful.json()["message"]
            # refused before anything was created: no half-made session is left behind
            assert (await client.get("/browsers", params={"status": "all"})).json()[0]["session_id"] == sid
            assert len((await client.get("/browsers", params={"status": "all"})).json()) == 1
            assert (await client.delete(f"/browsers/{sid}")).status_code == 204
    finally:
        stop_service(handle)


def test_chromium_gets_a_short_tmpdir_when_the_inherited_one_is_too_long() -> None:
    # Chromium dies ("Socket path too long") when $TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket passes
    # the Unix socket limit: a service started under a deep temporary directory must still have browsers.
    from bbrowse.service.chromium_command import chromium_tmpdir_parent

    assert chromium_tmpdir_parent("/tmp/" + "d" * 40) == "/tmp"
    assert chromium_tmpdir_parent("/tmp/short/") == "/tmp/short"
    assert chromium_tmpdir_parent("") == "/tmp"  # unset: where Chromium would go itself


def test_chromium_leaves_nothing_in_the_temporary_directory(tmp_path_factory) -> None:
    """A killed Chromium never removes the `org.chromium.Chromium.XXXXXX` directory it made for its singleton
    socket: each session left one behind in /tmp, forever. Each Chromium now runs with a TMPDIR of its own,
    removed with it."""
    temporary = Path(tempfile.mkdtemp(prefix="bb-", dir="/tmp"))  # short, as Chromium's socket needs
    # Without a sandbox: in one, Chromium's TMPDIR is the sandbox's own /tmp, gone with it.
    handle = start_service(tmp_path_factory.mktemp("tmpdir-state"),
                           extra_env={"TMPDIR": str(temporary), "BBROWSE_NO_SANDBOX": "1"})
    try:
        with httpx.Client(base_url=handle.url, headers=handle.headers, timeout=60) as http:
            created = http.post("/browsers", json={})
            assert created.status_code == 200, created.text
            ours = list(temporary.iterdir())
            assert len(ours) == 1 and ours[0].name.startswith("bbrowse-chromium-"), ours
            assert any(path.name.startswith("org.chromium.Chromium.") and (path / "SingletonSocket").exists()
                       for path in ours[0].iterdir()), list(ours[0].iterdir())  # Chromium took it as its TMPDIR
            assert http.delete(f"/browsers/{created.json()['session_id']}").status_code == 204
        assert list(temporary.iterdir()) == []
    finally:
        stop_service(handle)
        shutil.rmtree(temporary, ignore_errors=True)


def test_a_sigkilled_services_chromium_directories_are_swept_at_the_next_start(tmp_path_factory) -> None:
    """A SIGKILLed service cannot remove its Chromiums' TMPDIRs; the next service started there does, and leaves
    alone those of a service that runs (its lock is held) and other files."""
    temporary = Path(tempfile.mkdtemp(prefix="bb-", dir="/tmp"))
    env = {"TMPDIR": str(temporary), "BBROWSE_NO_SANDBOX": "1"}  # in a sandbox, Chromium's TMPDIR is its /tmp
    running = ChromiumTmpdir(str(temporary))  # a directory of a service that still runs (this process)
    (temporary / "someone-elses-file").write_text("kept")
    first = start_service(tmp_path_factory.mktemp("sweep-state"), extra_env=env)
    second = None
    try:
        with httpx.Client(base_url=first.url, headers=first.headers, timeout=60) as http:
            created = http.post("/browsers", json={})
            assert created.status_code == 200, created.text
        [left] = {p for p in temporary.glob("bbrowse-chromium-*")} - {Path(running.path)}  # the session's
        os.kill(first.pid, signal.SIGKILL)
        first.process.wait(10)
        assert left.is_dir()  # nobody removed it

        second = start_service(tmp_path_factory.mktemp("sweep-state-2"), extra_env=env)
        assert not left.exists()
        assert Path(running.path).is_dir() and (temporary / "someone-elses-file").read_text() == "kept"
        log = (second.state_dir / "service" / "logs" / "bbrowse.log").read_text()
        assert f"removed 1 Chromium temporary directories left in {temporary}" in log
    finally:
        for handle in (first, second):
            if handle is not None:
                stop_service(handle)
        running.remove()
        shutil.rmtree(temporary, ignore_errors=True)


def test_the_sweep_takes_only_directories_whose_service_is_gone(tmp_path) -> None:
    """Gone: the process holding the lock was SIGKILLed, or a directory of an older version (no lock file) is
    an hour old. Kept: a held lock, a new directory without a lock file (being made), anything else."""
    parent = str(tmp_path)
    held = ChromiumTmpdir(parent)
    maker = subprocess.Popen(
        [sys.executable, "-c", "import sys; from bbrowse.service.chromium_tmpdir import ChromiumTmpdir as T; "
         "print(T(sys.argv[1]).path, flush=True); sys.stdin.read()", parent],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    killed = Path(maker.stdout.readline().strip())
    assert sweep(parent) == 0 and killed.is_dir()  # its maker still holds the lock
    maker.kill()
    maker.wait(10)
    old, new = tmp_path / "bbrowse-chromium-old00000", tmp_path / "bbrowse-chromium-new00000"
    old.mkdir()
    new.mkdir()
    os.utime(old, (time.time() - UNOWNED_AFTER_SECONDS - 60,) * 2)
    (tmp_path / "bbrowse-chromium-a-file").write_text("not a directory")
    (tmp_path / "other").mkdir()

    assert sweep(parent) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["bbrowse-chromium-a-file", "other", new.name, Path(held.path).name])
    held.remove()
    assert not Path(held.path).exists()
