"""Screenshot latency at the client against raw CDP, and session create -> first screenshot.

Run on purpose, not in the test suite:

    .venv/bin/python bench/bench_screenshot.py [--count 50] [--creates 5]

It starts its own `bbrowse serve` (a separate process, state in a temporary directory) and measures:

1. create -> first screenshot: `POST /browsers` then `POST .../computer/screenshot` until the PNG is
   at the client, `--creates` times (each session deleted after), median and max; the create alone too.
2. screenshot p50/p90 of `--count` at an httpx client (keep-alive, bytes received), interleaved with
   the baseline in the same run: `Page.captureScreenshot` with the same parameters sent directly over
   CDP (plain websockets, attached to the same tab, base64 decoded), on the same page: once a page of
   text, boxes and a gradient, once about:blank (where the service's fixed cost shows most), at the
   default 1280x800 viewport. Target: ratio of p50s <= 1.3.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import start_service, stop_service  # noqa: E402

PAGE = "data:text/html," + quote(
    "<title>bench</title><body style='font:16px serif;margin:24px;"
    "background:linear-gradient(135deg,#fff,#9cf)'>"
    + "".join(
        f"<h2>Section {i}</h2><p>{'The quick brown fox jumps over the lazy dog. ' * 6}</p>"
        f"<div style='display:inline-block;width:120px;height:40px;background:hsl({i * 37 % 360},70%,60%)'></div>"
        for i in range(12)
    )
)


class RawCDP:
    """The baseline: one WebSocket to the browser, a flattened session on its page, nothing else."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.ids = itertools.count(1)

    @classmethod
    async def attach(cls, url: str) -> tuple[RawCDP, str]:
        cdp = cls(await websockets.connect(url, max_size=None, compression=None))
        targets = (await cdp.call("Target.getTargets"))["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        session = (await cdp.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}))
        return cdp, session["sessionId"]

    async def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        msg_id = next(self.ids)
        message = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        await self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(await self.ws.recv())
            if reply.get("id") == msg_id:
                return reply["result"]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def compare(http: httpx.AsyncClient, name: str, url: str, count: int) -> None:
    """Screenshots through the service vs raw CDP, interleaved, on one session showing `url`."""
    r = await http.post("/browsers", json={"start_url": url})
    sid, cdp_url = r.json()["session_id"], r.json()["cdp_ws_url"]
    raw, page_session = await RawCDP.attach(cdp_url)
    ours, theirs, size = [], [], 0
    for i in range(count + 5):
        t0 = time.perf_counter()
        shot = await http.post(f"/browsers/{sid}/computer/screenshot", json={})
        t1 = time.perf_counter()
        data = base64.b64decode((await raw.call("Page.captureScreenshot", {"format": "png"}, page_session))["data"])
        t2 = time.perf_counter()
        assert shot.status_code == 200
        if i >= 5:  # warm-up excluded
            ours.append(t1 - t0)
            theirs.append(t2 - t1)
            size = len(data)
    await raw.ws.close()
    await http.delete(f"/browsers/{sid}")
    p50_ours, p50_raw = statistics.median(ours), statistics.median(theirs)
    print(f"{name} ({count} shots, PNG {size // 1024} KiB):")
    print(f"  screenshot over HTTP:      p50 {p50_ours * 1000:.1f} ms, p90 {pct(ours, 0.9) * 1000:.1f} ms")
    print(f"  raw CDP captureScreenshot: p50 {p50_raw * 1000:.1f} ms, p90 {pct(theirs, 0.9) * 1000:.1f} ms")
    print(f"  ratio of p50s: {p50_ours / p50_raw:.2f} (target <= 1.3)")


async def main(count: int, creates: int) -> None:
    print("load before:", os.getloadavg())
    handle = start_service(Path(tempfile.mkdtemp(prefix="bbrowse-bench-")))
    try:
        async with httpx.AsyncClient(base_url=handle.url, headers=handle.headers, timeout=60) as http:
            create_only, to_first = [], []
            for _ in range(creates):
                started = time.perf_counter()
                r = await http.post("/browsers", json={})
                created = time.perf_counter()
                sid = r.json()["session_id"]
                shot = await http.post(f"/browsers/{sid}/computer/screenshot", json={})
                assert shot.status_code == 200 and shot.content[:4] == b"\x89PNG", shot.text
                to_first.append(time.perf_counter() - started)
                create_only.append(created - started)
                await http.delete(f"/browsers/{sid}")
            print(f"create -> first screenshot: median {statistics.median(to_first) * 1000:.0f} ms, "
                  f"max {max(to_first) * 1000:.0f} ms (create alone median "
                  f"{statistics.median(create_only) * 1000:.0f} ms) over {creates}; target <= 1500 ms")

            for name, url in (("text page", PAGE), ("blank page", "about:blank")):
                await compare(http, name, url, count)
    finally:
        stop_service(handle)
        print("load after:", os.getloadavg())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--creates", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.count, args.creates))
