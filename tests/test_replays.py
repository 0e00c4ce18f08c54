"""Replays over real HTTP: a real Chromium screencast encoded by a real ffmpeg into an MP4.

One session is shared by the tests that record in turn (one recording at a time is the rule they
also check); the tests about deletion make their own session.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import struct
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from browser_support import browser_process, needs_chromium

from bbrowse.service.errors import ServiceError
from bbrowse.service.replay_view import ReplayTokens

pytestmark = [
    pytest.mark.chromium,
    needs_chromium,
    pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg (apt-get install ffmpeg)"),
]

# A page that changes every frame, so the screencast has something to send.
ANIMATED = ("data:text/html,<title>clock</title><body style='margin:0;font:80px monospace'>"
            "<div id=t></div><script>(function f(){t.textContent=performance.now().toFixed(0);"
            "requestAnimationFrame(f)})()</script>")
VIEWPORT = {"width": 640, "height": 360}


def ffprobe(path: Path) -> dict:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
         "-show_entries", "stream=codec_name,width,height,nb_read_frames,pix_fmt:format=duration,format_name",
         "-of", "json", str(path)],
        capture_output=True, text=True, timeout=60, check=True,
    )
    info = json.loads(out.stdout)
    return {**info["streams"][0], **info["format"]}


def top_level_boxes(data: bytes) -> list[str]:
    """The MP4's top-level box types in file order (faststart puts `moov` before `mdat`)."""
    boxes, offset = [], 0
    while offset + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[offset:offset + 8])
        if size == 1:
            size = struct.unpack(">Q", data[offset + 8:offset + 16])[0]
        boxes.append(kind.decode("latin-1"))
        if size < 8:
            break
        offset += size
    return boxes


async def view_url(http: httpx.AsyncClient, sid: str, replay_id: str) -> str:
    listed = (await http.get(f"/browsers/{sid}/replays")).json()
    return next(r["replay_view_url"] for r in listed if r["replay_id"] == replay_id)


async def download(http: httpx.AsyncClient, sid: str, replay_id: str) -> httpx.Response:
    """The replay's video, following 202 + Retry-After while it is being finalised (bounded)."""
    deadline = time.monotonic() + 60
    while True:
        r = await http.get(f"/browsers/{sid}/replays/{replay_id}")
        if r.status_code != 202:
            return r
        assert time.monotonic() < deadline, "replay never finished finalising"
        await asyncio.sleep(float(r.headers["Retry-After"]))


@pytest.fixture(scope="module")
async def sid(http: httpx.AsyncClient) -> AsyncIterator[str]:
    r = await http.post("/browsers", json={"start_url": ANIMATED, "viewport": VIEWPORT, "timeout_seconds": 600})
    assert r.status_code == 200, r.text
    yield r.json()["session_id"]
    await http.delete(f"/browsers/{r.json()['session_id']}")


