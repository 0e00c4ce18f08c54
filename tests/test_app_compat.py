"""The app against `bbrowse serve --kernel-compat` (Kernel's VM where a client must cope), in one flow a
person would have: a session with a 10 s timeout opened in the app stays alive for 30 s while its shell
(not activity there) and files are used; `exit 3` shows its code within 2 s though compat sends no exit
frame and does not close; an empty directory (compat: `null`) shows as empty, a symlink as a link, the
chmod dialog reads Go's mode string; leaving the session lets go of it.
"""

from __future__ import annotations

import base64
import contextlib
import time

from app_support import make_app, type_text, wait_for

from bbrowse.client import BrowserClient, ClientError
from bbrowse.config import ShellSettings, defaults
from bbrowse.tui.panes.files import FilesPane, PromptInput
from bbrowse.tui.panes.shells import ShellTab
from bbrowse.tui.screens.session import SessionScreen

PROMPT = "PROMPT>"
SHELL = ("env", f"PS1={PROMPT} ", "bash", "--norc", "--noprofile", "-i")
#: The rule: a session with a 10 s timeout, open in the app for 30 s, is still there.
TIMEOUT_SECONDS, OPEN_FOR_SECONDS = 10, 30


def screen_text(tab: ShellTab) -> str:
    return "\n".join(tab.terminal.emulator.display)


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
            await wait_for(pilot, lambda: tab.terminal.exited, what="exit shown")
            assert time.monotonic() - typed < 2.0
            assert tab.terminal.exit_code == 3 and "exited 3" in str(tab.terminal.border_title)
            assert tab.shell.output is not None and tab.shell.output.connection is None

            pane = await screen.open_tab("files")
            assert isinstance(pane, FilesPane)
            await wait_for(pilot, lambda: pane.file_tree.root_path != "…", what="files pane ready")
            pane.file_tree.focus()
            await pilot.press("g", "ctrl+u")
            await type_text(pilot, f"{base}/empty", then="enter")
            await wait_for(pilot, lambda: child_labels(pane) == ["(empty)"], what="the empty directory, empty")
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
