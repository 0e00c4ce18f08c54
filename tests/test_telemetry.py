"""Telemetry of `bbrowse serve` through the official Kernel SDK 0.131.0, unchanged: create with categories on,
a page that logs, throws and makes failing requests, `events` with filters and paging, `stream` with
`replay=all` and a resume by `Last-Event-ID`, `PATCH`, masking, bad input, a deleted session's events."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.browser_page import PageProbe
from tests.browser_support import needs_chromium

pytestmark = needs_chromium

PAGE = """<!doctype html><title>telemetry page</title><h1>telemetry page</h1><script>
console.log('hello telemetry', 42);
console.log('half a pair: \\ud83d');
console.error('bad thing happened');
fetch('http://127.0.0.1:9/unreachable', {headers: {Authorization: 'Bearer secret-token-xyz'}}).catch(() => {});
setTimeout(() => { throw new Error('boom at step 37'); }, 0);
window.clicks = 0;
</script>"""


def wait_until(probe, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, f"not seen in time: {what}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def recorded(service, pages):
    """A session with console, network and page telemetry whose page has done its bad things."""
    import asyncio

    from kernel import Kernel

    page = pages.url("telemetry-page.html", PAGE)
    k = Kernel(api_key=service.token, base_url=service.url, max_retries=0)
    browser = k.browsers.create(timeout_seconds=300, telemetry={"browser": {
        "console": {"enabled": True}, "network": {"enabled": True}, "page": {"enabled": True}}})

    async def show() -> None:
        async with PageProbe.showing(browser.cdp_ws_url, page):
            pass

    asyncio.run(show())
    wait_until(lambda: any("boom" in (e.event.data.text or "") for e in k.browsers.telemetry.events(
        browser.session_id, category=["console"], type=["console_error"], limit=100)), "the uncaught exception")
    yield k, browser
    k.browsers.delete_by_id(browser.session_id)
    k.close()


def test_sdk_reads_console_network_page_control_and_connection_events(recorded) -> None:
    k, browser = recorded
    assert browser.telemetry is not None and browser.telemetry.browser.console.enabled
    assert browser.telemetry.browser.control.enabled and not browser.telemetry.browser.interaction.enabled
    sid = browser.session_id
    k.browsers.computer.capture_screenshot(sid).read()

    console = list(k.browsers.telemetry.events(sid, category=["console"], limit=100))
    assert {e.event.category for e in console} == {"console"}
    logs = [e.event.data for e in console if e.event.type == "console_log"]
    assert any(d.text == "hello telemetry" and d.args == ["hello telemetry", "42"] and d.level == "log"
               for d in logs)
    assert any(d.text == "half a pair: \ud83d" for d in logs)  # a lone surrogate, as JavaScript strings may hold
    errors = [e.event.data for e in console if e.event.type == "console_error"]
    assert any(d.text == "bad thing happened" and d.level == "error" for d in errors)
    thrown = next(d for d in errors if "boom" in d.text)
    assert thrown.text == "Uncaught Error: boom at step 37" and thrown.source_url.endswith("page.html")
    assert thrown.line is not None and thrown.stack_trace is not None and thrown.stack_trace.call_frames

    failed = list(k.browsers.telemetry.events(sid, category=["network"], type=["network_loading_failed"]))
    assert {e.event.type for e in failed} == {"network_loading_failed"}
    assert any(e.event.data.url == "http://127.0.0.1:9/unreachable" and e.event.data.error_text for e in failed)
    requests = list(k.browsers.telemetry.events(sid, type=["network_request"], limit=100))
    sent = next(e.event.data for e in requests
                if e.event.data.url == "http://127.0.0.1:9/unreachable" and e.event.data.method == "GET")
    assert sent.headers["Authorization"] == "[masked]"

    page_types = {e.event.type for e in k.browsers.telemetry.events(sid, category=["page"], limit=100)}
    assert {"page_navigation", "page_dom_content_loaded", "page_load"} <= page_types

    wait_until(lambda: any(e.event.data.operation_id == "ComputerCaptureScreenshot" for e in
                           k.browsers.telemetry.events(sid, type=["api_call"], limit=100)), "the api_call")
    calls = list(k.browsers.telemetry.events(sid, category=["control"], limit=100))
    shot = next(e.event.data for e in calls if e.event.data.operation_id == "ComputerCaptureScreenshot")
    assert shot.status == 200 and shot.duration_ms > 0
    connections = [e.event.type for e in k.browsers.telemetry.events(sid, category=["connection"], limit=100)]
    assert connections[:2] == ["cdp_connect", "cdp_disconnect"]

    everything = list(k.browsers.telemetry.events(sid, limit=3))  # the SDK pages by X-Next-Offset
    seqs = [e.seq for e in everything]
    assert seqs == sorted(set(seqs)) and len(seqs) > 10
    assert "secret-token-xyz" not in json.dumps([e.to_dict() for e in everything])


def test_sdk_stream_replays_all_and_resumes_by_last_event_id(recorded) -> None:
    k, browser = recorded
    sid = browser.session_id
    stream = k.browsers.telemetry.stream(sid, replay="all")
    try:
        first = [next(stream) for _ in range(6)]
    finally:
        stream.close()
    assert [e.seq for e in first] == list(range(first[0].seq, first[0].seq + 6))
    resumed = k.browsers.telemetry.stream(sid, last_event_id=str(first[2].seq))
    try:
        again = [next(resumed) for _ in range(3)]
    finally:
        resumed.close()
    assert [e.model_dump() for e in again] == [e.model_dump() for e in first[3:6]]
    only = k.browsers.telemetry.stream(sid, replay="all", type=["console_error"])
    try:
        errors = [next(only) for _ in range(2)]
    finally:
        only.close()
    assert {e.event.type for e in errors} == {"console_error"}


def test_patch_bad_input_and_a_deleted_sessions_events(service, recorded) -> None:
    k, _ = recorded
    with httpx.Client(base_url=service.url, headers=service.headers, timeout=30) as http:
        sid = http.post("/browsers", json={"timeout_seconds": 60}).json()["session_id"]
        assert http.get(f"/browsers/{sid}").json().get("telemetry") is None
        r = http.patch(f"/browsers/{sid}", json={"telemetry": {"browser": {"platform": {"enabled": True}}}})
        assert r.status_code == 200 and r.json()["telemetry"]["browser"]["control"]["enabled"] is True
        assert r.json()["telemetry"]["browser"]["platform"]["enabled"] is True
        http.post(f"/browsers/{sid}/process/exec", json={"command": "true"})
        calls = [e["event"]["data"]["operation_id"] for e in
                 http.get(f"/browsers/{sid}/telemetry/events", params={"category": "platform"}).json()]
        assert calls == ["ProcessExec"]

        for params, field in (({"category": "nope"}, "category"), ({"order": "desc", "since": "5m"}, "since"),
                              ({"since": "yesterday"}, "since"), ({"limit": 0}, "limit"), ({"order": "x"}, "order")):
            r = http.get(f"/browsers/{sid}/telemetry/events", params=params)
            assert r.status_code == 400 and r.json()["details"][0]["message"].startswith(f"{field}:"), r.text
        r = http.get(f"/browsers/{sid}/telemetry/stream", headers={"Last-Event-ID": "abc"})
        assert r.status_code == 400 and r.json()["details"][0]["message"].startswith("Last-Event-ID:")
        r = http.post("/browsers", json={"telemetry": {"enabled": False, "browser": {"console": {"enabled": True}}}})
        assert r.status_code == 400 and r.json()["details"][0]["message"].startswith("telemetry.enabled:")

        r = http.patch(f"/browsers/{sid}", json={"telemetry": {"enabled": False}})
        assert r.status_code == 200 and "telemetry" not in r.json()
        http.post(f"/browsers/{sid}/process/exec", json={"command": "true"})
        assert len(http.get(f"/browsers/{sid}/telemetry/events", params={"type": "platform_api_call"}).json()) == 1

        http.delete(f"/browsers/{sid}")
        kept = list(k.browsers.telemetry.events(sid, since="1h"))
        assert [e.event.data.operation_id for e in kept] == ["ProcessExec"]
        ended = k.browsers.telemetry.stream(sid, replay="all")
        try:
            assert [e.seq for e in ended] == [kept[0].seq]  # every kept event, then the end
        finally:
            ended.close()
