"""Auth against a real `bbrowse serve`: every route refuses a missing or wrong token, secrets stay out of logs.

The routes are read from the app the service builds (`create_app(...).routes`), so a route added
later is walked without editing this file; the requests go to the real service over loopback. The
module runs its own service with a token it chose (a given token is never printed), a short replay
link lifetime (`BBROWSE_REPLAY_LINK_SECONDS`), and its own state directory, which is searched for
the secrets at the end.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import psutil
import pytest
from auth_support import assert_unauthorized, fill_path, registered_routes, secrets_written, wait_until_logged
from conftest import ServiceHandle, start_service, stop_service
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from bbrowse.service.auth import JWT_AUTH_PATHS
from bbrowse.service.vm_endpoint import is_vm_path

TOKEN = "tok-" + secrets.token_urlsafe(24)
#: Replay links made by this module's service live this long.
LINK_SECONDS = 3
WRONG = {
    "no header": {},
    "wrong token": {"Authorization": "Bearer " + secrets.token_urlsafe(24)},
    "token minus its last character": {"Authorization": "Bearer " + TOKEN[:-1]},
    "token plus a character": {"Authorization": "Bearer " + TOKEN + "x"},
    "bearer without a token": {"Authorization": "Bearer"},
    "basic scheme with the token": {"Authorization": "Basic " + base64.b64encode(f"x:{TOKEN}".encode()).decode()},
    "token without a scheme": {"Authorization": TOKEN},
    "token in the query only": {},  # the query string carries it below; only the header counts
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceHandle]:
    env = {"BBROWSE_TOKEN": TOKEN, "BBROWSE_REPLAY_LINK_SECONDS": str(LINK_SECONDS)}
    handle = start_service(tmp_path_factory.mktemp("auth-state"), extra_env=env)
    yield handle
    stop_service(handle)


@pytest.fixture(scope="module")
def http(served: ServiceHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, headers=served.headers, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def things(http: httpx.Client) -> dict[str, str]:
    """Real ids for the path parameters, so a route that forgot auth would answer 200, not 404."""
    sid = http.post("/browsers", json={"timeout_seconds": 600}).json()["session_id"]
    process = http.post(f"/browsers/{sid}/process/spawn", json={"command": "cat", "allocate_tty": True})
    replay = http.post(f"/browsers/{sid}/replays", json={"framerate": 2})
    assert replay.status_code == 201, replay.text
    http.post(f"/browsers/{sid}/replays/{replay.json()['replay_id']}/stop")
    return {"id_or_name": sid, "process_id": process.json()["process_id"], "replay_id": replay.json()["replay_id"]}


ROUTES = registered_routes()
#: Routes of the sessions' VM endpoints (`/vm/{id}/...`) authenticate by the session `jwt` alone, never the bearer
#: token: tests/test_vm_auth.py walks them (from the same app) with every wrong and forged jwt.
BEARER_ROUTES = [r for r in ROUTES if not is_vm_path(r[2])]


def test_the_walk_covers_every_area() -> None:
    """A broken route reader would make every other test here pass vacuously."""
    paths = {path for _, _, path in ROUTES}
    assert len(ROUTES) >= 25
    for expected in ("/browsers", "/browsers/{id_or_name}/process/spawn", "/browsers/{id_or_name}/fs/read_file",
                     "/browsers/{id_or_name}/logs/stream", "/browsers/{id_or_name}/replays", "/openapi.json"):
        assert expected in paths
    assert ("websocket", "GET", "/browsers/{id_or_name}/process/{process_id}/attach") in ROUTES
    assert ("http", "POST", "/vm/{id_or_name}/process/spawn") in ROUTES  # the jwt walk's share
    assert len(BEARER_ROUTES) >= 25


@pytest.mark.parametrize(("kind", "method", "path"), [r for r in BEARER_ROUTES if r[0] == "http"],
                         ids=lambda v: str(v))
def test_every_http_route_refuses_a_missing_or_wrong_token(
    served: ServiceHandle, things: dict[str, str], kind: str, method: str, path: str
) -> None:
    url = served.url + fill_path(path, things)
    jwt_route = path in JWT_AUTH_PATHS
    with httpx.Client(timeout=10) as anonymous:
        for case, headers in WRONG.items():
            params = {"token": TOKEN, "access_token": TOKEN}
            r = anonymous.request(method, url, headers=headers, params=params, json={} if method == "POST" else None)
            if method == "HEAD":  # no body to read
                assert r.status_code == 401, f"{method} {path}: {case}"
                continue
            assert_unauthorized(r.status_code, r.content, f"{method} {path}: {case}")
            if not jwt_route:
                assert r.headers["www-authenticate"].startswith("Bearer")
        if jwt_route:
            # a replay link authenticates with its own `jwt`: the bearer token alone opens nothing
            r = anonymous.request(method, url, headers=served.headers, params={"replay_id": things["replay_id"]})
            assert_unauthorized(r.status_code, r.content, f"{method} {path}: bearer token without jwt")


def test_unknown_paths_and_the_documents_also_need_the_token(served: ServiceHandle) -> None:
    with httpx.Client(base_url=served.url, timeout=10) as anonymous:
        paths = ("/nope", "/openapi.json", "/docs", "/%2e%2e/", "/replay-viewer", "/replay-view-x", "/replay-view/x",
                 "/replay-view/video/x")
        for path in paths:
            r = anonymous.get(path)
            assert_unauthorized(r.status_code, r.content, path)
        assert anonymous.get("/openapi.json", headers=served.headers).status_code == 200


@pytest.mark.parametrize("case", ["no header", "wrong token", "token minus its last character"])
def test_the_attach_websocket_handshake_is_refused_with_401(
    served: ServiceHandle, things: dict[str, str], case: str
) -> None:
    [path] = [p for kind, _, p in BEARER_ROUTES if kind == "websocket"]
    url = served.url.replace("http://", "ws://", 1) + fill_path(path, things)
    with pytest.raises(InvalidStatus) as refused:
        with connect(url, additional_headers=WRONG[case], open_timeout=10):
            pass
    assert_unauthorized(refused.value.response.status_code, refused.value.response.body, case)
    # and with the token it opens
    with connect(url, additional_headers=served.headers, open_timeout=10) as ws:
        ws.send(b"ok?\n")
        assert b"ok?" in ws.recv(timeout=10)


# secrets never written down ----------------------------------------------------------------------


def test_processes_never_inherit_the_token(http: httpx.Client, things: dict[str, str]) -> None:
    r = http.post(f"/browsers/{things['id_or_name']}/process/exec", json={"command": "env"})
    env = base64.b64decode(r.json()["stdout_b64"]).decode()
    assert "PATH=" in env and TOKEN not in env


def test_no_log_and_no_file_of_the_state_dir_holds_the_token_or_a_replay_jwt(
    served: ServiceHandle, http: httpx.Client, things: dict[str, str]
) -> None:
    sid = things["id_or_name"]
    view = http.get(f"/browsers/{sid}/replays").json()[0]["replay_view_url"]
    link_jwt = parse_qs(urlsplit(view).query)["jwt"][0]
    with httpx.Client(timeout=10) as anonymous:
        assert anonymous.get(view).status_code == 200
        anonymous.get(view.replace("/replay-view?", "/replay-view/video?"), headers={"Range": "bytes=0-10"})
        anonymous.get(served.url + "/browsers", params={"token": TOKEN}, headers={"Authorization": f"Bearer {TOKEN}x"})
    http.get("/browsers", params={"token": TOKEN, "jwt": link_jwt})
    http.get(f"/browsers/{sid}/fs/read_file", params={"path": "/nonexistent", "jwt": link_jwt})
    wait_until_logged(served.state_dir, "/fs/read_file 404")  # the last request

    hidden = {"token": TOKEN, "jwt": link_jwt, "jwt signature": link_jwt.rsplit(".", 1)[1]}
    # the discovery file holds the token by design (0600)
    assert secrets_written(served.state_dir, hidden, skip_names={"serve.json"}) == []


def test_the_discovery_file_is_private(served: ServiceHandle) -> None:
    discovery = served.state_dir / "serve.json"
    assert stat.S_IMODE(discovery.stat().st_mode) == 0o600
    assert json.loads(discovery.read_text())["token"] == TOKEN


# where it listens --------------------------------------------------------------------------------


def listening_addresses(pid: int) -> set[str]:
    return {c.laddr.ip for c in psutil.Process(pid).net_connections("inet") if c.status == psutil.CONN_LISTEN}


def test_the_default_bind_is_loopback(served: ServiceHandle) -> None:
    assert urlsplit(served.url).hostname == "127.0.0.1"
    assert listening_addresses(served.pid) == {"127.0.0.1"}


def test_binding_to_every_interface_without_tls_warns(tmp_path: Path) -> None:
    """Started briefly on 0.0.0.0 and reached only through 127.0.0.1."""
    env = {**os.environ, "BBROWSE_STATE_DIR": str(tmp_path), "BBROWSE_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bbrowse", "serve", "--host", "0.0.0.0", "--port", "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True,
    )
    try:
        lines = []
        deadline = time.monotonic() + 20
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "serve listening on" in line:
                break
        output = "".join(lines)
        assert "warning: listening on 0.0.0.0 without TLS" in output, output  # on stderr, before the address
        assert TOKEN not in output  # a given token is never printed
        port = int(output.split("listening on http://0.0.0.0:", 1)[1].split()[0])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/browsers", headers={"Authorization": f"Bearer {TOKEN}"})
                break
            except httpx.TransportError:
                time.sleep(0.05)
        assert r.status_code == 200
        assert listening_addresses(proc.pid) == {"0.0.0.0"}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def test_loopback_binds_do_not_warn(served: ServiceHandle) -> None:
    assert "warning" not in (served.state_dir / "serve.stdout").read_text()


# replay links ------------------------------------------------------------------------------------


def _link(http: httpx.Client, things: dict[str, str]) -> tuple[str, str, str]:
    view = http.get(f"/browsers/{things['id_or_name']}/replays").json()[0]["replay_view_url"]
    query = parse_qs(urlsplit(view).query)
    return view, query["replay_id"][0], query["jwt"][0]


def test_replay_links_refuse_forged_tokens(served: ServiceHandle, http: httpx.Client, things: dict[str, str]) -> None:
    """Tampered claims, a token signed with another key, `alg: none`, and a token for another replay."""
    view, replay_id, token = _link(http, things)
    claims = jwt.decode(token, options={"verify_signature": False})
    header, _, signature = token.split(".")
    longer = base64.urlsafe_b64encode(json.dumps({**claims, "exp": claims["exp"] + 10**6}).encode()).rstrip(b"=")
    forged = {
        "claims changed, signature kept": f"{header}.{longer.decode()}.{signature}",
        "signed with another key": jwt.encode(claims, secrets.token_bytes(32), algorithm="HS256"),
        "alg none": jwt.encode(claims, None, algorithm="none"),
        "for another replay": token,  # asked for with another replay_id below
    }
    with httpx.Client(timeout=10) as anonymous:
        for case, forged_token in forged.items():
            asked = "3f0e4a5e-0000-4000-8000-000000000000" if case == "for another replay" else replay_id
            for path in ("/replay-view", "/replay-view/video"):
                r = anonymous.get(served.url + path, params={"replay_id": asked, "jwt": forged_token})
                assert_unauthorized(r.status_code, r.content, f"{case} {path}")
        assert anonymous.get(view).status_code == 200  # the real link still works


def test_replay_links_expire(served: ServiceHandle, http: httpx.Client, things: dict[str, str]) -> None:
    """`BBROWSE_REPLAY_LINK_SECONDS` (here 3 s) bounds a link's life on the real service."""
    view, _, token = _link(http, things)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == LINK_SECONDS
    with httpx.Client(timeout=10) as anonymous:
        assert anonymous.get(view).status_code == 200
        deadline = time.monotonic() + LINK_SECONDS + 5
        while (r := anonymous.get(view)).status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert_unauthorized(r.status_code, r.content, "expired link")
        assert "expired" in r.json()["message"]
        assert time.time() >= claims["exp"]
        # listing the replays again gives a fresh link that works
        fresh, _, _ = _link(http, things)
        assert anonymous.get(fresh).status_code == 200
