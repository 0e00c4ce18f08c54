"""Predicted echo in the app's shell pane at a 100 ms round trip (`netem.BadLink`, 50 ms each way) against
`--kernel-compat`: keys are drawn before their echo once the shell echoed one, underlined, confirmed by the
echo, taken back when the shell drew something else; a `read -s` password is never drawn and still reaches
the program; vim and less work as without prediction. One app, one shell, one flow (each check needs the
slow link, and a service of its own would cost seconds)."""

from __future__ import annotations

import re
import shutil
from types import SimpleNamespace

from app_support import make_app, type_text, wait_for

from bbrowse.client import BrowserClient
from bbrowse.config import ShellSettings, defaults
from bbrowse.tui.panes.shells import ShellTab
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.terminal.widget import TerminalView

pytest_plugins = ["net_support"]

PROMPT = "PROMPT>"
SHELL = ("env", f"PS1={PROMPT} ", "bash", "--norc", "--noprofile", "-i")
SECRET = "XqZ7wK"


def drawn(terminal: TerminalView, y: int) -> str:
    """Row `y` as the pane draws it (guesses included)."""
    return "".join(segment.text for segment in terminal.render_line(y)).rstrip()


def underlined(terminal: TerminalView, y: int) -> str:
    return "".join(segment.text for segment in terminal.render_line(y)
                   if segment.style is not None and segment.style.underline)


def screen(terminal: TerminalView) -> str:
    return "\n".join(terminal.core.display)


async def echoed(pilot, terminal: TerminalView, y: int, text: str) -> None:
    await wait_for(pilot, lambda: terminal.core.line_text(y) == text, what=f"the echo {text!r}")
    await terminal.wait_drained()  # and drawn: the pane's drawing state brought up to date


async def confirm_epoch(pilot, terminal: TerminalView, y: int, typed: str, keys: str) -> str:
    """Type `keys` one at a time, each after the echo of the last, until the pane has seen one of its guesses
    echoed (the first key after a prompt may be found in the echo rather than guessed); the line typed."""
    for key in keys:
        if terminal.predictor.confirmed:
            break
        await pilot.press(key if key != " " else "space")
        typed += key
        await echoed(pilot, terminal, y, typed)
    assert terminal.predictor.confirmed
    return typed


async def run_line(pilot, core, command: str) -> None:
    """Type `command` and enter at the prompt, then until the shell's next prompt, on a row below (the row typed
    on reads as a bare prompt until the shell has echoed what was typed)."""
    row = core.cursor[1]
    await type_text(pilot, command, then="enter")
    await wait_for(pilot, lambda: core.cursor[1] > row and core.line_text(core.cursor[1]) == PROMPT,
                   what=f"the prompt after {command!r}")


