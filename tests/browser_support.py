"""For tests that drive a real browser session (no tests here): whether this machine has a Chromium,
the mark that skips such a test where it has none, and a session made for a fixture's lifetime.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt-get install chromium)")


@contextlib.asynccontextmanager
async def browser_session(http: httpx.AsyncClient, **body: Any) -> AsyncIterator[dict]:
    """A new session (`POST /browsers` with `body`; its answer) while the block runs, deleted after.

    A session starts a Chromium, which costs seconds: fixtures that share one across a module use this.
    """
    r = await http.post("/browsers", json=body)
    assert r.status_code == 200, r.text
    try:
        yield r.json()
    finally:
        await http.delete(f"/browsers/{r.json()['session_id']}")
