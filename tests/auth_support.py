"""What the bearer-token walk (test_auth) and the session-jwt walk (test_vm_auth) share (no tests here):
the service's routes read from its app, a path with real ids, the 401 every refusal must be, and the
search of a state directory for secrets written down.
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
import time
from collections.abc import Collection, Mapping
from pathlib import Path

from bbrowse.service.app import create_app, flat_routes
from bbrowse.service.config import ServiceConfig
from bbrowse.wire import InstanceProxyError


@functools.cache  # both walks parametrize from it at collection, in every worker: the app is built once
def registered_routes() -> tuple[tuple[str, str, str], ...]:
    """(kind, method, path) of every route the service app registers: read from the app, never listed here."""
    with tempfile.TemporaryDirectory() as scratch:  # the app object is only read, never served
        app = create_app(ServiceConfig(token="unused", state_dir=Path(scratch)))
    found = []
    for route in flat_routes(app.routes):
        methods = getattr(route, "methods", None)
        if methods:
            found += [("http", method, route.path) for method in sorted(methods)]
        elif getattr(route, "path", None):
            found.append(("websocket", "GET", route.path))
    return tuple(found)


def fill_path(path: str, ids: Mapping[str, str]) -> str:
    """`path` with each `{parameter}` replaced by its value in `ids`, or by a made-up `x`."""
    return re.sub(r"\{(\w+)\}", lambda m: ids.get(m.group(1), "x"), path)


def assert_unauthorized(status: int, body: bytes, what: str) -> None:
    """A refusal in the contract's shape: 401 with an `InstanceProxyError` body, code `unauthorized`."""
    assert status == 401, what
    parsed = json.loads(body)
    assert set(parsed) == {"code", "message"}, (what, parsed)
    assert InstanceProxyError.model_validate(parsed).code == "unauthorized", what
    assert parsed["message"], what


def wait_until_logged(state_dir: Path, text: str) -> None:
    """Wait (bounded) until the service's log holds `text`: it writes a request's access line after answering."""
    log = state_dir / "service" / "logs" / "bbrowse.log"
    deadline = time.monotonic() + 10
    while text not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert text in log.read_text()


def secrets_written(state_dir: Path, secrets: Mapping[str, str], skip_names: Collection[str] = ()) -> list[str]:
    """Where in the state directory any of `secrets` (name -> value) is written: `"<name> in <file>"` each time.

    Recordings, screenshots and Chromium's own profile are passed over, and files named in `skip_names`.
    At least three files must be searched (the service's log, the session's logs, the service's stdout),
    or finding nothing would prove nothing.
    """
    found, searched = [], 0
    for path in [*state_dir.rglob("*")]:
        if not path.is_file() or path.name in skip_names:
            continue
        if path.suffix in (".mp4", ".png") or "chromium-profile" in path.parts:
            continue
        data = path.read_bytes()
        searched += 1
        for name, secret in secrets.items():
            if secret.encode() in data:
                found.append(f"{name} in {path}")
    assert searched >= 3, f"only {searched} files searched"
    return found
