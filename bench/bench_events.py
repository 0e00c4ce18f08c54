"""Telemetry speed (issue 27): an event from Chromium to the client, a 10,000 events/s page, a dropped stream.

1. latency: the page logs `Date.now()` on demand (CDP `Runtime.evaluate`); the time until that console_log
   reaches `client.telemetry.follow` (what the Events tab reads), p50/p95; baseline: the same log seen as
   `Runtime.consoleAPICalled` on a raw CDP connection of our own (Chromium to a client, no service).
2. flood: the page logs 10,000 times a second for `--seconds`; events kept by the service (its last seq)
   vs events the follower received; the service's RSS before and after (bounded memory).
3. resume: during the flood the stream is closed every `--drop-every` events and reopened with
   Last-Event-ID; gaps and duplicates over the whole run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import httpx  # noqa: E402
from conftest import start_service, stop_service  # noqa: E402

from bbrowse.client import BrowserClient  # noqa: E402
from tests.browser_page import PageProbe  # noqa: E402

PAGE = "data:text/html,<h1>bench</h1><script>window.clicks=0</script>"
FLOOD = """(() => { let n = 0; const end = Date.now() + %d;
  const t = setInterval(() => { for (let i = 0; i < 100; i++) console.log('flood', n++);
    if (Date.now() > end) { clearInterval(t); console.log('flood-done', n); } }, 10); return true; })()"""


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def latency(client: BrowserClient, sid: str, probe: PageProbe, count: int) -> list[float]:
    got: dict[str, float] = {}
    stream = client.telemetry.follow(sid, types=["console_log"])
    async with stream:
        async def reader() -> None:
            async for envelope in stream:
                text = (envelope.event.data or {}).get("text", "")
                if str(text).startswith("lat-"):
                    got[text] = time.time() * 1000
        task = asyncio.create_task(reader())
        samples = []
        for i in range(count):
            sent = await probe.evaluate(f"(() => {{ const t = Date.now(); console.log('lat-{i}-' + t); return t; }})()")
            deadline = time.monotonic() + 5
            while f"lat-{i}-{sent}" not in got and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            samples.append(got[f"lat-{i}-{sent}"] - sent)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return samples


async def raw_cdp_latency(probe: PageProbe, count: int) -> list[float]:
    await probe.send("Runtime.enable")
    samples = []
    for i in range(count):
        sent = await probe.evaluate(f"(() => {{ const t = Date.now(); setTimeout(() => console.log('raw-{i}-' + t)); return t; }})()")
        while True:
            message = json.loads(await probe.ws.recv())
            if message.get("method") == "Runtime.consoleAPICalled" and \
                    message["params"]["args"][0].get("value", "").startswith(f"raw-{i}-"):
                samples.append(time.time() * 1000 - sent)
                break
    return samples


async def flood(client: BrowserClient, http: httpx.AsyncClient, sid: str, probe: PageProbe, seconds: float,
                drop_every: int, pid: int) -> dict:
    before = rss_kb(pid)
    start_seq = int((await http.get(f"/browsers/{sid}/telemetry/events", params={"order": "desc", "limit": 1})
                     ).json()[0]["seq"])
    seqs: list[int] = []
    done = asyncio.Event()
    peak = [before]

    async def follow() -> None:
        last = start_seq
        while not done.is_set():
            async with client.telemetry.stream(sid, last_event_id=last) as stream:
                async for envelope in stream:
                    seqs.append(envelope.seq)
                    last = envelope.seq
                    if str((envelope.event.data or {}).get("text", "")).startswith("flood-done"):
                        done.set()
                        return
                    if len(seqs) % drop_every == 0:
                        break  # a forced disconnect: resume with Last-Event-ID

    async def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_kb(pid))
            await asyncio.sleep(0.2)

    started = time.monotonic()
    tasks = [asyncio.create_task(follow()), asyncio.create_task(sample())]
    await probe.evaluate(FLOOD % int(seconds * 1000))
    await asyncio.wait_for(done.wait(), seconds + 60)
    elapsed = time.monotonic() - started
    for task in tasks:
        task.cancel()
    last_kept = int((await http.get(f"/browsers/{sid}/telemetry/events", params={"order": "desc", "limit": 1})
                     ).json()[0]["seq"])
    expected = list(range(start_seq + 1, seqs[-1] + 1))
    return {"kept": last_kept - start_seq, "received": len(seqs), "gaps": len(set(expected) - set(seqs)),
            "duplicates": len(seqs) - len(set(seqs)), "seconds": elapsed, "rss_before_mb": before / 1024,
            "rss_peak_mb": peak[0] / 1024, "rss_after_mb": rss_kb(pid) / 1024,
            "reconnects": len(seqs) // drop_every}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--drop-every", type=int, default=5000)
    args = parser.parse_args()
    handle = start_service(Path(tempfile.mkdtemp(prefix="bench-events-")))
    try:
        async with httpx.AsyncClient(base_url=handle.url, headers=handle.headers, timeout=60) as http:
            on = {"enabled": True}
            r = await http.post("/browsers", json={"timeout_seconds": 600, "telemetry": {"browser": {
                "console": on, "network": on, "page": on}}})
            browser = r.json()
            sid = browser["session_id"]
            client = BrowserClient(handle.url, handle.token)
            await client.sessions.get(sid)  # learn the VM route, as the app does
            async with PageProbe.showing(browser["cdp_ws_url"], PAGE) as probe:
                raw = await raw_cdp_latency(probe, args.count)
                ours = await latency(client, sid, probe, args.count)
                q = lambda s, p: statistics.quantiles(s, n=100)[p - 1]  # noqa: E731
                print(f"latency Chromium -> client.telemetry.follow: p50 {statistics.median(ours):.1f} ms, "
                      f"p95 {q(ours, 95):.1f} ms (target <= 250 ms)")
                print(f"baseline Chromium -> raw CDP client: p50 {statistics.median(raw):.1f} ms, "
                      f"p95 {q(raw, 95):.1f} ms; ratio p50 {statistics.median(ours) / max(statistics.median(raw), 0.01):.1f}x")
                result = await flood(client, http, sid, probe, args.seconds, args.drop_every, handle.pid)
                print("flood:", json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in result.items()}))
            await http.delete(f"/browsers/{sid}")
    finally:
        stop_service(handle)


if __name__ == "__main__":
    asyncio.run(main())
