"""bbrowse over a real network's ways: TLS with a test CA, an HTTPS_PROXY, links that drop and stall.

Against `--kernel-compat` (the stricter server) through `netem` (tests/net_support.py), with no Chromium: the
subject is the network between the client and the service, not the browser.
"""

from __future__ import annotations

import subprocess
import threading
import time

import httpx
from app_support import hold_off_session_watch, screen_shown, wait_for
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


class _NumberedLog:
    """A log file written in the background every `interval` s: "tick" then "line N", in one write. A stream
    that begins between two writes begins with "tick", a line the file holds many times, so a reader that
    joins a stream to the file by the text of its first line must not take an earlier "tick" for it."""

    def __init__(self, path, interval: float = 0.05) -> None:
        self.path = path
        self.interval = interval
        #: The last N written.
        self.written = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._write, daemon=True)

    def __enter__(self) -> _NumberedLog:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def _write(self) -> None:
        while not self._stop.wait(self.interval):
            with open(self.path, "a") as f:
                f.write(f"tick\nline {self.written + 1}\n")
            self.written += 1

    @staticmethod
    def numbers(lines: list[str]) -> list[int]:
        """The N of each "line N" shown, each checked to follow its "tick" (a line lost or twice shows here)."""
        ours = [line for line in lines if line == "tick" or line.startswith("line ")]
        if ours and ours[0] != "tick":
            ours = ours[1:]  # a stream that began after a write's "tick" (not with this writer: one write)
        numbers = []
        for index, line in enumerate(ours):
            if (index % 2 == 0) != (line == "tick"):
                raise AssertionError(f"tick/line out of step at {index}: {ours[max(0, index - 4):index + 4]}")
            if index % 2:
                numbers.append(int(line.split()[1]))
        return numbers

    def complete(self, lines: list[str], first: int | None, upto: int) -> bool:
        """Whether `lines` show "line first" (the first shown when None) to at least "line upto", each once, in
        order: an AssertionError as soon as one is missing or twice (the wait would only hide it)."""
        numbers = self.numbers(lines)
        if not numbers:
            return False
        start = numbers[0] if first is None else first
        expected = list(range(start, start + len(numbers)))
        if numbers != expected:
            missing = sorted(set(expected) - set(numbers))
            twice = sorted({n for n in numbers if numbers.count(n) > 1})
            raise AssertionError(f"lines lost {missing[:20]} or twice {twice[:20]}: {numbers[:5]}…{numbers[-5:]}")
        return numbers[-1] >= upto


