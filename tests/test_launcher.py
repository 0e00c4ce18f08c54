"""The embedded-service launcher: start, reuse while running, stop only what it started."""

from __future__ import annotations

import os
import stat

import httpx
import pytest

from bbrowse import launcher


@pytest.fixture
def isolated_state(tmp_path, monkeypatch):
    monkeypatch.setenv("BBROWSE_STATE_DIR", str(tmp_path))
    return tmp_path


def test_start_reuse_and_stop(isolated_state) -> None:
    assert launcher.find_running() is None
    started = launcher.start_embedded()
    try:
        assert started.owned and started.url.startswith("http://127.0.0.1:")
        mode = stat.S_IMODE(os.stat(isolated_state / "serve.json").st_mode)
        assert mode == 0o600
        r = httpx.get(f"{started.url}/browsers", headers={"Authorization": f"Bearer {started.token}"})
        assert r.status_code == 200
        reused = launcher.find_or_start()
        assert (reused.url, reused.pid, reused.owned) == (started.url, started.pid, False)
        reused.stop()  # a reused service is not ours to stop
        assert launcher.find_running() is not None
    finally:
        started.stop()
    assert started.process.returncode is not None
    assert launcher.find_running() is None


def test_stale_discovery_file_is_ignored(isolated_state) -> None:
    (isolated_state / "serve.json").write_text('{"url": "http://127.0.0.1:9", "pid": 999999, "token": "x"}')
    assert launcher.find_running() is None
