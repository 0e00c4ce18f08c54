"""Fuzzing the real `bbrowse serve` from its own OpenAPI document (schemathesis), and what the fuzzer found.

Every operation the document lists is driven with generated requests, valid and invalid, through a
dedicated service (so sessions it creates or deletes cannot disturb other modules). Each answer is
checked against the document (status, content type, schema, headers), against the contract's two
error shapes, and for auth: schemathesis sends every case again without the token and with a wrong
one and expects 401. Zero 500s is one of those checks.

Generated ids would only ever reach "404: no such session", so `aim` points a deterministic share of
the cases at real things made for the run: the session, a deleted session (410), fresh processes,
a recorded replay, and files of every kind (file, directory, FIFO, device, symlink, missing). Commands
are the one field not left to chance: a generated command that names a real program is replaced by
`echo`, so the fuzzer never runs `reboot`.

Bounded for the suite (`BBROWSE_FUZZ_EXAMPLES`, default 3 per operation, derandomized); `bench/fuzz_long.py`
runs the same test with many more examples and a random seed.
"""

from __future__ import annotations

import os
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import schemathesis
from conftest import ServiceHandle, start_service, stop_service
from hypothesis import HealthCheck, Phase, settings
from pydantic import ValidationError
from schemathesis import Case

from bbrowse.wire import ERROR_SHAPE_STATUSES, Error, InstanceProxyError

EXAMPLES = int(os.environ.get("BBROWSE_FUZZ_EXAMPLES", "3"))
#: Set (by bench/fuzz_long.py) to explore; unset, every run generates the same cases.
SEED = os.environ.get("BBROWSE_FUZZ_SEED")
#: Streams that stay open (a followed log, a live process) are read for this long, then cut.
STREAM_SECONDS = 1.0
#: Programs the fuzzer may run with generated arguments; any other real program is replaced by the first.
SAFE_COMMANDS = ("echo", "true", "false", "printf", "env", "pwd")
#: Ids and names that are real for this run are chosen in this share of cases (out of 4).
AIMED_OF_4 = 3


@dataclass
class FuzzTarget:
    service: ServiceHandle
    session_id: str
    deleted_session_id: str
    replay_id: str
    paths: list[str]
    log_path: str
    #: One client for the whole run: each new client loads the CA store (tens of ms).
    http: httpx.Client
    made_processes: list[str] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        return self.service.headers


