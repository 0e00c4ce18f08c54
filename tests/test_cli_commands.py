"""The scriptable subcommands against a real `bbrowse serve` with KERNEL_BASE_URL / KERNEL_API_KEY: sessions,
new, rm, info, exec, cat, ls, logs, errors. A few run as a user runs them (`bb`: a subprocess, its exit status
and pipes); the rest run the same command in this process (`bb_here`), where the subject is the command's code.
All against the service with no Chromium: no command here uses a session's browser, and each session it
creates would otherwise start one."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import subprocess

import pytest
from cli_support import BBROWSE, PtyProcess, assert_one_line_error, bb, bb_here, cli_env
from conftest import session_area


@pytest.fixture(scope="module")
def session_id(browserless_module_session_id: str) -> str:
    """One session for the module, on the service with no Chromium (these commands never use the browser): its
    tests leave nothing another sees."""
    return browserless_module_session_id


@pytest.fixture
def area(browserless_service, session_id):
    """A fresh directory of the session (a session's sandbox sees no tmp_path): str() is the path inside,
    what a command is given; file operations act on the same files from outside (conftest.session_area)."""
    return session_area(browserless_service, session_id, f"files-{secrets.token_hex(4)}")

# sessions, new, rm --------------------------------------------------------------


def test_new_sessions_rm_round_trip(browserless_service):
    name = f"cli-{secrets.token_hex(4)}"
    created = bb(browserless_service, "new", "--name", name, "--timeout", "600", "--json")
    assert created.returncode == 0, created.stderr
    browser = json.loads(created.stdout)
    sid = browser["session_id"]
    assert browser["name"] == name and browser["timeout_seconds"] == 600

    listed = json.loads(bb(browserless_service, "sessions", "--json").stdout)
    assert sid in [b["session_id"] for b in listed]

    table = bb(browserless_service, "sessions", "--query", name).stdout.decode().splitlines()
    assert table[0].split() == ["NAME", "ID", "CREATED", "HEADLESS", "TIMEOUT"]
    assert len(table) == 2 and table[1].split()[:2] == [name, sid]
    assert table[1].split()[-2:] == ["yes", "10m"]

    removed = bb(browserless_service, "rm", name)
    assert removed.returncode == 0 and removed.stdout.decode().strip() == name

    assert sid not in [b["session_id"] for b in json.loads(bb(browserless_service, "sessions", "--json").stdout)]
    deleted = json.loads(bb(browserless_service, "sessions", "--all", "--json", "--query", sid).stdout)
    assert [b["session_id"] for b in deleted] == [sid] and deleted[0]["deleted_at"]


def test_new_prints_only_the_id(browserless_service):
    created = bb_here(browserless_service, "new", "--timeout", "60")
    try:
        assert created.returncode == 0, created.stderr
        sid = created.stdout.decode().strip()
        assert "\n" not in sid and sid
        listed = json.loads(bb_here(browserless_service, "sessions", "--json", "--query", sid).stdout)
        assert listed[0]["session_id"] == sid
    finally:
        bb_here(browserless_service, "rm", created.stdout.decode().strip())


def test_rm_reports_each_failure_and_still_deletes_the_rest(browserless_service):
    sid = bb_here(browserless_service, "new").stdout.decode().strip()
    result = bb_here(browserless_service, "rm", "no-such-session", sid)
    assert result.returncode == 1
    assert result.stdout.decode().split() == [sid]
    assert_one_line_error(result, "not_found", 404)
    assert json.loads(bb_here(browserless_service, "sessions", "--json", "--query", sid).stdout) == []


def test_new_rejects_a_duplicate_name_with_the_services_conflict(browserless_service):
    name = f"dup-{secrets.token_hex(4)}"
    first = bb_here(browserless_service, "new", "--name", name)
    try:
        assert first.returncode == 0
        assert_one_line_error(bb_here(browserless_service, "new", "--name", name), "conflict", 409)
    finally:
        bb_here(browserless_service, "rm", name)


def test_info_names_the_remote_service_and_paths(browserless_service, tmp_path):
    env = cli_env(browserless_service, BBROWSE_STATE_DIR=str(tmp_path / "state"),
                  BBROWSE_CONFIG_DIR=str(tmp_path / "config"))
    info = json.loads(bb_here(browserless_service, "info", "--json", env=env).stdout)
    assert info["service"] == {"kind": "remote", "url": browserless_service.url, "status": "ok",
                               "from": "environment (KERNEL_BASE_URL, KERNEL_API_KEY)"}
    assert info["state_dir"] == str(tmp_path / "state")
    assert info["config_dir"] == str(tmp_path / "config")
    assert info["discovery_file"] == str(tmp_path / "state" / "serve.json")
    assert browserless_service.token not in json.dumps(info)
    text = bb_here(browserless_service, "info", env=env).stdout.decode()
    assert f"remote · {browserless_service.url}" in text and browserless_service.token not in text


def test_info_reports_a_wrong_token(browserless_service):
    env = cli_env(browserless_service, KERNEL_API_KEY="wrong-token")
    info = json.loads(bb_here(browserless_service, "info", "--json", env=env).stdout)
    assert info["service"]["status"] == "unauthorized"


# exec ----------------------------------------------------------------------------


def test_exec_keeps_streams_apart_and_propagates_the_exit_code(browserless_service, session_id):
    result = bb(browserless_service, "exec", session_id, "--",
                "sh", "-c", "printf out1; echo err1 >&2; printf out2; exit 5")
    assert result.returncode == 5
    assert result.stdout == b"out1out2"
    assert result.stderr == b"err1\n"


def test_exec_success_cwd_env_and_options_after_the_id(browserless_service, session_id, area):
    result = bb_here(browserless_service, "exec", session_id, "--cwd", str(area), "-e", "GREETING=hi there", "--",
                "sh", "-c", 'echo "$PWD|$GREETING"')
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{area}|hi there\n".encode()
    dashed = bb_here(browserless_service, "exec", session_id, "ls", "-a", str(area))  # `-a` belongs to ls
    assert dashed.returncode == 0 and b".." in dashed.stdout.split()


def test_exec_timeout_and_json(browserless_service, session_id):
    result = bb_here(browserless_service, "exec", session_id, "--timeout", "1", "--", "sleep", "30")
    assert result.returncode == 143
    data = json.loads(bb_here(browserless_service, "exec", session_id, "--json", "--",
                              "sh", "-c", "echo x; exit 2").stdout)
    assert data["exit_code"] == 2 and data["stdout_b64"] == "eAo="


def test_exec_errors_are_one_line(browserless_service, session_id):
    assert_one_line_error(bb_here(browserless_service, "exec", session_id, "--", "no-such-program-xyz"),
                          "bad_request", 400)
    line = assert_one_line_error(bb_here(browserless_service, "exec", session_id, "--cwd", "relative", "--", "true"),
                                 "bad_request", 400)
    assert "cwd" in line
    assert_one_line_error(bb_here(browserless_service, "exec", session_id, "--env", "NOEQUALS", "--", "true"),
                          "usage", exit_code=2)
    assert_one_line_error(bb_here(browserless_service, "exec", session_id), "usage", exit_code=2)


# cat, ls -------------------------------------------------------------------------


def test_cat_is_byte_exact_for_binary_data(browserless_service, session_id, area):
    data = os.urandom(3 * 1024 * 1024 + 17) + bytes(range(256))
    path = area / "random.bin"
    path.write_bytes(data)
    result = bb_here(browserless_service, "cat", session_id, str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == data
    assert result.stderr == b""  # no progress bar when stderr is not a terminal


def test_cat_into_a_closed_pipe_exits_quietly(browserless_service, session_id, area):
    path = area / "big.bin"
    path.write_bytes(os.urandom(8 * 1024 * 1024))
    proc = subprocess.Popen([*BBROWSE, "cat", session_id, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=cli_env(browserless_service))
    assert proc.stdout.read(1000)
    proc.stdout.close()
    try:
        assert proc.wait(60) != 0
        assert b"Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_cat_errors(browserless_service, session_id, area):
    assert_one_line_error(bb_here(browserless_service, "cat", session_id, str(area / "missing")), "not_found", 404)
    assert_one_line_error(bb_here(browserless_service, "cat", session_id, str(area)), "bad_request", 400)


def test_ls_plain_long_and_json(browserless_service, session_id, area):
    (area / "sub").mkdir()
    (area / "b.txt").write_bytes(b"12345")
    (area / "a.bin").write_bytes(b"")

    plain = bb_here(browserless_service, "ls", session_id, str(area))
    assert plain.stdout.decode().splitlines() == ["a.bin", "b.txt", "sub/"]

    long = bb_here(browserless_service, "ls", session_id, str(area), "-l").stdout.decode().splitlines()
    assert [row.split()[-1] for row in long] == ["a.bin", "b.txt", "sub/"]
    assert long[1].split()[0] == "-rw-r--r--" and long[1].split()[1] == "5B"
    assert long[2].startswith("d")

    entries = json.loads(bb_here(browserless_service, "ls", session_id, str(area), "--json").stdout)
    assert {e["name"]: (e["size_bytes"], e["is_dir"]) for e in entries} == {
        "a.bin": (0, False), "b.txt": (5, False), "sub": (entries[2]["size_bytes"], True)}
    assert all(e["path"] == str(area / e["name"]) for e in entries)


# logs ----------------------------------------------------------------------------


def test_logs_no_follow_and_json(browserless_service, session_id, area):
    log = area / "app.log"
    log.write_text("first line\nsecond line\n")
    plain = bb_here(browserless_service, "logs", session_id, "--path", str(log), "--no-follow")
    assert plain.returncode == 0 and plain.stdout == b"first line\nsecond line\n"
    events = [json.loads(line) for line in
              bb_here(browserless_service, "logs", session_id, "--path", str(log), "--no-follow",
                      "--json").stdout.splitlines()]
    assert [e["message"] for e in events] == ["first line", "second line"]
    assert all(e["event"] == "log" and e["timestamp"] for e in events)
    last = bb_here(browserless_service, "logs", session_id, "--path", str(log), "--no-follow", "-n", "1")
    assert last.stdout == b"second line\n"


def test_logs_follow_prints_appended_lines_as_they_come(browserless_service, session_id, area):
    log = area / "follow.log"
    log.write_text("already there\n")
    proc = subprocess.Popen([*BBROWSE, "logs", session_id, "--path", str(log), "--tail", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(browserless_service))
    try:
        assert proc.stdout.readline() == b"already there\n"  # the stream is open: appends are seen from here
        with log.open("a") as f:
            f.write("appended later\n")
        assert proc.stdout.readline() == b"appended later\n"
    finally:
        proc.terminate()
        proc.wait(30)


def test_logs_supervisor_and_errors(browserless_service, session_id):
    result = bb_here(browserless_service, "logs", session_id, "--supervisor", "bbrowse", "--no-follow", "-n", "5")
    assert result.returncode == 0, result.stderr
    assert 1 <= len(result.stdout.splitlines()) <= 5
    missing = bb_here(browserless_service, "logs", session_id, "--path", "/no/such.log", "--no-follow")
    assert_one_line_error(missing, "not_found", 404)
    assert_one_line_error(bb_here(browserless_service, "logs", session_id, "--supervisor", "nope", "--no-follow"),
                          "not_found", 404)
    assert_one_line_error(bb_here(browserless_service, "logs", session_id), "usage", exit_code=2)
    both = bb_here(browserless_service, "logs", session_id, "--path", "/x", "--supervisor", "y")
    assert_one_line_error(both, "usage", exit_code=2)


# help, and one-line errors for every command: tests/test_inproc_cli.py (in-process, from the registry) ------


def test_cat_shows_a_progress_bar_only_on_a_terminal(browserless_service, session_id, area, tmp_path):
    data = os.urandom(2 * 1024 * 1024)
    source, copy = area / "payload.bin", tmp_path / "copy.bin"
    source.write_bytes(data)
    bbrowse = " ".join(shlex.quote(part) for part in BBROWSE)
    term = PtyProcess(["sh", "-c", f"{bbrowse} cat {session_id} {source} > {copy}; echo rc=$?"],
                      cli_env(browserless_service))
    try:
        term.expect(rb"rc=0\r\n")
        assert copy.read_bytes() == data
        # The bar was drawn on stderr (it hides the cursor while it runs), labelled with the path: its start, since
        # an 80-column bar cuts a long path (temporary directories differ in length from machine to machine).
        assert b"\x1b[?25l" in term.output
        assert str(source).encode()[:20] in term.output
    finally:
        term.close()
