"""Refresh the SVG screenshots in screenshots/ (shown in the README): each main screen of the app,
driven with Pilot against a real local service with a real session, shell, log, file and browser.

    .venv/bin/python scripts/screenshots.py          # all of them
    .venv/bin/python scripts/screenshots.py wall     # only the named ones (here: wall.svg)
    .venv/bin/python scripts/screenshots.py events   # the Events tab (events.svg)

`BBROWSE_SCREENSHOTS_DIR` writes them elsewhere (to look before replacing the committed ones).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("BBROWSE_IMAGE_RENDERING", "halfcell")

import httpx  # noqa: E402
from conftest import start_service, stop_service  # noqa: E402

from bbrowse.client import ClientConfig  # noqa: E402
from bbrowse.target import Target  # noqa: E402
from bbrowse.tui.app import BbrowseApp  # noqa: E402
from bbrowse.tui.screens.session import SessionScreen  # noqa: E402
from bbrowse.wire import Browser  # noqa: E402

OUT = Path(os.environ.get("BBROWSE_SCREENSHOTS_DIR", ROOT / "screenshots"))
#: Only these screenshots (named on the command line), else all.
ONLY = set(sys.argv[1:])
SIZE = (128, 36)
PAGE = ("data:text/html,<body style='font:40px sans-serif;background:%23204060;color:white'>"
        "<h1>bbrowse</h1><p>a real Chromium, screenshotted over CDP</p></body>")
#: The live view's page: a button that turns green when clicked and a field to type into.
LIVE_PAGE = ("data:text/html,<body style='margin:0;font:120px sans-serif;background:%23f4f1ea;color:%23222'>"
             "<h1 style='margin:30px 40px;font-size:120px'>Sign in</h1>"
             "<input id=t style='position:absolute;left:40px;top:220px;width:900px;height:170px;font:130px sans-serif'>"
             "<button style='position:absolute;left:40px;top:460px;width:560px;height:220px;font:110px sans-serif;"
             "border:0;border-radius:30px;background:%23c0392b;color:white' "
             "onclick=\"this.style.background='%2327ae60';this.textContent='Done'\">Go</button></body>")


async def settle(pilot, seconds: float) -> None:
    await pilot.pause(seconds)


#: The wall's sessions: (name, background, heading, line) of a page each.
WALL_PAGES = (
    ("checkout-flow", "%23204060", "Checkout", "3 items · $42.00"),
    ("search-crawler", "%23f4f1ea", "Results", "page 7 of 120"),
    ("login-smoke", "%23c0392b", "Sign in", "2FA code sent"),
    ("dashboard-watch", "%2327ae60", "Status", "all systems normal"),
    ("docs-scraper", "%238e44ad", "Docs", "chapter 4: streams"),
)


def wall_page(background: str, heading: str, line: str) -> str:
    colour = "%23222" if background == "%23f4f1ea" else "white"
    return (f"data:text/html,<body style='margin:0;padding:40px;font:60px sans-serif;background:{background};"
            f"color:{colour}'><h1 style='font-size:200px;margin:0'>{heading}</h1><p>{line}</p></body>")


async def wall_shot(service) -> None:
    """The session wall: five live sessions, one recording, two selected."""
    from bbrowse.tui.screens.wall import WallScreen

    async with httpx.AsyncClient(base_url=service.url, headers=service.headers, timeout=60) as http:
        made = []
        for name, background, heading, line in WALL_PAGES:
            made.append((await http.post("/browsers", json={
                "name": f"wall-{name}", "start_url": wall_page(background, heading, line),
                "viewport": {"width": 1280, "height": 800}, "timeout_seconds": 3600})).json())
        replay = (await http.post(f"/browsers/{made[1]['session_id']}/replays", json={})).json()
        await asyncio.sleep(2)
        app = BbrowseApp(target=Target(ClientConfig(service.url, service.token), "embedded"))
        app.last_filter = "wall-"
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, 2.0)
            await pilot.press("w")
            for _ in range(100):
                if isinstance(app.screen, WallScreen) and app.screen.first_frames_drawn():
                    break
                await settle(pilot, 0.2)
            await pilot.press("right", "space", "right", "space", "down")
            await settle(pilot, 6.0)  # the recording badge (asked every 5 s)
            app.save_screenshot(str(OUT / "wall.svg"))
        await http.post(f"/browsers/{made[1]['session_id']}/replays/{replay['replay_id']}/stop")
        for session in made:
            await http.delete(f"/browsers/{session['session_id']}")


#: The Events tab's page: a checkout that logs its steps, fails a request now and then, and throws at step 37.
EVENTS_PAGE = ("data:text/html,<body style='font:40px sans-serif'><h1>Checkout</h1><script>let i=30;"
               "const t=setInterval(()=>{i++;console.log('step '+i+' ok');"
               "if(i%4==0)fetch('http://127.0.0.1:9/api/cart?step='+i).catch(()=>{});"
               "if(i==37){clearInterval(t);setTimeout(()=>{throw new Error('boom at step 37')},0)}},400)"
               "</script></body>")


async def events_shot(service) -> None:
    """The Events tab: a page's console lines, failed requests and an uncaught error, the error's details open."""
    from bbrowse.tui.panes.events import EventList, EventsPane

    async with httpx.AsyncClient(base_url=service.url, headers=service.headers, timeout=60) as http:
        session = (await http.post("/browsers", json={
            "name": "checkout-flow", "start_url": EVENTS_PAGE, "timeout_seconds": 3600,
            "telemetry": {"browser": {"console": {"enabled": True}, "network": {"enabled": True},
                                      "page": {"enabled": True}}}})).json()
        await http.post(f"/browsers/{session['session_id']}/process/exec",
                        json={"command": "sleep", "args": ["1"]})  # a control call among the events
        app = BbrowseApp(target=Target(ClientConfig(service.url, service.token), "embedded"))
        async with app.run_test(size=SIZE) as pilot:
            app.push_screen(SessionScreen(Browser.model_validate(session)))
            await settle(pilot, 2.5)
            app.screen.action_show_tab("events")
            while not app.screen.query(EventsPane):
                await settle(pilot, 0.1)
            pane = app.screen.query_one(EventsPane)
            for _ in range(100):  # until the uncaught error is in
                if any("boom" in e.event.model_dump_json() for e in pane.events):
                    break
                await settle(pilot, 0.2)
            await settle(pilot, 1.0)
            app.screen.query_one(EventList).focus()
            await pilot.press("space")  # pause, then up to the error and its details
            errors = [i for i, e in enumerate(pane.shown) if "boom" in e.event.model_dump_json()]
            await pilot.press(*["up"] * (len(pane.shown) - 1 - errors[-1]), "enter")
            await settle(pilot, 1.0)
            app.save_screenshot(str(OUT / "events.svg"))
        await http.delete(f"/browsers/{session['session_id']}")


async def main() -> None:
    state = Path(tempfile.mkdtemp(prefix="bbrowse-shots-"))
    service = start_service(state)
    try:
        if ONLY:
            if "wall" in ONLY:
                await wall_shot(service)
            if "events" in ONLY:
                await events_shot(service)
            return
        await wall_shot(service)
        await events_shot(service)
        headers = service.headers
        async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=60) as http:
            demo = (await http.post("/browsers", json={"name": "checkout-flow", "start_url": PAGE,
                                                       "timeout_seconds": 3600})).json()
            for name in ("search-crawler", "login-smoke"):
                await http.post("/browsers", json={"name": name, "timeout_seconds": 1800})
            replay = (await http.post(f"/browsers/{demo['session_id']}/replays", json={"framerate": 10})).json()
            await asyncio.sleep(2)
            await http.post(f"/browsers/{demo['session_id']}/replays/{replay['replay_id']}/stop")
            live = (await http.post("/browsers", json={"name": "live-view", "start_url": LIVE_PAGE,
                                                       "viewport": {"width": 1280, "height": 800},
                                                       "timeout_seconds": 3600})).json()
        app = BbrowseApp(target=Target(ClientConfig(service.url, service.token), "embedded"))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, 2.0)
            app.save_screenshot(str(OUT / "sessions.svg"))
            app.push_screen(SessionScreen(Browser.model_validate(demo)))
            await settle(pilot, 2.5)
            await pilot.press("enter")  # a session opens on its tab bar: into the shell
            await settle(pilot, 0.3)
            colours = "printf '\\e[1;32mgreen \\e[1;31mred \\e[0;4munderlined\\e[0m 日本語\\n'"
            for text in ("ls -la --color=always /etc | head -8", colours):
                await pilot.press(*[_key(c) for c in text], "enter")
                await settle(pilot, 1.0)
            app.save_screenshot(str(OUT / "shell.svg"))
            await pilot.press("ctrl+right_square_bracket")  # out of the terminal
            await settle(pilot, 0.6)
            for tab in ("logs", "files", "screenshot", "replays"):
                app.screen.action_show_tab(tab)
                await settle(pilot, 3.0)
                if tab == "files":  # a system directory, not the session's (its path names this machine's temp dir)
                    await pilot.press("g", "ctrl+u", *[_key(c) for c in "/etc/os-release"], "enter")
                    await settle(pilot, 2.0)
                app.save_screenshot(str(OUT / f"{tab}.svg"))
            await live_view(pilot, app, live)
    finally:
        stop_service(service)


async def live_view(pilot, app: BbrowseApp, live: dict) -> None:
    """The Screenshot tab's live view in interact mode: a click on the button, text typed into the field."""
    from bbrowse.tui.panes.screenshot import ScreenshotPane

    app.pop_screen()
    app.push_screen(SessionScreen(Browser.model_validate(live)))
    await settle(pilot, 2.5)
    app.screen.action_show_tab("screenshot")
    await settle(pilot, 1.0)
    pane = app.screen.query_one(ScreenshotPane)
    await pilot.press("i")
    for _ in range(100):
        if pane.frames >= 3:
            break
        await settle(pilot, 0.2)
    geometry = pane.view.geometry
    await pilot.click(pane.view, offset=geometry.cell_of(320, 570))  # the button
    await pilot.click(pane.view, offset=geometry.cell_of(490, 305))  # the field
    await pilot.press(*[_key(c) for c in "hello!"])
    await settle(pilot, 3.0)
    app.save_screenshot(str(OUT / "live-view.svg"))


def _key(char: str) -> str:
    names = {" ": "space", "'": "apostrophe", "\\": "backslash", "|": "vertical_line", ";": "semicolon",
             "-": "minus", "/": "slash", ".": "full_stop", "=": "equals_sign", "[": "left_square_bracket"}
    return names.get(char, char)


if __name__ == "__main__":
    asyncio.run(main())
    print("wrote", ", ".join(sorted(p.name for p in OUT.glob("*.svg"))))
