"""Sessions' VM endpoints (`/vm/{session_id}/...`) against a real `bbrowse serve`: the session `jwt` alone opens them.

Every route under `/vm` is read from the app the service builds (`create_app(...).routes`), as
tests/test_auth.py reads the bearer-token routes, so a route added later (F's computer/* and fs/*,
the CDP proxy) is walked without editing this file. Each is asked, over loopback, with no `jwt`, the
`jwt` of another session, a `jwt` signed with another key, one whose claims were changed, an
`alg: none` one, an expired one, and two at once: 401 `unauthorized` every time, HTTP and WebSocket
alike, with the bearer token sent along (it opens nothing there). With the right `jwt` each route
answers (not 401). The module's service hands out tokens that live `TOKEN_SECONDS`, so expiry is real.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from auth_support import assert_unauthorized, fill_path, registered_routes, secrets_written, wait_until_logged
from conftest import ServiceHandle, start_service, stop_service
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

#: Session tokens made by this module's service live this long.
TOKEN_SECONDS = 4


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceHandle]:
    """Without Chromium: the jwt is checked before any route runs, browser routes included (those answer
    503 past it, still not 401), so sessions need no browser and start at once."""
    handle = start_service(tmp_path_factory.mktemp("vm-auth-state"),
                           extra_env={"BBROWSE_VM_TOKEN_SECONDS": str(TOKEN_SECONDS),
                                      "BBROWSE_CHROMIUM": "/nonexistent/chromium"})
    yield handle
    stop_service(handle)


@pytest.fixture(scope="module")
def http(served: ServiceHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, headers=served.headers, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def sessions(http: httpx.Client) -> Iterator[dict[str, str]]:
    """Two real sessions (`mine`, `other`) and a PTY process of `mine`, so a route that let a bad jwt
    through would answer 200, not 404."""
    made = [http.post("/browsers", json={"timeout_seconds": 600}).json()["session_id"] for _ in range(2)]
    process = http.post(f"/browsers/{made[0]}/process/spawn", json={"command": "cat", "allocate_tty": True})
    assert process.status_code == 200, process.text
    yield {"mine": made[0], "other": made[1], "process_id": process.json()["process_id"]}
    for sid in made:
        http.delete(f"/browsers/{sid}")


def fresh_jwt(http: httpx.Client, session_id: str) -> str:
    """The `jwt` of the session's `cdp_ws_url`, as a client takes it (a fresh one on every read)."""
    browser = http.get(f"/browsers/{session_id}").json()
    assert browser["base_url"].endswith(f"/vm/{session_id}")
    return parse_qs(urlsplit(browser["cdp_ws_url"]).query)["jwt"][0]


#: (kind, method, path) of every route under `/vm`, read from the app, never listed here.
ROUTES = [route for route in registered_routes() if route[2].startswith("/vm/")]
HTTP_ROUTES = [r for r in ROUTES if r[0] == "http"]
WS_ROUTES = [r for r in ROUTES if r[0] == "websocket"]


def test_the_walk_covers_every_in_vm_area() -> None:
    """A broken route reader would make every other test here pass vacuously."""
    paths = {path for _, _, path in ROUTES}
    for expected in ("/vm/{id_or_name}/process/spawn", "/vm/{id_or_name}/process/exec",
                     "/vm/{id_or_name}/process/{process_id}/stdin", "/vm/{id_or_name}/fs/read_file",
                     "/vm/{id_or_name}/fs/list_files", "/vm/{id_or_name}/logs/stream",
                     "/vm/{id_or_name}/computer/screenshot"):
        assert expected in paths
    assert ("websocket", "GET", "/vm/{id_or_name}/process/{process_id}/attach") in ROUTES
    assert not any("/replays" in p for p in paths)  # the control plane's own routes are not in the VM


def fill(path: str, sessions: dict[str, str]) -> str:
    """The path with real ids: the session `mine` (named `id_or_name` or `session_id`) and its process; any other
    parameter (a watch id, ...) gets a made-up value: the jwt is checked before the route looks at it."""
    things = {"id_or_name": sessions["mine"], "session_id": sessions["mine"], "process_id": sessions["process_id"]}
    return fill_path(path, things)


