"""bbrowse over a real network's ways: TLS with a test CA, an HTTPS_PROXY, links that drop and stall.

Against `--kernel-compat` (the stricter server) through `netem` (tests/net_support.py).
"""

from __future__ import annotations

import subprocess
import threading
import time

import httpx
from app_support import wait_for
from cli_support import BBROWSE, PtyProcess, bb, cli_env
from conftest import session_area
from netem import TLS_HOST

from bbrowse.client import BrowserClient, ClientConfig
from bbrowse.config import ShellSettings, defaults
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.panes.logs import LogsPane, LogTarget
from bbrowse.tui.panes.shells import ShellsPane, ShellTab
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.wire import Browser, LogSource

pytest_plugins = ["net_support"]


def _through_proxy(service, proxy, ca) -> dict[str, str]:
    """The environment of a command that reaches `service` only as `TLS_HOST`, through `proxy`, trusting `ca`."""
    port = service.url.rsplit(":", 1)[1]
    env = cli_env(service, KERNEL_BASE_URL=f"https://{TLS_HOST}:{port}", HTTPS_PROXY=proxy.url,
                  SSL_CERT_FILE=str(ca.ca_file))
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    return env


def test_commands_and_attach_over_tls_through_a_connect_proxy(tls_compat_service, connect_proxy, test_ca) -> None:
    """A name only the proxy resolves, a certificate only the test CA signed: `bbrowse new`, `bbrowse shell`
    (its attach WebSocket over wss) and `bbrowse rm` work, every connection tunnelled through the proxy."""
    env = _through_proxy(tls_compat_service, connect_proxy, test_ca)
    port = tls_compat_service.url.rsplit(":", 1)[1]
    untrusted = {**env}
    untrusted.pop("SSL_CERT_FILE")
    refused = bb(tls_compat_service, "sessions", env=untrusted)
    assert refused.returncode != 0 and b"certificate" in refused.stderr.lower(), refused.stderr

    created = bb(tls_compat_service, "new", "--timeout", "120", env=env)
    assert created.returncode == 0, created.stderr
    sid = created.stdout.decode().strip()
    try:
        shell = PtyProcess([*BBROWSE, "shell", sid, "--", "sh", "-c", "echo tls-$((6*7)); read x; exit 3"], env)
        try:
            shell.expect(rb"tls-42")
            shell.send(b"\r")
            assert shell.wait(30) == 3
        finally:
            shell.close()
    finally:
        assert bb(tls_compat_service, "rm", sid, env=env).returncode == 0
    assert connect_proxy.tunnels and set(connect_proxy.tunnels) == {f"{TLS_HOST}:{port}"}
    # calls and the attach WebSocket (a connection of its own) at least
    assert len(connect_proxy.tunnels) >= 2


async def test_app_lists_sessions_over_tls_through_a_connect_proxy(tls_compat_service, connect_proxy, test_ca,
                                                                   monkeypatch) -> None:
    port = tls_compat_service.url.rsplit(":", 1)[1]
    monkeypatch.setenv("HTTPS_PROXY", connect_proxy.url)
    monkeypatch.setenv("SSL_CERT_FILE", str(test_ca.ca_file))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    config = ClientConfig(f"https://{TLS_HOST}:{port}", tls_compat_service.token)
    client = BrowserClient(config=config)
    browser = await client.sessions.create(timeout_seconds=120, name="over-tls")
    try:
        app = BbrowseApp(target=Target(config, "remote"))
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: browser.session_id in [
                key.value for key in app.screen.query_one("#sessions-table").rows], what="the session listed")
    finally:
        await client.sessions.delete(browser.session_id)
    assert f"{TLS_HOST}:{port}" in connect_proxy.tunnels



class _Reader:
    """The lines a child writes on a pipe, read in a thread, with bounded waits."""

    def __init__(self, pipe) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe) -> None:
        for raw in pipe:
            with self._changed:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, predicate, timeout: float, what: str) -> float:
        """Seconds until `predicate(lines)` held."""
        started = time.monotonic()
        with self._changed:
            if not self._changed.wait_for(lambda: predicate(self.lines), timeout):
                raise AssertionError(f"{what} not seen within {timeout} s: {self.lines[-20:]}")
        return time.monotonic() - started


