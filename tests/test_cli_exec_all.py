"""`bbrowse exec --all` / `--query Q`: one command on many sessions at once, as a user runs it."""

from __future__ import annotations

import base64
import json
import uuid

from cli_support import bb


async def test_exec_on_every_matching_session(browserless_service, browserless_http) -> None:
    tag = uuid.uuid4().hex[:6]
    made = []
    for i in range(3):
        r = await browserless_http.post("/browsers", json={"name": f"fleet-{tag}-{i}", "timeout_seconds": 600})
        made.append(r.json())
    other = (await browserless_http.post("/browsers", json={"name": f"bystander-{tag}"})).json()
    names = [b["name"] for b in made]
    # one session is made to fail: a file in its own working directory
    marked = bb(browserless_service, "exec", made[1]["session_id"], "--", "touch", "fail-marker")
    assert marked.returncode == 0, marked.stderr

    script = 'echo "hello from $0"; echo "to stderr" >&2; test ! -e fail-marker'
    result = bb(browserless_service, "exec", "--query", f"fleet-{tag}", "--", "sh", "-c", script, "box")
    assert result.returncode == 1, result.stderr  # it failed on one
    out = result.stdout.decode()
    for name in names:
        expected = 1 if name == names[1] else 0
        block = out.split(f"==> {name} <== exit {expected}\n", 1)[1].split("==>", 1)[0]
        assert block == "hello from box\n", (name, out)  # one block per session, whole
    assert f"bystander-{tag}" not in out  # only the sessions matching
    err = result.stderr.decode()
    assert all(f"==> {name} <==\nto stderr\n" in err for name in names), err

    everything = bb(browserless_service, "exec", "--all", "--json", "--", "true")
    assert everything.stdout, everything.stderr
    entries = json.loads(everything.stdout)
    by_id = {e["session_id"]: e for e in entries}
    # other tests' sessions on this service may end meanwhile: the status is 0 only when every one worked
    assert everything.returncode == (0 if all(e.get("exit_code") == 0 for e in entries) else 1), entries
    assert {b["session_id"] for b in [*made, other]} <= set(by_id)
    assert all(by_id[b["session_id"]]["exit_code"] == 0 for b in [*made, other])
    assert by_id[made[0]["session_id"]]["name"] == names[0]

    failing = json.loads(bb(browserless_service, "exec", "--query", f"fleet-{tag}", "--json", "--",
                            "sh", "-c", "printf x; test ! -e fail-marker").stdout)
    assert sorted((e["name"], e["exit_code"], base64.b64decode(e["stdout_b64"])) for e in failing) == [
        (names[0], 0, b"x"), (names[1], 1, b"x"), (names[2], 0, b"x")]

    nothing = bb(browserless_service, "exec", "--query", f"nothing-{tag}", "--", "true")
    assert nothing.returncode == 1 and nothing.stderr.decode().startswith("error: not_found: no active session")
    for session in [*made, other]:
        await browserless_http.delete(f"/browsers/{session['session_id']}")
