"""Each session's VM endpoint on a real `bbrowse serve`: Browser objects point at it, the official SDK goes there.

The official SDK (`kernel` 0.131.0) with its default routing takes `base_url` and the `jwt` of
`cdp_ws_url` from every Browser object it sees and sends process, fs and logs calls straight to
`{base_url}/...?jwt=...` without the API key. An httpx event hook on the `http_client` handed to the
SDK records each request as it went out, which proves where every call went. The same calls run
against the default service and the `--kernel-compat` one.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from conftest import ServiceHandle
from kernel import Kernel
from kernel.lib.browser_routing.routing import BrowserRoute


def jwt_of(browser: dict) -> str:
    return parse_qs(urlsplit(browser["cdp_ws_url"]).query)["jwt"][0]


# Browser objects ---------------------------------------------------------------------------------


def assert_points_at_its_vm(browser: dict, service_url: str) -> None:
    sid = browser["session_id"]
    assert browser["base_url"] == f"{service_url}/vm/{sid}"
    cdp = urlsplit(browser["cdp_ws_url"])
    assert (cdp.scheme, cdp.netloc, cdp.path) == ("ws", urlsplit(service_url).netloc, f"/vm/{sid}/cdp")
    claims = jwt.decode(jwt_of(browser), options={"verify_signature": False})
    assert claims["sub"] == sid and claims["exp"] > time.time()


async def test_every_browser_object_carries_base_url_and_a_session_jwt(
    browserless_http: httpx.AsyncClient, browserless_service: ServiceHandle
) -> None:
    http, url = browserless_http, browserless_service.url  # the URLs and jwt need no Chromium
    created = await http.post("/browsers", json={"name": "vm-endpoint-objects"})
    assert created.status_code == 200, created.text
    sid = created.json()["session_id"]
    try:
        assert_points_at_its_vm(created.json(), url)
        by_id = await http.get(f"/browsers/{sid}")
        by_name = await http.get("/browsers/vm-endpoint-objects")
        # by its id: this service's other sessions (other files' on this worker) may fill a page
        page = (await http.get("/browsers", params={"limit": 100, "query": sid})).json()
        listed = [b for b in page if b["session_id"] == sid]
        for browser in (by_id.json(), by_name.json(), *listed):
            assert_points_at_its_vm(browser, url)
        assert len(listed) == 1
    finally:
        await http.delete(f"/browsers/{sid}")


async def test_base_url_uses_the_address_the_client_came_to(
    browserless_http: httpx.AsyncClient, browserless_service: ServiceHandle
) -> None:
    """A client through a tunnel or another name for the host gets URLs it can reach, not the bind address."""
    port = urlsplit(browserless_service.url).port
    created = await browserless_http.post("/browsers", json={})
    assert created.status_code == 200, created.text
    sid = created.json()["session_id"]
    try:
        r = await browserless_http.get(f"/browsers/{sid}", headers={"Host": f"localhost:{port}"})
        assert r.json()["base_url"] == f"http://localhost:{port}/vm/{sid}"
        assert r.json()["cdp_ws_url"].startswith(f"ws://localhost:{port}/vm/{sid}/cdp?jwt=")
    finally:
        await browserless_http.delete(f"/browsers/{sid}")


# the official SDK with its default routing -------------------------------------------------------


@dataclass
class Recorder:
    """Every request the SDK's http client sent, as it went out (URL and headers), by response hook."""

    sent: list[httpx.Request] = field(default_factory=list)

    def __call__(self, response: httpx.Response) -> None:
        self.sent.append(response.request)

    def since(self, mark: int) -> list[httpx.Request]:
        return self.sent[mark:]


@pytest.fixture(scope="module", params=["default", "kernel-compat"])
def target(request: pytest.FixtureRequest) -> ServiceHandle:
    """The default mode on the service with no Chromium (these calls never use the browser), and --kernel-compat."""
    return request.getfixturevalue("browserless_service" if request.param == "default" else "compat_service")


def recording_sdk(target: ServiceHandle) -> tuple[Kernel, Recorder]:
    """The SDK with default routing, and the recorder of what it sends."""
    recorder = Recorder()
    http_client = httpx.Client(event_hooks={"response": [recorder]}, timeout=30)
    return Kernel(api_key=target.token, base_url=target.url, http_client=http_client, max_retries=0), recorder


@pytest.fixture(scope="module")
def routed(target: ServiceHandle) -> Iterator[tuple[Kernel, Recorder, dict]]:
    """The SDK, its recorder, and a session it created (so it has seen the Browser), one per service for the module:
    on --kernel-compat a session costs a Chromium. Its SDK is only the sends test's; other tests make their own."""
    sdk, recorder = recording_sdk(target)
    browser = sdk.browsers.create(timeout_seconds=600).model_dump()
    try:
        yield sdk, recorder, browser
    finally:
        sdk.browsers.delete_by_id(browser["session_id"])
        sdk.close()


def assert_went_to_the_vm(requests: list[httpx.Request], browser: dict, path_ends: str) -> None:
    """At least one request, and every one went to `base_url` with the session's jwt and no API key."""
    assert requests, f"no request for {path_ends}"
    for request in requests:
        url = str(request.url)
        assert url.startswith(browser["base_url"] + "/"), url
        assert request.url.path.endswith(path_ends), url
        assert request.url.params.get("jwt") == jwt_of(browser), url
        assert "authorization" not in request.headers, url


