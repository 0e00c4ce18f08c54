"""`bbrowse click`, `type`, `key`, `scroll`: drive the session's mouse and keyboard from a script.

Coordinates are the screenshot's pixels (`bbrowse screenshot` shows what they point at). Key names
are X11 keysym names as xdotool takes them (`Return`, `Tab`, `BackSpace`, `F5`, `a`), joined with `+`
for chords (`Ctrl+t`, `Ctrl+Shift+Tab`); the service checks them and names a wrong one. Input is never
retried: a click that may have happened is not clicked twice.
"""

from __future__ import annotations

import sys

import click

from bbrowse.client import BrowserClient
from bbrowse.commands.runner import run
from bbrowse.wire.computer import MouseButton

#: Negative numbers (`scroll ID 10 10 0 -3`) are arguments, not unknown options.
NUMBERS_MAY_BE_NEGATIVE = {"ignore_unknown_options": True}
BUTTONS: tuple[MouseButton, ...] = ("left", "right", "middle", "back", "forward")

hold_option = click.option(
    "--hold", "hold_keys", multiple=True, metavar="KEY",
    help="A key held down meanwhile (repeatable), e.g. --hold Ctrl --hold Shift.",
)


@click.command("click", context_settings=NUMBERS_MAY_BE_NEGATIVE)
@click.argument("session", metavar="ID")
@click.argument("x", type=int)
@click.argument("y", type=int)
@click.option("--button", type=click.Choice(BUTTONS), default="left", show_default=True, help="Mouse button.")
@click.option("--double", is_flag=True, help="Double-click.")
@click.option("--clicks", "num_clicks", type=click.IntRange(1, 10), default=None, metavar="N",
              help="Click N times in a row (3 selects a paragraph); overrides --double.")
@hold_option
def click_command(session: str, x: int, y: int, button: MouseButton, double: bool, num_clicks: int | None,
                  hold_keys: tuple[str, ...]) -> None:
    """Click the browser at pixel X,Y of its screen.

    \b
    Examples:
      bbrowse click ID 140 160                   # left click
      bbrowse click ID 140 160 --button right    # context menu
      bbrowse click ID 300 220 --double          # select a word
      bbrowse click ID 300 220 --hold Ctrl       # ctrl-click: open a link in a new tab
    """
    clicks = num_clicks or (2 if double else 1)

    async def work(client: BrowserClient) -> None:
        await client.computer.click(session, x, y, button=button, num_clicks=clicks, hold_keys=hold_keys)

    run(work)


@click.command("type")
@click.argument("session", metavar="ID")
@click.argument("text")
@click.option("--delay", "delay_ms", type=click.IntRange(0, 10000), default=0, metavar="MS",
              help="Milliseconds between characters.")
def type_command(session: str, text: str, delay_ms: int) -> None:
    """Type TEXT into whatever has focus in the browser ('-' reads the text from stdin).

    A newline presses Return. Click a field first to put the focus there.

    \b
    Examples:
      bbrowse type ID 'hello world'
      bbrowse click ID 200 60 && bbrowse type ID 'search terms'
      printf 'line one\\nline two' | bbrowse type ID -
    """
    typed = sys.stdin.read() if text == "-" else text

    async def work(client: BrowserClient) -> None:
        await client.computer.type_text(session, typed, delay_ms=delay_ms)

    run(work)


@click.command("key")
@click.argument("session", metavar="ID")
@click.argument("keys", nargs=-1, required=True, metavar="KEY...")
@click.option("--duration", "duration_ms", type=click.IntRange(0, 30000), default=0, metavar="MS",
              help="Hold the keys down this long before releasing them.")
@hold_option
def key_command(session: str, keys: tuple[str, ...], duration_ms: int, hold_keys: tuple[str, ...]) -> None:
    """Press keys or chords in the browser, one after the other.

    KEY is an X11 key name (Return, Tab, Escape, BackSpace, Delete, Up, Page_Down, F5, a, minus...)
    or a chord joined with '+' (Ctrl+t, Ctrl+Shift+Tab, Alt+Left).

    \b
    Examples:
      bbrowse key ID Return
      bbrowse key ID Ctrl+a Delete               # select all, then delete
      bbrowse key ID Ctrl+t                      # a new tab
      bbrowse key ID F5
    """

    async def work(client: BrowserClient) -> None:
        await client.computer.press_key(session, list(keys), duration_ms=duration_ms, hold_keys=hold_keys)

    run(work)


@click.command("scroll", context_settings=NUMBERS_MAY_BE_NEGATIVE)
@click.argument("session", metavar="ID")
@click.argument("x", type=int)
@click.argument("y", type=int)
@click.argument("dx", type=int)
@click.argument("dy", type=int)
@hold_option
def scroll_command(session: str, x: int, y: int, dx: int, dy: int, hold_keys: tuple[str, ...]) -> None:
    """Turn the mouse wheel at pixel X,Y: DY ticks down (negative: up), DX ticks right (negative: left).

    \b
    Examples:
      bbrowse scroll ID 640 400 0 5              # five ticks down
      bbrowse scroll ID 640 400 0 -5             # back up
      bbrowse scroll ID 640 400 3 0              # right
      bbrowse scroll ID 640 400 0 -3 --hold Ctrl # zoom in
    """

    async def work(client: BrowserClient) -> None:
        await client.computer.scroll(session, x, y, dx, dy, hold_keys=hold_keys)

    run(work)