async def test_predicted_echo_over_a_100_ms_link(browserless_compat_service, bad_link) -> None:
    client = BrowserClient(browserless_compat_service.url, browserless_compat_service.token)
    browser = await client.sessions.create(timeout_seconds=600)
    link = bad_link(browserless_compat_service, delay=0.05)
    settings = defaults().model_copy(update={"shell": ShellSettings(command=SHELL)})
    app = make_app(SimpleNamespace(url=link.url, token=browserless_compat_service.token), settings=settings)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            app.push_screen(SessionScreen(browser))
            await wait_for(pilot, lambda: bool(app.screen.query(ShellTab)), what="shell tab")
            tab = app.screen.query_one(ShellTab)
            terminal = tab.terminal
            await wait_for(pilot, lambda: tab.shell is not None and tab.shell.running, what="shell started")
            if not terminal.has_focus:
                await pilot.press("enter")
            await wait_for(pilot, lambda: screen(terminal).rstrip().endswith(PROMPT), what="prompt")
            core, predictor = terminal.core, terminal.predictor

            # The first key of an epoch waits for its echo; an echo confirms the epoch.
            # (The link is stalled while a check needs the echo not to have come yet: a loaded machine can take
            # longer than a round trip to hand a key to the pane.)
            y = core.cursor[1]
            link.stall()
            await pilot.press("e")
            assert drawn(terminal, y) == PROMPT, "not drawn before the shell showed it echoes"
            link.resume()
            await echoed(pilot, terminal, y, f"{PROMPT} e")
            await wait_for(pilot, lambda: terminal.round_trip is not None, what="the stdin call came back")
            assert terminal.round_trip >= 0.09, terminal.round_trip
            assert re.search(r"· rtt \d+ ms$", str(terminal.border_subtitle)), terminal.border_subtitle
            typed = await confirm_epoch(pilot, terminal, y, f"{PROMPT} e", "cho")

            # Shown at once, underlined (above 80 ms), then confirmed by the echo.
            link.stall()
            await pilot.press("space")
            await pilot.press("x")
            assert drawn(terminal, y) == f"{typed} x" and core.line_text(y) == typed
            assert underlined(terminal, y).strip() == "x"
            link.resume()
            await echoed(pilot, terminal, y, f"{typed} x")
            await pilot.pause()
            assert drawn(terminal, y) == f"{typed} x" and underlined(terminal, y) == ""
            await pilot.press("ctrl+u")
            await type_text(pilot, "echo one", then="enter")
            await wait_for(pilot, lambda: "\none" in screen(terminal), what="echo one ran")

            # Taken back: readline types Q for q; the guess q is drawn, then replaced by what the shell drew.
            await run_line(pilot, core, "bind '\"q\":\"Q\"'")
            y = core.cursor[1]
            typed = await confirm_epoch(pilot, terminal, y, f"{PROMPT} ", "abcdef")
            wrong_before = predictor.stats.wrong_shown
            link.stall()
            await pilot.press("q")
            assert drawn(terminal, y) == f"{typed}q"
            link.resume()
            await echoed(pilot, terminal, y, f"{typed}Q")
            assert drawn(terminal, y) == f"{typed}Q", "taken back with the output that contradicts it"
            assert predictor.stats.wrong_shown == wrong_before + 1
            await pilot.press("ctrl+u")
            await run_line(pilot, core, "bind -r q")

            # read -s: the password is never drawn, at any moment, and the program gets it.
            await type_text(pilot, "read -s -p 'pw: ' PW; echo \"got:$PW\"", then="enter")
            await wait_for(pilot, lambda: core.line_text(core.cursor[1]) == "pw:", what="the password prompt")
            y = core.cursor[1]
            seen = []
            for char in SECRET:
                await pilot.press(char)
                seen.append(drawn(terminal, y))
                await pilot.pause(0.03)
                seen.append(drawn(terminal, y))
            await pilot.press("enter")
            await wait_for(pilot, lambda: f"got:{SECRET}" in screen(terminal), what="the password received")
            assert all(line == "pw:" for line in seen), seen
            assert predictor.stats.wrong_shown == wrong_before + 1

            for editor in ("vim", "less"):
                if shutil.which(editor) is None:
                    continue
                await wait_for(pilot, lambda: core.line_text(core.cursor[1]) == PROMPT, what="prompt")
                command = ("vim -u NONE -N -n notes.txt" if editor == "vim"
                           else "printf '%s\\n' {1..300} > pages.txt; less pages.txt")
                await type_text(pilot, command, then="enter")
                await wait_for(pilot, lambda: core.alternate_screen_active, what=f"{editor} started")
                if editor == "vim":
                    await wait_for(pilot, lambda: core.line_text(1).startswith("~"), what="vim drew")
                    await pilot.press("i")
                    await type_text(pilot, "typed in vim")
                    await pilot.press("escape")
                    await wait_for(pilot, lambda: core.line_text(0) == "typed in vim", what="vim echoed")
                    for key in "jjjkk0":  # normal mode: moves, nothing echoed, nothing guessed drawn
                        await pilot.press(key)
                        assert drawn(terminal, 0) == "typed in vim"
                    await type_text(pilot, ":wq", then="enter")
                else:
                    await wait_for(pilot, lambda: core.line_text(0) == "1", what=f"less drew: {screen(terminal)!r}")
                    for key in ("j", "j", "space"):
                        await pilot.press(key)
                        assert not any(predictor.overlay(row) for row in range(core.rows))
                    await wait_for(pilot, lambda: core.line_text(0) != "1", what="less paged")
                    await pilot.press("q")
                await wait_for(pilot, lambda: not core.alternate_screen_active, what=f"{editor} ended")
            await wait_for(pilot, lambda: core.line_text(core.cursor[1]) == PROMPT, what="prompt")
            await type_text(pilot, "cat notes.txt", then="enter")
            await wait_for(pilot, lambda: "\ntyped in vim" in screen(terminal), what="vim wrote the file")
            await terminal.wait_drained()  # the pane's drawing state brought up to date
            rows = range(core.rows)
            assert [drawn(terminal, row) for row in rows] == [core.line_text(row) for row in rows]
    finally:
        await client.sessions.delete(browser.session_id)