def test_official_sdk_sends_process_fs_and_logs_calls_to_base_url(
    routed: tuple[Kernel, Recorder, dict], target: ServiceHandle
) -> None:
    sdk, recorder, browser = routed
    sid = browser["session_id"]
    create = recorder.sent[0]
    assert create.url.path == "/browsers" and create.headers["authorization"] == f"Bearer {target.token}"

    mark = len(recorder.sent)
    ran = sdk.browsers.process.exec(sid, command="sh", args=["-c", "echo out; echo err >&2; exit 3"])
    assert (ran.exit_code, base64.b64decode(ran.stdout_b64), base64.b64decode(ran.stderr_b64)) == (3, b"out\n",
                                                                                                   b"err\n")
    assert_went_to_the_vm(recorder.since(mark), browser, "/process/exec")

    mark = len(recorder.sent)
    # "ready" first: Kernel's VM sends a stream's headers only with its first event, and the SDK waits for them
    spawned = sdk.browsers.process.spawn(sid, command="sh", args=["-c", "echo ready; read line; echo got:$line"])
    assert_went_to_the_vm(recorder.since(mark), browser, "/process/spawn")

    mark = len(recorder.sent)
    with sdk.browsers.process.stdout_stream(spawned.process_id, id_or_name=sid) as stream:  # see conftest.sdk
        assert_went_to_the_vm(recorder.since(mark), browser, f"/process/{spawned.process_id}/stdout/stream")

        mark = len(recorder.sent)
        written = sdk.browsers.process.stdin(spawned.process_id, id_or_name=sid,
                                             data_b64=base64.b64encode(b"through the vm\n").decode())
        assert written.written_bytes == len(b"through the vm\n")
        assert_went_to_the_vm(recorder.since(mark), browser, f"/process/{spawned.process_id}/stdin")

        output, exit_code = b"", None
        for event in stream:
            if event.data_b64:
                output += base64.b64decode(event.data_b64)
            if event.event == "exit":
                exit_code = event.exit_code
                break
    if exit_code is None:  # Kernel's VM may end the stream at the exit without its event: the status has it
        exit_code = sdk.browsers.process.status(spawned.process_id, id_or_name=sid).exit_code
    assert (output, exit_code) == (b"ready\ngot:through the vm\n", 0)

    made = sdk.browsers.process.exec(sid, command="sh", args=[  # the session's own files (it is a sandbox)
        "-c", "d=$(mktemp -d); mkdir $d/inner; printf 'first line\\nsecond line\\n' > $d/note.txt; echo $d"])
    folder = base64.b64decode(made.stdout_b64).decode().strip()
    mark = len(recorder.sent)
    assert sdk.browsers.fs.read_file(sid, path=f"{folder}/note.txt").read() == b"first line\nsecond line\n"
    assert_went_to_the_vm(recorder.since(mark), browser, "/fs/read_file")

    mark = len(recorder.sent)
    listed = sdk.browsers.fs.list_files(sid, path=folder)
    assert {(f.name, f.is_dir) for f in listed} == {("note.txt", False), ("inner", True)}
    assert_went_to_the_vm(recorder.since(mark), browser, "/fs/list_files")

    mark = len(recorder.sent)
    with sdk.browsers.logs.stream(sid, source="path", path=f"{folder}/note.txt", follow=False) as logs:
        lines = []
        for event in logs:  # Kernel's VM never ends a follow=false stream: stop at what the file holds
            lines.append(event.message)
            if len(lines) == 2:
                break
    assert lines == ["first line", "second line"]
    assert_went_to_the_vm(recorder.since(mark), browser, "/logs/stream")


def test_official_sdk_falls_back_to_the_control_plane_when_its_jwt_is_refused(
    routed: tuple[Kernel, Recorder, dict], target: ServiceHandle
) -> None:
    """A 401 from the VM endpoint (here: a cached jwt that was never valid) makes the SDK drop the route and
    retry once on the control plane with the API key, as it does against Kernel's cloud (the retry takes
    one of the SDK's retries: its default allows two; this module's client allows none unless told)."""
    browser = routed[2]
    sid = browser["session_id"]
    sdk, recorder = recording_sdk(target)  # its own: the stale route and the fresh jwt stay out of the sends test
    try:
        sdk.browser_route_cache.set(BrowserRoute(session_id=sid, base_url=browser["base_url"], jwt="stale." * 3))
        mark = len(recorder.sent)
        ran = sdk.with_options(max_retries=1).browsers.process.exec(sid, command="echo", args=["retried"])
        assert base64.b64decode(ran.stdout_b64) == b"retried\n"
        first, second = recorder.since(mark)
        assert first.url.path == f"/vm/{sid}/process/exec" and "authorization" not in first.headers
        assert second.url.path == f"/browsers/{sid}/process/exec"
        assert second.headers["authorization"] == f"Bearer {target.token}" and "jwt" not in second.url.params
        # reading the browser again hands the SDK a fresh route, and the next call goes direct again
        browser = sdk.browsers.retrieve(sid).model_dump()
        mark = len(recorder.sent)
        sdk.browsers.process.exec(sid, command="true")
        assert_went_to_the_vm(recorder.since(mark), browser, "/process/exec")
    finally:
        sdk.close()