def test_logs_follow_survives_a_drop_and_a_stall(compat_service, bad_link) -> None:
    """`bbrowse logs --follow` of a file on --kernel-compat through a 100 ms link: after a drop (connections
    reset, refused for 2 s) and a stall (noticed within 10 s), every line written meanwhile is printed, in
    order, none twice, and stderr says what happened."""
    link = bad_link(compat_service, delay=0.05)
    with httpx.Client(base_url=compat_service.url, headers=compat_service.headers, timeout=30) as http:
        sid = http.post("/browsers", json={"timeout_seconds": 300}).json()["session_id"]
        try:
            log = session_area(compat_service, sid, "net-logs") / "app.log"
            with open(log, "w") as f:
                f.write("before\n")
            env = cli_env(compat_service, KERNEL_BASE_URL=link.url)
            proc = subprocess.Popen([*BBROWSE, "logs", sid, "--path", str(log)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = _Reader(proc.stdout), _Reader(proc.stderr)
            written = 0

            def write(count: int) -> None:
                nonlocal written
                with open(log, "a") as f:
                    for _ in range(count):
                        written += 1
                        f.write(f"line {written}\n")

            try:
                for _ in range(100):  # the stream starts at the end: write until a line shows
                    write(1)
                    if out.lines:
                        break
                    time.sleep(0.2)
                first = int(out.lines[0].split()[1])

                def complete(lines: list[str]) -> bool:
                    return len(lines) >= written - first + 1

                out.wait_for(complete, 10, "the lines before the drop")
                assert link.drop(refuse_for=2.0) >= 1
                write(5)
                time.sleep(2.5)
                write(5)
                out.wait_for(complete, 15, "the lines written while the link was down")

                said = len(err.lines)
                link.stall()
                write(5)
                noticed = err.wait_for(lambda lines: any("link stalled" in line for line in lines[said:]), 20,
                                       "the stall said on stderr")
                write(5)
                link.resume()
                back = out.wait_for(complete, 10, "the lines written during the stall")
            finally:
                proc.terminate()
                proc.wait(10)
            assert out.lines == [f"line {n}" for n in range(first, written + 1)]  # in order, none twice
            assert noticed <= 10.5, noticed
            assert back <= 3.0, back
            gaps = [line for line in err.lines if line.startswith("-- gap of") and "written meanwhile follow" in line]
            assert len(gaps) == 2, err.lines
        finally:
            http.delete(f"/browsers/{sid}")


PROMPT = "PROMPT>"
SHELL = ("env", f"PS1={PROMPT} ", "bash", "--norc", "--noprofile", "-i")


def _terminal_lines(tab) -> list[str]:
    emulator = tab.terminal.emulator
    return [*emulator.scrollback_text(), *emulator.display]


def _log_lines(panel) -> list[str]:
    buffer = panel.view.buffer
    return [buffer.line(seq) for seq in range(buffer.first_seq, buffer.end_seq)]


async def test_shell_and_log_panes_survive_a_drop_and_a_stall(compat_service, compat_http, bad_link) -> None:
    """The app on --kernel-compat through a 100 ms link: a shell printing a line every 0.1 s and a log pane
    following a file. A stall is said in the top bar and both panes; when the link is back every line of
    the gap is there, in order, once; after a drop (reset, refused 1 s) the log's too, and the shell goes on.
    (How fast: bench/bench_net.py.)"""
    link = bad_link(compat_service, delay=0.05)
    r = await compat_http.post("/browsers", json={"timeout_seconds": 600})
    browser = Browser.model_validate(r.json())
    log = session_area(compat_service, browser.session_id, "net-panes") / "app.log"
    log.write_text("before\n")
    written = 0

    def write(count: int) -> None:
        nonlocal written
        with open(log, "a") as f:
            for _ in range(count):
                written += 1
                f.write(f"line {written}\n")

    app = BbrowseApp(target=Target(ClientConfig(link.url, compat_service.token), "remote"),
                     settings=defaults().model_copy(update={"shell": ShellSettings(command=SHELL)}))
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen), what="sessions screen")
            app.push_screen(SessionScreen(browser))
            await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and bool(app.screen.query(ShellTab)))
            screen = app.screen
            tab = screen.query_one(ShellsPane)._tabs.active_pane
            await wait_for(pilot, lambda: "\n".join(tab.terminal.emulator.display).rstrip().endswith(PROMPT),
                           what="prompt", timeout=30)
            await pilot.press("alt+2")
            await wait_for(pilot, lambda: bool(screen.query(LogsPane)), what="the Logs tab")
            panel = await screen.query_one(LogsPane).open_log(LogTarget(LogSource.PATH, str(log)))
            for _ in range(100):  # the stream starts at the end: write until a line shows
                write(1)
                await pilot.pause(0.2)
                if any(line.startswith("line ") for line in _log_lines(panel)):
                    break
            first = next(int(line.split()[1]) for line in _log_lines(panel) if line.startswith("line "))

            def log_complete() -> bool:
                numbers = [int(line.split()[1]) for line in _log_lines(panel) if line.startswith("line ")]
                return numbers == list(range(first, written + 1))

            await tab.shell.write(b"i=0; while :; do i=$((i+1)); echo tick-$i; sleep 0.1; done\r")
            await wait_for(pilot, lambda: any(line.startswith("tick-5") for line in _terminal_lines(tab)),
                           what="ticks", timeout=20)

            link.stall()
            write(5)
            await wait_for(pilot, lambda: app.connection_state == "stalled" and "link stalled" in panel.connection
                           and "link stalled" in str(tab.terminal.border_title), what="the stall said", timeout=15)
            write(5)
            link.resume()
            await wait_for(pilot, log_complete, what="the log's gap", timeout=10)
            await wait_for(pilot, lambda: app.connection_state == "connected"
                           and "link stalled" not in str(tab.terminal.border_title), what="the link back")

            # the stall lost nothing of the shell's output and repeated nothing (the connection was kept)
            ticks = [int(line[5:]) for line in _terminal_lines(tab) if line.startswith("tick-")]
            assert ticks == list(range(1, len(ticks) + 1)) and len(ticks) > 50, ticks

            assert link.drop(refuse_for=1.0) >= 1
            write(5)
            await wait_for(pilot, log_complete, what="the log after the drop", timeout=15)
            before = ticks[-1]
            await wait_for(pilot, lambda: f"tick-{before + 20}" in _terminal_lines(tab), what="the shell goes on",
                           timeout=30)
            # reattached after the drop: the output goes on, nothing twice (what was in flight at the reset is
            # gone with the connection, as on any network)
            ticks = [int(line[5:]) for line in _terminal_lines(tab) if line.startswith("tick-")]
            assert ticks == sorted(set(ticks)) and ticks[-1] >= before + 20, ticks
    finally:
        await compat_http.delete(f"/browsers/{browser.session_id}")
