"""Bytes arrive whole and in order: through stdin, out of a process, and from keys typed under an output flood.

Everything runs against the real `bbrowse serve` through bbrowse's own client, as the app and the CLI use
it: stdin requests, the SSE output stream (base64 in JSON), and the Textual app's shell pane driven with
Pilot. The service is the shared one with no Chromium (`browserless_service`): the subject is the session's
processes, and a Chromium beside them would only take CPU from the flood.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from conftest import session_area
from test_app_shell import open_shell, screen_text, shell_app
from textual import events

from bbrowse.client import BrowserClient
from bbrowse.tui.textual_private import character_to_key, driver_of
from bbrowse.wire import Browser, ProcessExitEvent

STDIN_BYTES = 10 * 1024 * 1024
STDIN_CHUNK = 256 * 1024
OUTPUT_BYTES = 100_000_000
#: Writes `OUTPUT_BYTES` bytes drawn from a seeded generator, then their sha256 on stderr.
GENERATOR = """
import hashlib, random, sys
size, seed = int(sys.argv[1]), int(sys.argv[2])
rng, digest, out, left = random.Random(seed), hashlib.sha256(), sys.stdout.buffer, size
while left:
    block = rng.randbytes(min(left, 1 << 20))
    digest.update(block)
    out.write(block)
    left -= len(block)
out.flush()
sys.stderr.write(digest.hexdigest())
"""


def seeded_sha256(size: int, seed: int) -> str:
    rng, digest, left = random.Random(seed), hashlib.sha256(), size
    while left:
        block = rng.randbytes(min(left, 1 << 20))
        digest.update(block)
        left -= len(block)
    return digest.hexdigest()


@pytest.fixture(scope="module")
async def browser(browserless_http: httpx.AsyncClient) -> AsyncIterator[Browser]:
    r = await browserless_http.post("/browsers", json={"timeout_seconds": 900})
    assert r.status_code == 200, r.text
    yield Browser.model_validate(r.json())
    await browserless_http.delete(f"/browsers/{r.json()['session_id']}")


@pytest.fixture(scope="module")
def client(browserless_service) -> BrowserClient:
    return BrowserClient(browserless_service.url, browserless_service.token)


async def test_10_mb_of_random_bytes_through_stdin_into_cat_come_back_equal(
    client: BrowserClient, browser: Browser
) -> None:
    sid = browser.session_id
    data = os.urandom(STDIN_BYTES)
    proc = await client.processes.spawn(sid, "cat")
    received = hashlib.sha256()
    count = 0

    async def read() -> int | None:
        nonlocal count
        async with client.processes.stdout_stream(sid, proc.process_id) as events:
            async for event in events:
                if isinstance(event, ProcessExitEvent):
                    return event.exit_code
                assert event.stream == "stdout"
                chunk = event.data()
                received.update(chunk)
                count += len(chunk)
                if count >= STDIN_BYTES:  # everything is back: end cat (it never sees EOF on its stdin)
                    await client.processes.kill(sid, proc.process_id, "TERM")
        return None

    reader = asyncio.create_task(read())
    started = time.perf_counter()
    for offset in range(0, STDIN_BYTES, STDIN_CHUNK):
        piece = data[offset : offset + STDIN_CHUNK]
        while piece:  # a stalled write reports what it wrote; the rest is sent again
            written = (await client.processes.stdin(sid, proc.process_id, piece)).written_bytes
            assert 0 < written <= len(piece)
            piece = piece[written:]
    exit_code = await asyncio.wait_for(reader, 60)
    elapsed = time.perf_counter() - started
    assert exit_code == 143  # TERM, after every byte came back
    assert count == STDIN_BYTES
    assert received.hexdigest() == hashlib.sha256(data).hexdigest()
    print(f"\n10 MiB stdin -> cat -> stdout stream: {elapsed:.2f} s ({STDIN_BYTES / elapsed / 1e6:.0f} MB/s)")


async def test_100_mb_out_of_a_process_arrive_with_an_equal_hash(client: BrowserClient, browser: Browser) -> None:
    seed = 20261121
    expected = seeded_sha256(OUTPUT_BYTES, seed)
    started = time.perf_counter()
    proc = await client.processes.spawn(  # the system python3: a sandboxed session sees no virtualenv
        browser.session_id, "python3", ["-c", GENERATOR, str(OUTPUT_BYTES), str(seed)]
    )
    received, count, reported = hashlib.sha256(), 0, b""
    exit_code = None
    async with client.processes.stdout_stream(browser.session_id, proc.process_id) as events:
        async for event in events:
            if isinstance(event, ProcessExitEvent):
                exit_code = event.exit_code
                break
            chunk = event.data()
            if event.stream == "stdout":
                received.update(chunk)
                count += len(chunk)
            else:
                reported += chunk
    elapsed = time.perf_counter() - started
    assert exit_code == 0
    assert reported.decode() == expected  # the process saw what the test computes
    assert count == OUTPUT_BYTES
    assert received.hexdigest() == expected
    print(f"\n100 MB out of a process over SSE: {elapsed:.2f} s ({OUTPUT_BYTES / elapsed / 1e6:.0f} MB/s)")


#: What is typed under the flood: letters, digits and a few symbols, over several lines.
TYPED_LINES = [
    "the quick brown fox 0123456789",
    "JUMPS over the lazy dog abcdefghij",
    "klmnopqrstuvwxyz ABCDEFGHIJKLMNOP",
    "a-b_c.d,e:f=g/h%i*j 42 43 44 45",
    "QRSTUVWXYZ last line 9876543210",
]


async def type_quickly(app, text: str, interval: float = 0.01) -> None:
    """Key events straight into the app's driver, as a fast typist makes them.

    `pilot.press` waits for the process to go idle after every key (up to 2 s), which never happens
    during a flood; the keys take the same path from the driver on (app, terminal widget, stdin).
    """
    for char in text:
        special = {"\r": "enter", "\x04": "ctrl+d"}
        name = special.get(char) or (char if char.isalnum() else character_to_key(char))
        key = events.Key(name, char)
        key.set_sender(app)
        driver = driver_of(app)
        assert driver is not None
        driver.send_message(key)
        await asyncio.sleep(interval)


async def test_keys_typed_into_the_shell_pane_arrive_in_order_under_an_output_flood(
    browserless_service, browser: Browser
) -> None:
    service = browserless_service
    typed = session_area(service, browser.session_id, "typing") / "typed.txt"
    app = shell_app(service)  # a fixed prompt: open_shell waits for it
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, browser)
        # a flood on the terminal while `cat` writes what it reads from the keyboard into a file
        await type_quickly(app, f"yes flood-flood-flood-flood & F=$!; cat > {typed}; kill $F\r")
        await until(lambda: screen_text(tab).count("flood-flood") > 10, "the flood on screen")
        started = time.perf_counter()
        await type_quickly(app, "".join(line + "\r" for line in TYPED_LINES) + "\x04")  # ctrl-d ends cat
        expected = "".join(line + "\n" for line in TYPED_LINES)
        await until(lambda: typed.exists() and len(typed.read_text()) >= len(expected), "every line in the file")
        elapsed = time.perf_counter() - started
    assert typed.read_text() == expected
    keys = sum(len(line) + 1 for line in TYPED_LINES) + 1
    print(f"\n{keys} keys typed under a flood, all in the file in order, {elapsed:.1f} s from first key to last line")


async def until(predicate, what: str, timeout: float = 30.0) -> None:
    """Wait for `predicate` without Pilot (whose pauses wait for an idle process, which a flood never is)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        await asyncio.sleep(0.05)
