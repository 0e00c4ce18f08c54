"""The app against `bbrowse serve --kernel-compat` (Kernel's VM where a client must cope), in one flow a
person would have: a session with a 10 s timeout opened in the app stays alive for 30 s while its shell
(not activity there) and files are used; `exit 3` shows its code within 2 s though compat sends no exit
frame and does not close, and keys typed past the exit (stdin: 500) are no error; a log pane on a file
that gets no line (compat: no headers) says it follows at once; an empty directory (compat: `null`) shows
as empty, a symlink as a link, the chmod dialog reads Go's mode string; leaving the session lets go of it.
And a shell pane whose session is deleted (compat: a 1001 close) says so, with no error.
"""

from __future__ import annotations

import base64
import contextlib
import time

from app_support import make_app, type_text, wait_for

from bbrowse.client import BrowserClient, ClientError
from bbrowse.config import ShellSettings, defaults
from bbrowse.tui.panes.files import FilesPane, PromptInput
from bbrowse.tui.panes.logs import LogsPane, LogTarget
from bbrowse.tui.panes.shells import ShellTab
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.textual_private import notifications
from bbrowse.tui.widgets.log_view import LogStatus
from bbrowse.wire import LogSource

PROMPT = "PROMPT>"
SHELL = ("env", f"PS1={PROMPT} ", "bash", "--norc", "--noprofile", "-i")
#: The rule: a session with a 10 s timeout, open in the app for 16 s, is still there (the reaper looks every
#: second: left alone it would be gone by 11 s).
TIMEOUT_SECONDS, OPEN_FOR_SECONDS = 10, 16


def error_toasts(app) -> list[str]:
    return [n.message for n in notifications(app) if n.severity == "error"]


def screen_text(tab: ShellTab) -> str:
    return "\n".join(tab.terminal.core.display)


def child_labels(pane: FilesPane) -> list[str]:
    return [str(node.label) for node in pane.file_tree.root.children]


async def test_a_session_open_in_the_app_stays_alive_and_its_shell_and_files_cope(compat_service) -> None:
    client = BrowserClient(compat_service.url, compat_service.token)
    browser = await client.sessions.create(timeout_seconds=TIMEOUT_SECONDS)
    sid = browser.session_id
    base = f"/tmp/bbrowse-app-compat-{time.monotonic_ns()}"
    made = await client.processes.exec(sid, "sh", ["-c", f"mkdir -p {base}/empty && chmod 1751 {base}/empty && "
                                                         f"ln -s {base}/empty {base}/link"])
    assert made.exit_code == 0, base64.b64decode(made.stderr_b64 or "")
    app = make_app(compat_service, settings=defaults().model_copy(update={"shell": ShellSettings(command=SHELL)}))
    try:
        async with app.run_test(size=(120, 34)) as pilot:
            app.push_screen(SessionScreen(browser))
            opened = time.monotonic()
            await wait_for(pilot, lambda: bool(app.screen.query(ShellTab)), what="shell tab")
            screen = app.screen
            tab = screen.query_one(ShellTab)
            await wait_for(pilot, lambda: tab.shell is not None and tab.shell.running, what="shell started")
            await pilot.press("enter")
            await wait_for(pilot, lambda: tab.terminal.has_focus, what="terminal focused")
            await wait_for(pilot, lambda: screen_text(tab).rstrip().endswith(PROMPT), what="prompt")
            await type_text(pilot, "exit 3", then="enter")
            typed = time.monotonic()
            while not tab.terminal.exited and time.monotonic() - typed < 15:
                await pilot.press("x")  # keys past the exit (compat: stdin answers 500) until it is seen
                await pilot.pause(0.02)
            assert tab.terminal.exited and time.monotonic() - typed < 2.0
            assert tab.terminal.exit_code == 3 and "exited 3" in str(tab.terminal.border_title)
            assert tab.shell.output is not None and tab.shell.output.connection is None
            assert error_toasts(app) == []  # the refused keys were the exit, not an error

            quiet = f"{base}.log"  # gets no line: compat sends the stream's headers only with its first event
            await client.fs.write_file(sid, quiet, b"")
            logs = await screen.open_tab("logs")
            assert isinstance(logs, LogsPane)
            panel = await logs.open_log(LogTarget(LogSource.PATH, quiet))
            shown: dict[str, float] = {}  # what the status line said, and when first seen

            def following() -> bool:
                text = panel.query_one(LogStatus).text
                for state in ("connecting…", "● live"):
                    if state in text:
                        shown.setdefault(state, time.monotonic())
                return "● live" in shown

            # live with no event sent yet: on compat the stream's headers come only with its first event
            await wait_for(pilot, following, what="following")
            await client.processes.exec(sid, "sh", ["-c", f"echo first-line >> {quiet}"])
            await wait_for(pilot, lambda: "first-line" in panel.view.shown_lines(), what="the first line")

            pane = await screen.open_tab("files")
            assert isinstance(pane, FilesPane)
            await wait_for(pilot, lambda: pane.file_tree.root_path != "…", what="files pane ready")
            pane.file_tree.focus()
            await pilot.press("g", "ctrl+u")
            await type_text(pilot, f"{base}/empty", then="enter")
            empty = (f"{base}/empty", ["(empty)"])
            await wait_for(pilot, lambda: (pane.file_tree.root_path, child_labels(pane)) == empty, what="empty, shown")
            await pilot.press("g", "ctrl+u")
            await type_text(pilot, base, then="enter")
            await wait_for(pilot, lambda: sorted(child_labels(pane)) == ["empty/", "link@"], what="dir and link")
            await pilot.press("down")  # the root's first child: empty/
            await wait_for(pilot, lambda: pane.selected_entry() is not None
                           and pane.selected_entry().path == f"{base}/empty", what="empty/ highlighted")
            await pilot.press("c")
            field = pane.query_one(PromptInput)
            await wait_for(pilot, lambda: field.has_focus, what="chmod asked")
            assert field.value == "1751"  # compat's mode: Go's dtrwxr-x--x

            alive_until = opened + OPEN_FOR_SECONDS
            while time.monotonic() < alive_until:
                await pilot.pause(1.0)
            assert (await client.sessions.get(sid)).session_id == sid  # not reaped: 410 would raise
            keepalive = screen._keepalive
            assert keepalive is not None and keepalive.connected
            app.pop_screen()
            await wait_for(pilot, lambda: not keepalive.connected, what="the keep-alive let go")
    finally:
        with contextlib.suppress(ClientError):  # gone already when the test failed on a reaped session
            await client.sessions.delete(sid)



