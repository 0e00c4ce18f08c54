"""`bbrowse screenshot` and `bbrowse replays` against a real service with a real Chromium (and ffmpeg), run in the
test's process (`bb_here`): the subject is the commands' code."""

from __future__ import annotations

import io
import json
import re
import shutil

import pytest
from cli_support import assert_one_line_error, bb_here
from PIL import Image

pytestmark = pytest.mark.chromium

needs_chromium = pytest.mark.skipif(
    not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")), reason="no Chromium"
)


@needs_chromium
def test_screenshot_default_name_output_file_region_and_stdout(service, session_id, tmp_path):
    result = bb_here(service, "screenshot", session_id, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    saved = result.stdout.decode().strip()
    assert re.fullmatch(rf"screenshot-{session_id}-\d{{8}}-\d{{6}}\.png", saved), saved
    full = Image.open(tmp_path / saved)
    assert full.format == "PNG" and full.width >= 100 and full.height >= 100

    target = tmp_path / "part.png"
    result = bb_here(service, "screenshot", session_id, "--region", "10,20,120,80", "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().strip() == str(target)
    assert Image.open(target).size == (120, 80)

    piped = bb_here(service, "screenshot", session_id, "-o", "-", "-r", "0,0,64,32")
    assert Image.open(io.BytesIO(piped.stdout)).size == (64, 32)


@needs_chromium
def test_screenshot_errors(service, session_id, tmp_path):
    line = assert_one_line_error(bb_here(service, "screenshot", session_id, "--region", "0,0,100000,10",
                                    "-o", str(tmp_path / "x.png")), "bad_request", 400)
    assert "region" in line
    assert not (tmp_path / "x.png").exists()
    assert_one_line_error(bb_here(service, "screenshot", session_id, "--region", "1,2,3"), "usage", exit_code=2)
    unwritable = bb_here(service, "screenshot", session_id, "-o", str(tmp_path / "no" / "dir.png"))
    assert_one_line_error(unwritable, "local_io")


@needs_chromium
def test_replays_start_list_stop_download(service, session_id, tmp_path):
    assert bb_here(service, "replays", session_id, "list", "--json").stdout.strip() == b"[]"

    started = bb_here(service, "replays", session_id, "start", "--framerate", "5")
    assert started.returncode == 0, started.stderr
    replay_id = started.stdout.decode().strip()

    table = bb_here(service, "replays", session_id).stdout.decode().splitlines()
    assert table[0].split()[:2] == ["REPLAY", "ID"]
    assert replay_id in table[1] and "recording" in table[1]

    assert_one_line_error(bb_here(service, "replays", session_id, "start"), "conflict", 409)

    stopped = bb_here(service, "replays", session_id, "stop")  # no id: the one recording
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.decode().strip() == replay_id
    assert_one_line_error(bb_here(service, "replays", session_id, "stop"), "not_found")

    listed = json.loads(bb_here(service, "replays", session_id, "list", "--json").stdout)
    assert [r["replay_id"] for r in listed] == [replay_id] and listed[0]["finished_at"]

    downloaded = bb_here(service, "replays", session_id, "download", replay_id, cwd=tmp_path)
    assert downloaded.returncode == 0, downloaded.stderr
    video = tmp_path / downloaded.stdout.decode().strip()
    assert video.name == f"replay-{replay_id}.mp4"
    assert video.read_bytes()[4:8] == b"ftyp"
    assert not list(tmp_path.glob("*.part"))

    out = tmp_path / "named.mp4"
    assert bb_here(service, "replays", session_id, "download", replay_id, "-o", str(out)).returncode == 0
    assert out.read_bytes() == video.read_bytes()

    assert_one_line_error(bb_here(service, "replays", session_id, "download", "no-such-replay", "-o",
                             str(tmp_path / "missing.mp4")), "not_found", 404)
    assert not (tmp_path / "missing.mp4").exists() and not list(tmp_path.glob("*.part"))


@pytest.fixture(scope="module")
def browserless_service(tmp_path_factory):
    """A second service whose Chromium does not exist: sessions work, their browser does not."""
    from conftest import start_service, stop_service

    handle = start_service(tmp_path_factory.mktemp("browserless"), {"BBROWSE_CHROMIUM": "/nonexistent/chromium"})
    yield handle
    stop_service(handle)


def test_screenshot_without_a_browser_is_one_line_browser_unavailable(browserless_service, tmp_path):
    sid = bb_here(browserless_service, "new").stdout.decode().strip()
    assert sid
    line = assert_one_line_error(bb_here(browserless_service, "screenshot", sid, "-o", str(tmp_path / "x.png")),
                                 "browser_unavailable", 503)
    assert len(line) > len("error: browser_unavailable (503): ")
    assert not (tmp_path / "x.png").exists()