@pytest.fixture(scope="module")
async def recorded(http: httpx.AsyncClient, sid: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One ~2 s recording, stopped and downloaded: the replay as listed, and the file."""
    started = await http.post(f"/browsers/{sid}/replays", json={"framerate": 10})
    assert started.status_code == 201, started.text
    replay = started.json()
    # While it records, a second recording is refused.
    second = await http.post(f"/browsers/{sid}/replays", json={})
    assert second.status_code == 409 and second.json()["code"] == "conflict", second.text
    await asyncio.sleep(2.0)  # the length of the recording
    stopped = await http.post(f"/browsers/{sid}/replays/{replay['replay_id']}/stop")
    assert stopped.status_code == 200, stopped.text
    video = await download(http, sid, replay["replay_id"])
    assert video.status_code == 200, video.text
    path = tmp_path_factory.mktemp("replays") / "replay.mp4"
    path.write_bytes(video.content)
    return {"replay": replay, "path": path, "response": video}


async def test_replay_is_a_faststart_h264_mp4_of_the_recording(recorded: dict) -> None:
    assert recorded["response"].headers["content-type"] == "video/mp4"
    info = ffprobe(recorded["path"])
    assert info["codec_name"] == "h264" and info["pix_fmt"] == "yuv420p"
    assert (info["width"], info["height"]) == (640, 360)
    assert float(info["duration"]) > 1.0 and int(info["nb_read_frames"]) > 10
    boxes = top_level_boxes(recorded["path"].read_bytes())
    assert boxes.index("moov") < boxes.index("mdat"), boxes


async def test_replays_list_shows_the_recording(http: httpx.AsyncClient, sid: str, recorded: dict) -> None:
    r = await http.get(f"/browsers/{sid}/replays")
    assert r.status_code == 200
    listed = {item["replay_id"]: item for item in r.json()}
    item = listed[recorded["replay"]["replay_id"]]
    assert item["started_at"] < item["finished_at"]
    view = urlsplit(item["replay_view_url"])
    query = parse_qs(view.query)
    assert view.path == "/replay-view" and query["replay_id"] == [item["replay_id"]] and query["jwt"]


async def test_replay_view_url_plays_without_a_bearer_token(http: httpx.AsyncClient, sid: str, recorded: dict) -> None:
    url = await view_url(http, sid, recorded["replay"]["replay_id"])
    async with httpx.AsyncClient(timeout=30) as anonymous:
        page = await anonymous.get(url)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "<video" in page.text
        src = page.text.split('<video src="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
        video = await anonymous.get(httpx.URL(url).join(src))
        assert video.status_code == 200 and video.headers["content-type"] == "video/mp4"
        assert video.content == recorded["path"].read_bytes()
        part = await anonymous.get(httpx.URL(url).join(src), headers={"Range": "bytes=0-99"})
        assert part.status_code == 206 and part.content == video.content[:100]


async def test_replay_view_refuses_bad_tokens_with_401(http: httpx.AsyncClient, sid: str, recorded: dict) -> None:
    url = httpx.URL(await view_url(http, sid, recorded["replay"]["replay_id"]))
    replay_id, token = url.params["replay_id"], url.params["jwt"]
    header, payload, signature = token.split(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    other = await http.post(f"/browsers/{sid}/replays", json={"max_duration_in_seconds": 1})
    assert other.status_code == 201, other.text
    other_token = httpx.URL(other.json()["replay_view_url"]).params["jwt"]
    await http.post(f"/browsers/{sid}/replays/{other.json()['replay_id']}/stop")
    base = url.copy_with(query=None)
    cases = {
        "tampered signature": {"replay_id": replay_id, "jwt": f"{header}.{payload}.{flipped}"},
        "another replay's token": {"replay_id": replay_id, "jwt": other_token},
        "no token": {"replay_id": replay_id},
        "not a token": {"replay_id": replay_id, "jwt": "garbage"},
    }
    async with httpx.AsyncClient(timeout=30) as anonymous:
        for case, params in cases.items():
            for path in ("/replay-view", "/replay-view/video"):
                r = await anonymous.get(base.copy_with(path=path, query=urlencode(params).encode()))
                assert r.status_code == 401, (case, path, r.text)
                assert r.json()["code"] == "unauthorized", (case, r.json())


def test_expired_replay_token_is_refused() -> None:
    tokens = ReplayTokens()
    expired = tokens.sign("session", "replay", ttl_seconds=-10)
    with pytest.raises(ServiceError) as caught:
        tokens.verify(expired, "replay")
    assert caught.value.status == 401 and "expired" in caught.value.message
    assert tokens.verify(tokens.sign("session", "replay"), "replay") == "session"


async def test_max_duration_ends_the_recording(http: httpx.AsyncClient, sid: str, tmp_path: Path) -> None:
    started = await http.post(f"/browsers/{sid}/replays", json={"framerate": 5, "max_duration_in_seconds": 1})
    assert started.status_code == 201, started.text
    replay_id = started.json()["replay_id"]
    video = await download(http, sid, replay_id)  # 202 while recording, then the finished file
    assert video.status_code == 200
    (tmp_path / "short.mp4").write_bytes(video.content)
    assert 0.8 <= float(ffprobe(tmp_path / "short.mp4")["duration"]) <= 2.0
    listed = {r["replay_id"]: r for r in (await http.get(f"/browsers/{sid}/replays")).json()}
    assert listed[replay_id]["finished_at"]


async def test_unknown_replay_is_404(http: httpx.AsyncClient, sid: str) -> None:
    for r in (await http.get(f"/browsers/{sid}/replays/3f0e4a5e-0000-4000-8000-000000000000"),
              await http.post(f"/browsers/{sid}/replays/3f0e4a5e-0000-4000-8000-000000000000/stop")):
        assert r.status_code == 404 and r.json()["code"] == "not_found"


async def test_bad_replay_request_is_400(http: httpx.AsyncClient, sid: str) -> None:
    r = await http.post(f"/browsers/{sid}/replays", json={"framerate": 0})
    assert r.status_code == 400
    assert r.json()["details"][0]["message"].startswith("framerate")


async def test_official_sdk_starts_lists_stops_and_downloads(sdk, sid: str, tmp_path: Path) -> None:
    started = sdk.browsers.replays.start(sid, framerate=10)
    assert started.replay_id and started.replay_view_url
    assert started.replay_id in [r.replay_id for r in sdk.browsers.replays.list(sid)]
    await asyncio.sleep(1.2)  # the length of the recording
    sdk.browsers.replays.stop(started.replay_id, id_or_name=sid)
    listed = {r.replay_id: r for r in sdk.browsers.replays.list(sid)}
    assert listed[started.replay_id].finished_at is not None
    video = sdk.browsers.replays.download(started.replay_id, id_or_name=sid)
    (tmp_path / "sdk.mp4").write_bytes(video.read())
    assert float(ffprobe(tmp_path / "sdk.mp4")["duration"]) > 1.0


async def test_deleting_the_session_finalises_and_keeps_its_replays(http: httpx.AsyncClient, tmp_path: Path) -> None:
    sid = (await http.post("/browsers", json={"start_url": ANIMATED, "viewport": VIEWPORT})).json()["session_id"]
    replay = (await http.post(f"/browsers/{sid}/replays", json={"framerate": 10})).json()
    await asyncio.sleep(1.5)  # the length of the recording
    assert (await http.delete(f"/browsers/{sid}")).status_code == 204  # while still recording

    listed = await http.get(f"/browsers/{sid}/replays")
    assert listed.status_code == 200
    [item] = listed.json()
    assert item["replay_id"] == replay["replay_id"] and item["finished_at"]
    video = await download(http, sid, replay["replay_id"])
    assert video.status_code == 200 and video.headers["content-type"] == "video/mp4"
    (tmp_path / "kept.mp4").write_bytes(video.content)
    assert float(ffprobe(tmp_path / "kept.mp4")["duration"]) > 1.0
    async with httpx.AsyncClient(timeout=30) as anonymous:
        assert (await anonymous.get(item["replay_view_url"])).status_code == 200
    # A deleted session records nothing new.
    again = await http.post(f"/browsers/{sid}/replays", json={})
    assert again.status_code == 410 and again.json()["code"] == "session_gone"


async def test_chromium_dying_mid_recording_keeps_the_replay_and_recovers(
    http: httpx.AsyncClient, service, tmp_path: Path
) -> None:
    sid = (await http.post("/browsers", json={"start_url": ANIMATED, "viewport": VIEWPORT})).json()["session_id"]
    try:
        replay = (await http.post(f"/browsers/{sid}/replays", json={"framerate": 10})).json()
        await asyncio.sleep(1.5)  # the length of the recording
        browser = browser_process(service, sid)  # in the session's sandbox, or not
        os.kill(browser.pid, signal.SIGKILL)
        browser.wait(10)

        refused = await http.post(f"/browsers/{sid}/replays", json={})
        assert refused.status_code == 503 and refused.json()["code"] == "browser_unavailable", refused.text
        assert "SIGKILL" in refused.json()["message"]
        video = await download(http, sid, replay["replay_id"])  # what was recorded before the crash
        assert video.status_code == 200
        (tmp_path / "crashed.mp4").write_bytes(video.content)
        assert float(ffprobe(tmp_path / "crashed.mp4")["duration"]) > 1.0

        again = await http.post(f"/browsers/{sid}/replays", json={"max_duration_in_seconds": 1})
        assert again.status_code == 201, again.text
        await http.post(f"/browsers/{sid}/replays/{again.json()['replay_id']}/stop")
    finally:
        await http.delete(f"/browsers/{sid}")
