"""What a session's sandbox costs: session create -> first screenshot, and a spawn, sandboxed vs not.

Two real `bbrowse serve` in the same run, one sandboxing its sessions (the default) and one with
`--no-sandbox` (the baseline: sessions as they ran before the sandbox). Creates alternate between the
two so that load drifts hit both alike.

- create -> first screenshot: `POST /browsers`, then `POST /computer/screenshot` until a PNG comes back.
- spawn: `POST /process/spawn` of `true` until its answer (the child has exec'd), pipes and PTY; and
  `POST /process/exec` of `true` until its exit code (spawn, run, exit, reap).

    .venv/bin/python bench/bench_sandbox.py                     # 5 creates, 100 spawns each
    .venv/bin/python bench/bench_sandbox.py --creates 9 --spawns 300
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import start_service, stop_service  # noqa: E402

TARGET_CREATE_RATIO = 1.10
TARGET_SPAWN_EXTRA_MS = 10.0


async def create_to_screenshot(http: httpx.AsyncClient) -> tuple[float, str]:
    started = time.perf_counter()
    r = await http.post("/browsers", json={"timeout_seconds": 120})
    r.raise_for_status()
    sid = r.json()["session_id"]
    shot = await http.post(f"/browsers/{sid}/computer/screenshot", json={})
    elapsed = time.perf_counter() - started
    assert shot.status_code == 200 and shot.content.startswith(b"\x89PNG"), shot.text[:200]
    return elapsed, sid


async def spawns(http: httpx.AsyncClient, sid: str, count: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {"spawn (pipes)": [], "spawn (pty)": [], "exec true": []}
    for _ in range(count):
        for tty in (False, True):
            started = time.perf_counter()
            r = await http.post(f"/browsers/{sid}/process/spawn", json={"command": "true", "allocate_tty": tty})
            found["spawn (pty)" if tty else "spawn (pipes)"].append(time.perf_counter() - started)
            r.raise_for_status()
        started = time.perf_counter()
        r = await http.post(f"/browsers/{sid}/process/exec", json={"command": "true"})
        found["exec true"].append(time.perf_counter() - started)
        assert r.json()["exit_code"] == 0
    return found


def ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def run(creates: int, count: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        sandboxed = start_service(Path(tmp) / "sandboxed")
        plain = start_service(Path(tmp) / "plain", extra_env={"BBROWSE_NO_SANDBOX": "1"})
        services = {"sandbox": sandboxed, "no sandbox": plain}
        try:
            clients = {name: httpx.AsyncClient(base_url=s.url, headers=s.headers, timeout=120)
                       for name, s in services.items()}
            print(f"load average {os.getloadavg()[0]:.2f}; {creates} creates and {count} spawns each")
            created: dict[str, list[float]] = {name: [] for name in services}
            sessions: dict[str, list[str]] = {name: [] for name in services}
            for name, http in clients.items():  # warm-up: Chromium's files in the page cache
                sessions[name].append((await create_to_screenshot(http))[1])
            for _ in range(creates):
                for name, http in clients.items():
                    elapsed, sid = await create_to_screenshot(http)
                    created[name].append(elapsed)
                    sessions[name].append(sid)
            spawned = {name: await spawns(http, sessions[name][0], count) for name, http in clients.items()}
            for name, http in clients.items():
                for sid in sessions[name]:
                    await http.delete(f"/browsers/{sid}")
                await http.aclose()
            print(f"{'':<34}{'sandbox':>12}{'no sandbox':>12}")
            c_sb, c_plain = ms(created["sandbox"]), ms(created["no sandbox"])
            print(f"{'create -> first screenshot p50':<34}{c_sb:>10.0f}ms{c_plain:>10.0f}ms   ratio "
                  f"{c_sb / c_plain:.2f} (target <= {TARGET_CREATE_RATIO:.2f})")
            for kind in spawned["sandbox"]:
                s_sb, s_plain = ms(spawned["sandbox"][kind]), ms(spawned["no sandbox"][kind])
                print(f"{kind + ' p50':<34}{s_sb:>10.2f}ms{s_plain:>10.2f}ms   +{s_sb - s_plain:.2f} ms "
                      f"(target <= +{TARGET_SPAWN_EXTRA_MS:.0f} ms)")
            print(f"load average {os.getloadavg()[0]:.2f}")
        finally:
            for handle in services.values():
                stop_service(handle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--creates", type=int, default=5)
    parser.add_argument("--spawns", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(run(args.creates, args.spawns))


if __name__ == "__main__":
    main()
