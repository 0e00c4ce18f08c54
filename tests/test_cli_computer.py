"""`bbrowse click`, `type`, `key`, `scroll` against a real service and a real Chromium, run as a user runs
them (a subprocess with KERNEL_BASE_URL / KERNEL_API_KEY); what they did is read back from the page over
the session's CDP endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from browser_page import BUTTON_AT, FIELD_AT, PageProbe, write_page
from browser_support import browser_session, needs_chromium
from cli_support import assert_one_line_error, bb, bb_here

pytestmark = [pytest.mark.chromium, needs_chromium]


@pytest.fixture(scope="module")
async def browser(http: httpx.AsyncClient) -> AsyncIterator[dict]:
    async with browser_session(http, viewport={"width": 1280, "height": 800}, timeout_seconds=900) as browser:
        yield browser


@pytest.fixture
async def page(browser: dict, pages) -> AsyncIterator[PageProbe]:
    async with PageProbe.showing(browser["cdp_ws_url"], write_page(pages)) as probe:
        yield probe


async def run(service, *args: str, input: bytes | None = None):
    """`bbrowse ARGS...` in a thread, so the page can still be watched meanwhile."""
    return await asyncio.to_thread(bb, service, *args, input=input)


def ok(result) -> None:
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"" and result.stderr == b""


async def test_click_presses_the_button_double_and_right_click(service, browser, page: PageProbe) -> None:
    sid = browser["session_id"]
    x, y = (str(v) for v in BUTTON_AT)
    ok(await run(service, "click", sid, x, y))
    await page.wait_for(page.button_on)
    assert await page.evaluate("clicks") == 1

    ok(await run(service, "click", sid, x, y, "--double"))
    await page.wait_for(lambda: page.evaluate("clicks === 3"))
    assert await page.button_on()  # on, then off and on again

    ok(await run(service, "click", sid, x, y, "--button", "right"))
    await page.wait_for(lambda: page.evaluate("buttons.includes(2)"))
    assert await page.evaluate("clicks") == 3  # a right click is no click


async def test_type_and_key_edit_the_field(service, browser, page: PageProbe) -> None:
    sid = browser["session_id"]
    ok(await run(service, "click", sid, *(str(v) for v in FIELD_AT)))
    await page.wait_for(lambda: page.evaluate("document.activeElement.id === 't'"))

    ok(await run(service, "type", sid, "hello world"))
    await page.wait_for(lambda: page.evaluate("document.getElementById('t').value === 'hello world'"))

    ok(await run(service, "key", sid, "Ctrl+a", "BackSpace"))
    await page.wait_for(lambda: page.evaluate("document.getElementById('t').value === ''"))

    ok(await run(service, "type", sid, "-", input=b"from stdin"))  # '-': the text is read from stdin
    await page.wait_for(lambda: page.evaluate("document.getElementById('t').value === 'from stdin'"))

    ok(await run(service, "key", sid, "End", "Return"))
    await page.wait_for(lambda: page.evaluate("lastKey === 'Enter'"))


async def test_scroll_down_then_back_up_with_negative_ticks(service, browser, page: PageProbe) -> None:
    sid = browser["session_id"]
    ok(await run(service, "scroll", sid, "600", "600", "0", "5"))
    await page.wait_for(lambda: page.evaluate("window.scrollY > 0"))
    ok(await run(service, "scroll", sid, "600", "600", "0", "-50"))  # a negative number is not an option
    await page.wait_for(lambda: page.evaluate("window.scrollY === 0"))
    assert await page.evaluate("wheels") >= 2


async def test_errors_are_one_line_with_the_services_code(service, browser) -> None:
    sid = browser["session_id"]
    line = assert_one_line_error(await run(service, "click", sid, "99999", "10"), "bad_request", 400)
    assert "x" in line
    line = assert_one_line_error(await run(service, "key", sid, "NoSuchKeyName"), "bad_request", 400)
    assert "NoSuchKeyName" in line
    assert_one_line_error(await run(service, "type", "no-such-session", "x"), "not_found", 404)
    usage = assert_one_line_error(await run(service, "scroll", sid, "1", "2"), "usage", exit_code=2)
    assert "bbrowse scroll --help" in usage
    assert_one_line_error(await run(service, "click", sid, "1", "2", "--button", "thumb"), "usage", exit_code=2)


def test_help_has_examples(service) -> None:
    for command in ("click", "type", "key", "scroll"):
        result = bb_here(service, command, "--help")
        assert result.returncode == 0
        assert b"Examples:" in result.stdout and f"bbrowse {command} ID".encode() in result.stdout
