"""`bbrowse events`: one line per event, filters, JSON Lines, and following until the session ends
(on the browserless service: control events need no Chromium)."""

from __future__ import annotations

import json
import subprocess
import time

import httpx
from cli_support import BBROWSE, bb_here, cli_env


def test_events_lists_filters_and_follows_until_the_session_ends(browserless_service) -> None:
    service = browserless_service
    with httpx.Client(base_url=service.url, headers=service.headers, timeout=30) as http:
        platform = {"browser": {"platform": {"enabled": True}}}  # process calls are platform_api_call, as on Kernel
        sid = http.post("/browsers", json={"timeout_seconds": 120, "telemetry": platform}).json()["session_id"]
        for _ in range(3):
            assert http.post(f"/browsers/{sid}/process/exec", json={"command": "true"}).status_code == 200

        listed = bb_here(service, "events", sid)
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.decode().splitlines()
        assert len(lines) == 3
        assert all("platform_api_call" in line and "ProcessExec → 200" in line for line in lines)
        only = bb_here(service, "events", sid, "--json", "-c", "connection")
        assert only.returncode == 0 and only.stdout == b""
        bad = bb_here(service, "events", sid, "--since", "soon")
        assert bad.returncode == 2 and b"--since" in bad.stderr

        follower = subprocess.Popen([*BBROWSE, "events", sid, "-f", "--since", "2", "--json"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(service))
        try:
            deadline = time.monotonic() + 30
            seen: list[int] = []
            assert follower.stdout is not None
            while len(seen) < 2:
                assert time.monotonic() < deadline, "the follower printed nothing"
                seen.append(json.loads(follower.stdout.readline())["seq"])
            http.post(f"/browsers/{sid}/process/exec", json={"command": "true"})
            http.delete(f"/browsers/{sid}")
            out, err = follower.communicate(timeout=30)
        finally:
            follower.kill()
        seen += [json.loads(line)["seq"] for line in out.decode().splitlines()]
        assert follower.returncode == 0, err
        assert seen == [2, 3, 4]  # from seq 2, the one made while following, no duplicate, then the end