def test_logs_follow_survives_a_drop_and_a_stall(browserless_compat_service, bad_link) -> None:
    """`bbrowse logs --follow` of a file on --kernel-compat through a 100 ms link, the file written every 50 ms:
    after a drop (connections reset, refused for 2 s) and a stall (noticed within 10 s), every line written
    meanwhile is printed, in order, none twice, and stderr says what happened."""
    service = browserless_compat_service
    link = bad_link(service, delay=0.05)
    with httpx.Client(base_url=service.url, headers=service.headers, timeout=30) as http:
        sid = http.post("/browsers", json={"timeout_seconds": 300}).json()["session_id"]
        try:
            path = session_area(service, sid, "net-logs") / "app.log"
            path.write_text("before\n")
            env = cli_env(service, KERNEL_BASE_URL=link.url)
            proc = subprocess.Popen([*BBROWSE, "logs", sid, "--path", str(path)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = _Reader(proc.stdout), _Reader(proc.stderr)
            try:
                with _NumberedLog(path) as log:
                    out.wait_for(lambda lines: log.complete(lines, None, 1), 20, "the first lines")
                    assert link.drop(refuse_for=2.0) >= 1
                    time.sleep(2.5)
                    upto = log.written
                    out.wait_for(lambda lines: log.complete(lines, None, upto), 15,
                                 "the lines written while the link was down")

                    said = len(err.lines)
                    link.stall()
                    noticed = err.wait_for(lambda lines: any("link stalled" in line for line in lines[said:]), 20,
                                           "the stall said on stderr")
                    upto = log.written
                    link.resume()
                    back = out.wait_for(lambda lines: log.complete(lines, None, upto), 10,
                                        "the lines written during the stall")
            finally:
                proc.terminate()
                proc.wait(10)
            assert log.complete(out.lines, None, upto)  # in order, none twice, up to the last one printed
            assert noticed <= 10.5, noticed
            assert back <= 3.0, back
            gaps = [line for line in err.lines if line.startswith("-- gap of") and "written meanwhile follow" in line]
            assert len(gaps) == 2, err.lines
        finally:
            http.delete(f"/browsers/{sid}")


PROMPT = "PROMPT>"
SHELL = ("env", f"PS1={PROMPT} ", "bash", "--norc", "--noprofile", "-i")


def _app_through(link, token: str) -> BbrowseApp:
    """The app on the service behind `link`, its shells running SHELL."""
    return BbrowseApp(target=Target(ClientConfig(link.url, token), "remote"),
                      settings=defaults().model_copy(update={"shell": ShellSettings(command=SHELL)}))


async def _shell_of(pilot, app: BbrowseApp, browser: Browser) -> tuple[SessionScreen, ShellTab]:
    """From the sessions table into `browser`'s session screen, once its shell shows the prompt."""
    await wait_for(pilot, lambda: screen_shown(app, SessionsScreen), what="sessions screen")
    app.push_screen(SessionScreen(browser))
    await wait_for(pilot, lambda: screen_shown(app, SessionScreen) and bool(app.screen.query(ShellTab)))
    screen = app.screen
    tab = screen.query_one(ShellsPane)._tabs.active_pane
    assert isinstance(screen, SessionScreen) and isinstance(tab, ShellTab)
    await wait_for(pilot, lambda: "\n".join(tab.terminal.core.display).rstrip().endswith(PROMPT), what="prompt",
                   timeout=30)
    return screen, tab


def _terminal_lines(tab) -> list[str]:
    emulator = tab.terminal.core
    return [*emulator.scrollback_text(), *emulator.display]


def _log_lines(panel) -> list[str]:
    buffer = panel.view.buffer
    return [buffer.line(seq) for seq in range(buffer.first_seq, buffer.end_seq)]


async def test_shell_and_log_panes_survive_a_drop_and_a_stall(browserless_compat_service, browserless_compat_http,
                                                              bad_link) -> None:
    """The app on --kernel-compat through a 100 ms link: a shell printing a line every 0.1 s and a log pane
    following a file written every 50 ms, opened as on Kernel's VM (no `tail`: its last lines read from the
    file). Every line is there from the file's first, through the open, a stall (said in the top bar and both
    panes) and a drop (reset, refused 1 s), in order, once; the shell goes on. (How fast: bench/bench_net.py.)"""
    link = bad_link(browserless_compat_service, delay=0.05)
    r = await browserless_compat_http.post("/browsers", json={"timeout_seconds": 600})
    browser = Browser.model_validate(r.json())
    path = session_area(browserless_compat_service, browser.session_id, "net-panes") / "app.log"
    path.write_text("before\n")

    app = _app_through(link, browserless_compat_service.token)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            screen, tab = await _shell_of(pilot, app, browser)
            await tab.shell.write(b"i=0; while :; do i=$((i+1)); echo tick-$i; sleep 0.1; done\r")
            await pilot.press("alt+2")
            await wait_for(pilot, lambda: bool(screen.query(LogsPane)), what="the Logs tab")
            logs = screen.query_one(LogsPane)
            logs.supervisor_logs_unavailable = True  # as on Kernel's VM: the service ignores `tail`
            with _NumberedLog(path) as log:
                await wait_for(pilot, lambda: log.written >= 3, what="lines written before the pane opens")
                panel = await logs.open_log(LogTarget(LogSource.PATH, str(path)))
                await pilot.pause(0.5)
                upto = log.written
                # the file's lines from its first, those written while the pane opened included
                await wait_for(pilot, lambda: log.complete(_log_lines(panel), 1, upto) and
                               _log_lines(panel)[0] == "before", what="the history joined to the stream", timeout=20)
                await wait_for(pilot, lambda: any(line.startswith("tick-5") for line in _terminal_lines(tab)),
                               what="ticks", timeout=20)

                link.stall()
                await wait_for(pilot, lambda: app.connection_state == "stalled"
                               and "link stalled" in panel.connection
                               and "link stalled" in str(tab.terminal.border_title), what="the stall said", timeout=15)
                upto = log.written
                link.resume()
                await wait_for(pilot, lambda: log.complete(_log_lines(panel), 1, upto), what="the log's gap",
                               timeout=10)
                await wait_for(pilot, lambda: app.connection_state == "connected"
                               and "link stalled" not in str(tab.terminal.border_title), what="the link back")

                # the stall lost nothing of the shell's output and repeated nothing (the connection was kept)
                ticks = [int(line[5:]) for line in _terminal_lines(tab) if line.startswith("tick-")]
                assert ticks == list(range(1, len(ticks) + 1)) and len(ticks) > 50, ticks

                assert link.drop(refuse_for=1.0) >= 1
                await pilot.pause(1.0)
                upto = log.written
                await wait_for(pilot, lambda: log.complete(_log_lines(panel), 1, upto), what="the log after the drop",
                               timeout=15)
            before = ticks[-1]
            await wait_for(pilot, lambda: f"tick-{before + 20}" in _terminal_lines(tab), what="the shell goes on",
                           timeout=30)
            # reattached after the drop: the output goes on, nothing twice (what was in flight at the reset is
            # gone with the connection, as on any network)
            ticks = [int(line[5:]) for line in _terminal_lines(tab) if line.startswith("tick-")]
            assert ticks == sorted(set(ticks)) and ticks[-1] >= before + 20, ticks
    finally:
        await browserless_compat_http.delete(f"/browsers/{browser.session_id}")


async def test_a_session_deleted_while_the_link_is_down_is_said_by_its_shell_once_the_link_is_back(
    browserless_compat_service, browserless_compat_http, bad_link, monkeypatch
) -> None:
    """The shell learns of the delete by reattaching (410) rather than from its exit: the pane says so, as when
    the delete is seen at once (test_app_keyboard), and the screen stays (the app's own watch of the session
    shown, which would close it, is held off as there)."""
    hold_off_session_watch(monkeypatch)
    link = bad_link(browserless_compat_service)
    created = await browserless_compat_http.post("/browsers", json={"timeout_seconds": 600})
    browser = Browser.model_validate(created.json())
    app = _app_through(link, browserless_compat_service.token)
    async with app.run_test(size=(120, 34)) as pilot:
        screen, tab = await _shell_of(pilot, app, browser)
        assert link.drop(refuse_for=1.5) >= 1
        assert (await browserless_compat_http.delete(f"/browsers/{browser.session_id}")).status_code in (200, 204)
        await wait_for(pilot, lambda: "session was deleted" in "\n".join(tab.terminal.core.display),
                       what="the pane says so once the link is back")
        assert app.screen is screen and "session deleted" in str(tab.terminal.border_title)
