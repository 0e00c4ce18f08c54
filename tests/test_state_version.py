"""State that survives an upgrade: `session.json` and `serve.json` carry a format version, and a record of
a version this bbrowse does not know is skipped with one clear line in the service log, never a crash."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time

import httpx
from conftest import start_service, stop_service

from bbrowse import launcher
from bbrowse.discovery import DISCOVERY_VERSION, unknown_version_note

NO_CHROMIUM = {"BBROWSE_CHROMIUM": "/nonexistent/chromium"}
FUTURE = {"version": 99, "session_id": "future0000000000000000000", "written_by": "bbrowse 9",
          "request": {"shape": "unknown"}}


def record(sid: str, **extra) -> dict:
    return {"session_id": sid, "request": {"headless": True, "timeout_seconds": 600, "stealth": False},
            "created_at": "2026-01-02T03:04:05+00:00", "deleted_at": None, **extra}


def test_a_session_record_of_an_unknown_version_is_skipped_and_logged(tmp_path):
    sessions = tmp_path / "state" / "service" / "sessions"
    future, legacy, current = "future0000000000000000000", "legacy0000000000000000000", "current000000000000000000"
    for sid, body in ((future, FUTURE), (legacy, record(legacy)), (current, record(current, version=1))):
        (sessions / sid).mkdir(parents=True)
        (sessions / sid / "session.json").write_text(json.dumps(body))
    future_bytes = (sessions / future / "session.json").read_bytes()
    clock = tmp_path / "clock"
    clock.write_text(str(time.time() + 365 * 86400))  # a year on: retention at start would take anything ended

    handle = start_service(tmp_path / "state", extra_env={**NO_CHROMIUM, "BBROWSE_CLOCK_FILE": str(clock)})
    try:
        with httpx.Client(base_url=handle.url, headers=handle.headers, timeout=30) as http:
            assert http.get(f"/browsers/{future}").status_code == 404
            assert http.get(f"/browsers/{legacy}").status_code == 200  # no version: the first format
            assert http.get(f"/browsers/{current}").status_code == 200
            created = http.post("/browsers", json={}).json()["session_id"]
            assert json.loads((sessions / created / "session.json").read_text())["version"] == 1
        log = (handle.state_dir / "service" / "logs" / "bbrowse.log").read_text()
        lines = [line for line in log.splitlines() if future in line and "bbrowse.access" not in line]
        assert len(lines) == 1, lines
        assert "format version 99, which this bbrowse does not read (it reads 1)" in lines[0]
        assert "skipped and left on disk" in lines[0]
        assert "Traceback" not in log
        assert (sessions / future / "session.json").read_bytes() == future_bytes  # left exactly as it was
    finally:
        stop_service(handle)


def test_a_discovery_file_of_an_unknown_version_is_ignored_by_the_app_and_replaced_by_a_service(
    tmp_path, monkeypatch, caplog
):
    state = tmp_path / "state"
    state.mkdir()
    discovery = state / "serve.json"
    newer = {"version": 7, "url": "http://127.0.0.1:9", "pid": os.getpid(), "token": "x", "socket": "/run/x"}
    discovery.write_text(json.dumps(newer))
    monkeypatch.setenv("BBROWSE_STATE_DIR", str(state))

    with caplog.at_level(logging.WARNING, logger="bbrowse.discovery"):
        assert launcher.read_discovery() is None  # the app would start its own service, not misread this one
    assert [r.getMessage() for r in caplog.records] == [
        f"{discovery} has format version 7, which this bbrowse does not read (it reads 1); ignored"]
    assert unknown_version_note(discovery).startswith(f"{discovery} has format version 7")

    # a service started there says so in its log, once, and writes its own, current file
    env = {**os.environ, **NO_CHROMIUM, "BBROWSE_STATE_DIR": str(state)}
    env.pop("KERNEL_BASE_URL", None)
    env.pop("KERNEL_API_KEY", None)
    proc = subprocess.Popen([sys.executable, "-m", "bbrowse", "serve", "--port", "0"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        info = None
        while time.monotonic() < deadline and proc.poll() is None:
            info = launcher.read_discovery()
            if info and info.get("pid") == proc.pid:
                break
            time.sleep(0.05)
        assert info is not None and info["pid"] == proc.pid, proc.poll()
        assert info["version"] == DISCOVERY_VERSION
        log = (state / "service" / "logs" / "bbrowse.log").read_text()
        assert log.count("has format version 7") == 1
        assert f"replaced by this service's (pid {proc.pid})" in log
    finally:
        proc.terminate()
        proc.wait(15)