def ask(client: httpx.Client, method: str, url: str, params) -> tuple[int, bytes]:
    """Status and body of a request; a stream that stays open (a live process's output) is cut after its head."""
    with client.stream(method, url, params=params, json={} if method == "POST" else None) as r:
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            return r.status_code, b""
        return r.status_code, r.read()


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def bad_jwts(http: httpx.Client, sessions: dict[str, str], expired: str | None = None) -> dict[str, list[str]]:
    """Case name -> the `jwt` values sent (an empty list: none at all)."""
    good = fresh_jwt(http, sessions["mine"])
    claims = jwt.decode(good, options={"verify_signature": False})
    header, _, signature = good.split(".")
    cases = {
        "no jwt": [],
        "empty jwt": [""],
        "another session's jwt": [fresh_jwt(http, sessions["other"])],
        "signed with another key": [jwt.encode(claims, secrets.token_bytes(32), algorithm="HS256")],
        "claims changed, signature kept": [f"{header}.{_b64({**claims, 'sub': sessions['other']})}.{signature}"],
        "alg none": [jwt.encode(claims, None, algorithm="none")],
        "not a jwt": ["x" * 40],
        "a good and a bad jwt": [good, "x" * 40],
    }
    if expired is not None:
        cases["expired"] = [expired]
    return cases


@pytest.mark.parametrize(("kind", "method", "path"), HTTP_ROUTES, ids=lambda v: str(v))
def test_every_in_vm_http_route_refuses_a_missing_wrong_or_forged_jwt(
    served: ServiceHandle, http: httpx.Client, sessions: dict[str, str], kind: str, method: str, path: str
) -> None:
    url = served.url + fill(path, sessions)
    with httpx.Client(timeout=10, headers=served.headers) as client:  # the bearer token goes along: it opens nothing
        for case, tokens in bad_jwts(http, sessions).items():
            params = [("jwt", t) for t in tokens] + [("path", "/"), ("source", "path")]
            assert_unauthorized(*ask(client, method, url, params), f"{method} {path}: {case}")
        # the right jwt reaches the route (its answer depends on the body; what matters is that it is not a 401)
        good = fresh_jwt(http, sessions["mine"])
        status, body = ask(client, method, url, {"jwt": good, "path": "/etc/hostname", "source": "path",
                                                 "follow": "false"})
        assert status != 401, (method, path, body)


def test_an_expired_jwt_is_refused_everywhere_and_a_fresh_one_works(
    served: ServiceHandle, http: httpx.Client, sessions: dict[str, str]
) -> None:
    """`BBROWSE_VM_TOKEN_SECONDS` (here 4 s) bounds a token's life on the real service; reading the Browser
    again hands out a fresh one, which is how a client recovers."""
    token = fresh_jwt(http, sessions["mine"])
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == TOKEN_SECONDS and claims["sub"] == sessions["mine"]
    base = http.get(f"/browsers/{sessions['mine']}").json()["base_url"]
    status_url = f"{base}/process/{sessions['process_id']}/status"
    with httpx.Client(timeout=10) as client:
        assert client.get(status_url, params={"jwt": token}).status_code == 200
        deadline = time.monotonic() + TOKEN_SECONDS + 10
        while (r := client.get(status_url, params={"jwt": token})).status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert_unauthorized(r.status_code, r.content, "expired")
        assert "expired" in r.json()["message"]
        for _, method, path in HTTP_ROUTES:
            url = served.url + fill(path, sessions)
            assert_unauthorized(*ask(client, method, url, {"jwt": token, "path": "/"}), f"expired: {method} {path}")
        for _, _, path in WS_ROUTES:
            url = ws_url(served, path, sessions) + f"?jwt={token}"
            with pytest.raises(InvalidStatus) as refused:
                connect(url, open_timeout=10).close()
            assert_unauthorized(refused.value.response.status_code, refused.value.response.body, f"expired: {path}")
        assert client.get(status_url, params={"jwt": fresh_jwt(http, sessions["mine"])}).status_code == 200


def ws_url(served: ServiceHandle, path: str, sessions: dict[str, str]) -> str:
    filled = fill(path, sessions)
    return served.url.replace("http://", "ws://", 1) + filled