def _file_zoo(root: Path) -> list[str]:
    """One path of every kind read_file, list_files, file_info and logs can be asked about."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "plain.txt").write_text("one\ntwo\nthree\n")
    (root / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (root / "empty").write_bytes(b"")
    (root / "dir").mkdir(exist_ok=True)
    (root / "dir" / "inner.txt").write_text("inner\n")
    os.mkfifo(root / "fifo")
    (root / "link-to-plain").symlink_to(root / "plain.txt")
    (root / "dangling").symlink_to(root / "nowhere")
    unreadable = root / "unreadable"
    unreadable.write_text("secret")
    unreadable.chmod(0)
    return [str(p) for p in sorted(root.iterdir())] + [
        str(root), str(root / "missing.txt"), "/dev/null", "/proc/self/status", "/", str(root / "plain.txt/under"),
    ]


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzTarget]:
    handle = start_service(tmp_path_factory.mktemp("fuzz-state"))
    try:
        with httpx.Client(base_url=handle.url, headers=handle.headers, timeout=60) as http:
            session = http.post("/browsers", json={"name": "fuzzed", "timeout_seconds": 3600})
            assert session.status_code == 200, session.text
            sid = session.json()["session_id"]
            gone = http.post("/browsers", json={}).json()["session_id"]
            assert http.delete(f"/browsers/{gone}").status_code == 204
            replay = http.post(f"/browsers/{sid}/replays", json={"framerate": 2, "max_duration_in_seconds": 1})
            replay_id = replay.json()["replay_id"] if replay.status_code == 201 else "no-replay"
            if replay.status_code == 201:
                http.post(f"/browsers/{sid}/replays/{replay_id}/stop")
        zoo = tmp_path_factory.mktemp("fuzz-files")
        paths = _file_zoo(zoo)
        log = zoo / "fuzz.log"
        log.write_text("".join(f"line {i}\n" for i in range(50)))
        with httpx.Client(base_url=handle.url, headers=handle.headers, timeout=30) as http:
            yield FuzzTarget(handle, sid, gone, replay_id, paths, str(log), http)
    finally:
        stop_service(handle)


#: The coverage phase's ~40 valid session bodies (each starts a Chromium, ~1 s) are for the long run; the
#: suite creates sessions only from its few fuzzing examples, and still sends every invalid body.
SESSIONS_ONLY_FROM_FUZZING = {
    "include-path": "/browsers", "include-method": "POST", "phases": {"coverage": {"generation": {"mode": "negative"}}},
}


@pytest.fixture(scope="module")
def fuzz_schema(target: FuzzTarget):
    config = schemathesis.Config.from_dict({
        "headers": target.headers,
        "request-timeout": 20,
        "generation": {"mode": "all", "max-examples": EXAMPLES},
        # Each path is sent methods it lacks (a 405 in the contract's shape): one another route has, one
        # no route has, and OPTIONS; the long run sends all eight.
        **({} if SEED else {"phases": {"coverage": {"unexpected-methods": ["patch", "trace", "options"]}}}),
        "checks": {
            # A schema-valid request may still be refused for what the machine holds (a missing command,
            # a directory given to read_file, an unknown user): that is the service working, not a bug.
            "positive_data_acceptance": {"enabled": False},
            # An unknown (404) or ended (410) session is reported before the input is looked at.
            "negative_data_rejection": {"expected-statuses": [400, 401, 403, 404, 405, 406, 409, 410, 415, 422, 429]},
        },
        "operations": [
            # A stream cut after a second is a response schemathesis cannot always tell the auth of (it took the
            # suite's own token for a generated one); tests/test_auth.py walks every route with and without it.
            {"include-path-regex": "/(stdout|logs|telemetry)/stream$", "request-timeout": STREAM_SECONDS,
             "checks": {"ignored_auth": {"enabled": False}}},
            *([] if SEED else [SESSIONS_ONLY_FROM_FUZZING]),
        ],
    })
    return schemathesis.openapi.from_url(target.service.url + "/openapi.json", headers=target.headers, config=config)


schema = schemathesis.pytest.from_fixture("fuzz_schema")


# aiming generated cases at real things ---------------------------------------------------------------


def _pick(case: Case, salt: str, options: list[str]) -> str:
    """A choice that depends only on what was generated, so a derandomized run is the same every time."""
    digest = zlib.crc32(f"{salt}|{case.path_parameters}|{case.query}|{case.body!r}".encode())
    return options[digest % len(options)]


def _aimed(case: Case, salt: str) -> bool:
    return int(_pick(case, salt, ["0", "1", "2", "3"])) < AIMED_OF_4


def _new_process(target: FuzzTarget, tty: bool) -> str:
    http = target.http
    body = {"command": "cat", "allocate_tty": tty, "timeout_sec": 60}
    r = http.post(f"/browsers/{target.session_id}/process/spawn", json=body)
    assert r.status_code == 200, r.text
    target.made_processes.append(r.json()["process_id"])
    return r.json()["process_id"]


def _in_coverage_phase(case: Case) -> bool:
    return case.meta is not None and case.meta.phase.name == "coverage"


def aim(case: Case, target: FuzzTarget) -> None:
    """Point this case at real objects (most of the time) and keep generated commands harmless."""
    path, method = case.operation.path, case.method.upper()
    params = case.path_parameters if case.path_parameters is not None else {}
    if "id_or_name" in params and _aimed(case, "session"):
        if path == "/browsers/{id_or_name}" and method == "DELETE":
            params["id_or_name"] = target.deleted_session_id  # never the shared session: a 410
        elif path.endswith("/telemetry/stream") and _in_coverage_phase(case) and not SEED:
            # A telemetry stream of a live session stays open STREAM_SECONDS; the coverage phase opens a dozen.
            # The deleted session's checks its input the same, then answers its past events and ends.
            params["id_or_name"] = target.deleted_session_id
        else:
            params["id_or_name"] = _pick(case, "sid", [target.session_id, "fuzzed", target.deleted_session_id])
    if "process_id" in params and _aimed(case, "process"):
        params["process_id"] = _new_process(target, tty=_pick(case, "tty", ["tty", "pipe"]) == "tty")
    if "replay_id" in params and _aimed(case, "replay"):
        params["replay_id"] = target.replay_id
    query = case.query if isinstance(case.query, dict) else None
    if query is not None and isinstance(query.get("path"), str) and _aimed(case, "path"):
        query["path"] = target.log_path if path.endswith("/logs/stream") else _pick(case, "file", target.paths)
    if query is not None and isinstance(query.get("supervisor_process"), str) and _aimed(case, "program"):
        query["supervisor_process"] = _pick(case, "program", ["bbrowse", "chromium", "recorder"])
    body = case.body
    if isinstance(body, dict) and isinstance(body.get("command"), str):
        command = body["command"]
        if command not in SAFE_COMMANDS and (shutil.which(command) or "/" in command):
            body["command"] = _pick(case, "command", list(SAFE_COMMANDS))


def clean_up(case: Case, response, target: FuzzTarget) -> None:
    """Undo what a case started: the processes `aim` made, and sessions, recordings, processes it created."""
    path, method = case.operation.path, case.method.upper()
    http = target.http
    while target.made_processes:
        made = target.made_processes.pop()
        http.post(f"/browsers/{target.session_id}/process/{made}/kill", json={"signal": "KILL"})
    if response.status_code >= 300:
        return
    if path == "/browsers" and method == "POST":
        http.delete(f"/browsers/{response.json()['session_id']}")
    elif path == "/browsers/{id_or_name}/replays" and method == "POST":
        http.post(f"/browsers/{case.path_parameters['id_or_name']}/replays/{response.json()['replay_id']}/stop")
    elif path.endswith("/process/spawn"):
        sid = case.path_parameters["id_or_name"]
        http.post(f"/browsers/{sid}/process/{response.json()['process_id']}/kill", json={"signal": "KILL"})


# checks beyond the document --------------------------------------------------------------------------


def contract_error_shape(ctx, response, case) -> bool | None:
    """Every error, documented or not (405, 415...), is `Error` for 400/404/500 and `InstanceProxyError` otherwise."""
    status = response.status_code
    if status < 400:
        return None
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"{status} with a body that is not JSON: {response.content[:200]!r}") from None
    model = Error if status in ERROR_SHAPE_STATUSES else InstanceProxyError
    try:
        model.model_validate(body)
    except ValidationError as exc:
        raise AssertionError(f"{status} body is not the contract's {model.__name__}: {body!r}\n{exc}") from None
    return True


# the fuzz run ----------------------------------------------------------------------------------------


@pytest.mark.timeout(600)  # every operation in one test item: ~40 s alone, more on a loaded machine
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=SEED is None,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate] if SEED is None else [Phase.explicit, Phase.generate, Phase.shrink],
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_as_documented_with_and_without_the_token(case: Case, target: FuzzTarget) -> None:
    aim(case, target)
    response = case.call()
    try:
        case.validate_response(response, additional_checks=[contract_error_shape])
    finally:
        clean_up(case, response, target)


# regressions: what the fuzzer found, one test each ---------------------------------------------------


def test_the_document_lists_the_contract_errors_and_the_bearer_scheme(target: FuzzTarget) -> None:
    """FastAPI documented a 422 `HTTPValidationError` the service never sends, and no 400/401/404/409/410."""
    http = target.http
    document = http.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert document["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http", "scheme": "bearer", "description": "The service's token",
    }
    assert document["security"] == [{"bearerAuth": []}]

    def body_model(op: dict, status: str) -> str:
        return op["responses"][status]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]

    for path, item in document["paths"].items():
        for method, op in item.items():
            assert "422" not in op["responses"], (method, path)
            assert body_model(op, "401") == "InstanceProxyError", (method, path)
            assert body_model(op, "500") == "Error", (method, path)
            if "{id_or_name}" in path:
                assert body_model(op, "404") == "Error", (method, path)
    spawn = document["paths"]["/browsers/{id_or_name}/process/spawn"]["post"]
    assert body_model(spawn, "400") == "Error" and body_model(spawn, "410") == "InstanceProxyError"
    assert body_model(document["paths"]["/browsers"]["post"], "409") == "InstanceProxyError"
    screenshot = document["paths"]["/browsers/{id_or_name}/computer/screenshot"]["post"]
    assert body_model(screenshot, "503") == "InstanceProxyError"


def test_required_and_patterned_inputs_are_documented_as_they_are_checked(target: FuzzTarget) -> None:
    """`path` of read_file was documented optional (and free text), `data_b64` as any string."""
    http = target.http
    document = http.get("/openapi.json").json()
    for op in ("read_file", "list_files", "file_info"):
        [param] = [p for p in document["paths"][f"/browsers/{{id_or_name}}/fs/{op}"]["get"]["parameters"]
                   if p["name"] == "path"]
        assert param["required"] is True and param["schema"]["pattern"] == "^/.*", op
    stdin = document["components"]["schemas"]["StdinRequest"]["properties"]["data_b64"]
    assert stdin["format"] == "byte" and stdin["pattern"].startswith("^")


def test_405_lists_every_method_of_the_path(target: FuzzTarget) -> None:
    """Starlette's 405 named only the first route's method (`Allow: POST` for GET+POST /browsers)."""
    http = target.http
    for path, expected in (
        ("/browsers", {"GET", "POST"}),
        (f"/browsers/{target.session_id}", {"GET", "PATCH", "DELETE"}),
        (f"/browsers/{target.session_id}/replays", {"GET", "POST"}),
    ):
        r = http.request("PUT", path)
        assert r.status_code == 405
        assert set(r.headers["allow"].split(", ")) == expected, path
        assert r.json()["code"] == "invalid_request"


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("/browsers", {"stealth": 0}, "stealth"),
        ("/browsers", {"timeout_seconds": "60"}, "timeout_seconds"),
        ("/browsers", {"viewport": {"width": 800.0, "height": 600}}, "viewport.width"),
        ("/browsers/{sid}/process/spawn", {"command": "echo", "allocate_tty": 1}, "allocate_tty"),
        ("/browsers/{sid}/process/exec", {"command": "echo", "timeout_sec": "5"}, "timeout_sec"),
        ("/browsers/{sid}/computer/screenshot", {"region": {"x": "0", "y": 0, "width": 1, "height": 1}}, "region.x"),
        ("/browsers/{sid}/replays", {"framerate": True}, "framerate"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_400_naming_the_field(
    target: FuzzTarget, route: str, body: dict, field: str
) -> None:
    """Bodies were read leniently: `"stealth": 0` made a session, `"timeout_sec": "5"` ran a command."""
    http = target.http
    r = http.post(route.format(sid=target.session_id), json=body)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "bad_request"
    assert any(d["message"].startswith(f"{field}:") for d in r.json()["details"]), r.json()
