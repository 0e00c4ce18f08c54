"""Each session is a sandbox (bubblewrap namespaces), as Kernel gives each session a VM of its own.

Every check is a probe: it looks, or tries to write a uniquely named file and then looks whether it is there.
Nothing here deletes or overwrites anything outside a session, so a broken sandbox cannot harm this machine.
Each probe that something is invisible has a control that shows the same probe sees it where it should.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from bbrowse.service import sandbox

pytestmark = pytest.mark.skipif(not sandbox.probe().enabled, reason="this host cannot make namespaces")


async def run(http: httpx.AsyncClient, sid: str, script: str, **extra) -> tuple[int, str]:
    r = await http.post(f"/browsers/{sid}/process/exec", json={"command": "sh", "args": ["-c", script], **extra})
    assert r.status_code == 200, r.text
    body = r.json()
    return body["exit_code"], base64.b64decode(body["stdout_b64"]).decode() + base64.b64decode(
        body["stderr_b64"]).decode()


async def new_session(http: httpx.AsyncClient, **request) -> str:
    r = await http.post("/browsers", json={"timeout_seconds": 600, **request})
    assert r.status_code == 200, r.text
    return r.json()["session_id"]


@pytest.fixture(scope="module")
async def two(browserless_http: httpx.AsyncClient) -> AsyncIterator[tuple[str, str]]:
    """Two sessions of the same service (one without Chromium: these probes need none, and it starts at once)."""
    a, b = await new_session(browserless_http), await new_session(browserless_http)
    yield a, b
    for sid in (a, b):
        await browserless_http.delete(f"/browsers/{sid}")


def _files_named(root: Path, name: str, prefix: bool = False) -> list[Path]:
    return [Path(d) / f for d, _dirs, files in os.walk(root) for f in files
            if f == name or (prefix and f.startswith(name))]


def _exists(path: str) -> bool:
    return os.path.lexists(path)


def _users(passwd: Path) -> set[str]:
    return {line.split(":")[0] for line in passwd.read_text().splitlines()}


async def test_a_session_sees_nothing_of_this_machine_nor_of_the_service_nor_of_another_session(
    browserless_http: httpx.AsyncClient, browserless_service, two: tuple[str, str], tmp_path: Path
) -> None:
    http, service = browserless_http, browserless_service
    a, b = two
    host_file = tmp_path / f"host-only-{secrets.token_hex(4)}.txt"
    host_file.write_text("made on the host, outside any session")
    marker = f"a-only-{secrets.token_hex(6)}"
    # Session A: a file in its /tmp and a process whose command line names the marker.
    assert (await run(http, a, f"echo a > /tmp/{marker}"))[0] == 0
    r = await http.post(f"/browsers/{a}/process/spawn", json={
        "command": "python3", "args": ["-c", "import time; time.sleep(600)", marker]})
    assert r.status_code == 200, r.text
    a_proc = r.json()["process_id"]
    seen_in_a = (await run(http, a, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"))[1]
    assert marker in seen_in_a and (await run(http, a, f"test -e /tmp/{marker}"))[0] == 0  # the probes can see

    probes = {
        "host file": f"test -e {host_file}",
        "state dir": f"test -e {service.state_dir}",
        "A's /tmp file": f"test -e /tmp/{marker}",
    }
    for what, probe in probes.items():
        code, out = await run(http, b, probe)
        assert code == 1, f"session B sees the {what}: {out}"
    processes = (await run(http, b, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"))[1]
    assert marker not in processes  # A's process
    assert "bbrowse" not in processes and "serve" not in processes  # the service
    assert str(service.state_dir) not in processes and "pytest" not in processes
    # The service's own file calls for B see B's filesystem too, and a link cannot lead them out of it.
    r = await http.get(f"/browsers/{b}/fs/read_file", params={"path": str(host_file)})
    assert r.status_code == 404, r.text
    assert (await http.get(f"/browsers/{a}/fs/read_file", params={"path": f"/tmp/{marker}"})).content == b"a\n"
    assert (await http.get(f"/browsers/{b}/fs/file_info", params={"path": f"/tmp/{marker}"})).status_code == 404
    assert (await run(http, b, f"ln -s {host_file} /workspace/escape && ln -s / /workspace/root-link"))[0] == 0
    assert (await http.get(f"/browsers/{b}/fs/read_file", params={"path": "/workspace/escape"})).status_code == 404
    r = await http.get(f"/browsers/{b}/fs/read_file", params={"path": f"/workspace/root-link{host_file}"})
    assert r.status_code == 404
    await http.post(f"/browsers/{a}/process/{a_proc}/kill", json={"signal": "KILL"})


async def test_root_inside_is_not_root_of_this_machine(
    browserless_http: httpx.AsyncClient, two: tuple[str, str]
) -> None:
    http, (a, _) = browserless_http, two
    probe = f"/etc/bbrowse-probe-{secrets.token_hex(8)}"
    code, out = await run(http, a, f"id -u; touch {probe}", as_root=True)
    assert out.startswith("0\n") and code != 0, out
    r = await http.put(f"/browsers/{a}/fs/write_file", params={"path": probe}, content=b"x")
    assert r.status_code >= 400
    assert not _exists(probe)
    # Its own machine: a hostname of its own, a user `kernel` as on Kernel's VMs, and no user of this host.
    code, out = await run(http, a, "hostname; id -un; id -u; echo $HOME", as_user="kernel")
    hostname, name, uid, home = out.split("\n")[:4]
    assert code == 0 and hostname != socket.gethostname() and (name, uid, home) == ("kernel", "1000", "/home/kernel")
    host_users = _users(Path("/etc/passwd")) - {"root", "nobody"}
    inside_users = {line.split(":")[0] for line in (await run(http, a, "cat /etc/passwd"))[1].splitlines()}
    assert not host_users & inside_users


async def test_deleting_a_session_removes_everything_it_wrote(
    browserless_http: httpx.AsyncClient, browserless_service
) -> None:
    http, service = browserless_http, browserless_service
    sid = await new_session(http)
    name = f"written-{secrets.token_hex(6)}"
    places = ["/tmp", "/var/tmp", "/root", "/workspace", "/home/kernel"]
    assert (await run(http, sid, " && ".join(f"echo x > {p}/{name}" for p in places)))[0] == 0
    assert (await run(http, sid, f"mkdir -p /home/kernel/d && echo y > /home/kernel/d/{name}.k",
                      as_user="kernel"))[0] == 0
    r = await http.put(f"/browsers/{sid}/fs/write_file", params={"path": f"/root/deep/{name}.api"}, content=b"z")
    assert r.status_code == 201
    written = _files_named(service.state_dir, name)
    assert len(written) == len(places)  # kept on this machine under the session's folder while it lives
    assert (await http.delete(f"/browsers/{sid}")).status_code == 204
    assert _files_named(service.state_dir, name, prefix=True) == []


async def test_the_network_is_shared_unless_the_session_is_offline(
    http: httpx.AsyncClient, browserless_http: httpx.AsyncClient, two, pages
) -> None:
    a, _ = two
    url = pages.url("net-probe.txt", "reached")
    fetch = f"python3 -c \"import urllib.request; print(urllib.request.urlopen('{url}', timeout=5).read().decode())\""
    assert await run(browserless_http, a, fetch) == (0, "reached\n")  # a developer's local server, from the session
    offline = await new_session(http, offline=True)
    try:
        code, out = await run(http, offline, fetch)
        assert code != 0 and "reached" not in out
        interfaces = (await run(http, offline, "tail -n +3 /proc/net/dev | cut -d: -f1"))[1].split()
        assert interfaces == ["lo"]
        # Its browser still works (screenshots go through CDP on a pipe, not the network).
        r = await http.post(f"/browsers/{offline}/computer/screenshot", json={})
        assert r.status_code == 200 and r.content.startswith(b"\x89PNG")
    finally:
        await http.delete(f"/browsers/{offline}")


def test_the_service_says_whether_sessions_are_sandboxed(service, tmp_path: Path, monkeypatch, capsys) -> None:
    said = json.loads((Path(service.state_dir) / "serve.json").read_text())["sandbox"]
    assert said.startswith("on (")
    # `bbrowse info` on this service's machine (in this process: the command's own start costs seconds).
    from bbrowse.commands import info

    for name in ("KERNEL_API_KEY", "KERNEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BBROWSE_STATE_DIR", str(service.state_dir))
    monkeypatch.setenv("BBROWSE_CONFIG_DIR", str(tmp_path / "config"))
    info.show(info.gather())
    shown = capsys.readouterr().out
    assert "sandbox" in shown and said in shown.replace("\n", " "), shown


def test_without_bwrap_or_with_no_sandbox_sessions_run_on_the_host(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    missing = sandbox.probe()
    assert not missing.enabled and "bwrap" in missing.reason and "host" in missing.describe()
    monkeypatch.undo()
    chosen = sandbox.probe(disabled=True)
    assert not chosen.enabled and "--no-sandbox" in chosen.describe()


async def test_a_no_sandbox_service_says_so_and_its_sessions_see_the_host(
    unsandboxed_service, unsandboxed_http: httpx.AsyncClient, tmp_path: Path
) -> None:
    said = json.loads((Path(unsandboxed_service.state_dir) / "serve.json").read_text())["sandbox"]
    assert said.startswith("off: --no-sandbox")
    host_file = tmp_path / "seen.txt"
    host_file.write_text("on the host")
    sid = await new_session(unsandboxed_http)
    try:
        assert (await run(unsandboxed_http, sid, f"cat {host_file}")) == (0, "on the host")
    finally:
        await unsandboxed_http.delete(f"/browsers/{sid}")