@pytest.mark.parametrize("path", [p for _, _, p in WS_ROUTES])
def test_every_in_vm_websocket_refuses_a_missing_wrong_or_forged_jwt_before_the_upgrade(
    served: ServiceHandle, http: httpx.Client, sessions: dict[str, str], path: str
) -> None:
    url = ws_url(served, path, sessions)
    for case, tokens in bad_jwts(http, sessions).items():
        query = "&".join(f"jwt={t}" for t in tokens)
        with pytest.raises(InvalidStatus) as refused:
            connect(f"{url}?{query}", additional_headers=served.headers, open_timeout=10).close()
        assert_unauthorized(refused.value.response.status_code, refused.value.response.body, f"{path}: {case}")


def test_attach_through_the_vm_endpoint_opens_with_the_right_jwt(
    served: ServiceHandle, http: httpx.Client, sessions: dict[str, str]
) -> None:
    url = ws_url(served, "/vm/{id_or_name}/process/{process_id}/attach", sessions)
    with connect(f"{url}?jwt={fresh_jwt(http, sessions['mine'])}", open_timeout=10) as ws:
        ws.send(b"through the vm\n")
        seen = b""
        deadline = time.monotonic() + 10
        while b"through the vm" not in seen and time.monotonic() < deadline:
            seen += ws.recv(timeout=10)
        assert b"through the vm" in seen


def test_a_session_jwt_opens_no_control_plane_route_and_the_bearer_token_no_vm_route(
    served: ServiceHandle, http: httpx.Client, sessions: dict[str, str]
) -> None:
    token = fresh_jwt(http, sessions["mine"])
    base = http.get(f"/browsers/{sessions['mine']}").json()["base_url"]
    with httpx.Client(timeout=10) as client:
        for path in (f"/browsers/{sessions['mine']}", "/browsers", f"/browsers/{sessions['mine']}/fs/list_files"):
            r = client.get(served.url + path, params={"jwt": token, "path": "/"})
            assert_unauthorized(r.status_code, r.content, f"jwt on {path}")
        r = client.get(base + "/fs/list_files", params={"path": "/"}, headers=served.headers)
        assert_unauthorized(r.status_code, r.content, "bearer token on the VM endpoint")
        assert client.get(base + "/fs/list_files", params={"path": "/", "jwt": token}).status_code == 200


def test_unknown_paths_under_vm_need_the_jwt_and_are_404_with_it(
    served: ServiceHandle, http: httpx.Client, sessions: dict[str, str]
) -> None:
    mine = sessions["mine"]
    token = fresh_jwt(http, mine)
    with httpx.Client(base_url=served.url, timeout=10) as client:
        for path in ("/vm", "/vm/", f"/vm/{mine}", f"/vm/{mine}/nope", f"/vm/{mine}/replays", "/vm//process/spawn"):
            r = client.get(path, headers=served.headers)
            assert_unauthorized(r.status_code, r.content, path)
        for path in (f"/vm/{mine}", f"/vm/{mine}/nope", f"/vm/{mine}/replays"):
            r = client.get(path, params={"jwt": token})
            assert r.status_code == 404 and r.json()["code"] == "not_found", (path, r.text)


def test_no_log_or_file_of_the_state_dir_holds_a_session_jwt(
    served: ServiceHandle, http: httpx.Client, sessions: dict[str, str]
) -> None:
    """Tokens travel in query strings, which the service never writes down (nor does uvicorn, for WebSockets)."""
    token = fresh_jwt(http, sessions["mine"])
    base = http.get(f"/browsers/{sessions['mine']}").json()["base_url"]
    with httpx.Client(timeout=10) as client:
        client.get(base + "/fs/read_file", params={"path": "/nonexistent", "jwt": token})
        client.get(base + "/fs/read_file", params={"path": "/nonexistent", "jwt": token + "x"})
    url = ws_url(served, "/vm/{id_or_name}/process/{process_id}/attach", sessions)
    with connect(f"{url}?jwt={token}", open_timeout=10):
        pass
    with pytest.raises(InvalidStatus):
        connect(f"{url}?jwt={token}x", open_timeout=10).close()
    wait_until_logged(served.state_dir, "/fs/read_file 401")
    assert secrets_written(served.state_dir, {"jwt signature": token.rsplit(".", 1)[1]}) == []