async def test_a_shell_pane_says_its_session_was_deleted_or_its_vm_is_going_away(tmp_path) -> None:
    """Compat closes attach sockets with 1001 'browser shutting down' when a session is deleted and when the
    service stops (Kernel's VM going away). A deleted session: the pane says so, offers no restart, and
    no error shows. The VM gone with the session not known to be gone: the pane says the VM is going away
    and why. (A service of its own: this test stops it.)"""
    from conftest import NO_CHROMIUM, start_service, stop_service

    handle = start_service(tmp_path, extra_env={"BBROWSE_KERNEL_COMPAT": "1", "BBROWSE_CHROMIUM": NO_CHROMIUM})
    try:
        client = BrowserClient(handle.url, handle.token)
        deleted = await client.sessions.create(timeout_seconds=600)
        kept = await client.sessions.create(timeout_seconds=600)
        app = make_app(handle, settings=defaults().model_copy(update={"shell": ShellSettings(command=SHELL)}))
        async with app.run_test(size=(120, 34)) as pilot:
            tabs = []
            for browser in (deleted, kept):
                app.push_screen(SessionScreen(browser))
                await wait_for(pilot, lambda: bool(app.screen.query(ShellTab)), what="shell tab")
                tab = app.screen.query_one(ShellTab)
                await wait_for(pilot, lambda tab=tab: screen_text(tab).rstrip().endswith(PROMPT), what="prompt")
                tabs.append(tab)

            await client.sessions.delete(deleted.session_id)
            await wait_for(pilot, lambda: tabs[0].gone, what="the pane knows")
            assert str(tabs[0].terminal.border_title).endswith("session deleted")
            assert screen_text(tabs[0]).rstrip().endswith("the session was deleted — nothing to restart here; "
                                                          "esc: back to the sessions")
            assert tabs[0].going_away == "browser shutting down"  # what compat's 1001 said, behind the banner
            await pilot.pause(0.5)  # a toast is posted a moment after its cause
            assert [n.message for n in notifications(app)] == []  # the service answers: not "not answering"

            stop_service(handle)
            await wait_for(pilot, lambda: str(tabs[1].terminal.border_title).endswith("VM going away"),
                           what="the pane says the VM is going away")
            assert not tabs[1].gone
            assert "the session's VM is going away (browser shutting down) — the shell ended with it" \
                in screen_text(tabs[1])
    finally:
        stop_service(handle)
