"""The session wall, actions on many sessions and broadcast typing, driven with Pilot against real services.

Sessions that need no browser (paging, selection, deleting, broadcast typing into shells) live on the
browserless service, where a session costs no Chromium (its tiles then say the browser is down); the
tiles' pictures and the recording badge use the default service's real Chromium.
"""

from __future__ import annotations

import asyncio
import gc
import os
import uuid
import weakref
from pathlib import Path

import httpx
from app_support import make_app, screen_shown, type_text, use_downloads_dir, wait_for, wait_for_notification

from bbrowse.config import ShellSettings, defaults
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.tui.screens import wall as wall_module
from bbrowse.tui.screens.broadcast import BroadcastScreen
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.screens.wall import WallScreen, grid_shape
from bbrowse.tui.widgets.tile import SessionTile, TileState
from bbrowse.wire import Browser

PROMPT = "PROMPT>"
SHELL = ("env", f"PS1={PROMPT} ", "bash", "--norc", "--noprofile", "-i")


def tiles(app) -> list[SessionTile]:
    return list(app.screen.query(SessionTile))


def shown_names(app) -> list[str]:
    return [t.browser.name for t in tiles(app) if t.browser is not None]


def line_of(tile: SessionTile) -> str:
    return str(tile.line.render())


async def make_sessions(http: httpx.AsyncClient, prefix: str, count: int, *, at_once: bool = False) -> list[dict]:
    """`count` sessions named prefix-0, prefix-1, ..., listed in that order; `at_once`: made concurrently
    (each starts a Chromium), in no particular order."""

    async def make(i: int) -> dict:
        r = await http.post("/browsers", json={"name": f"{prefix}-{i}", "timeout_seconds": 600})
        assert r.status_code == 200, r.text
        return r.json()

    if at_once:
        return sorted(await asyncio.gather(*(make(i) for i in range(count))), key=lambda b: b["created_at"])
    return [await make(i) for i in range(count)]


async def test_wall_pages_moves_selects_and_deletes_the_selection(browserless_service, browserless_http,
                                                                 monkeypatch) -> None:
    monkeypatch.setattr(wall_module, "LIST_SECONDS", 0.3)
    tag = uuid.uuid4().hex[:6]
    mine = await make_sessions(browserless_http, f"wall-{tag}", 6)
    other = (await browserless_http.post("/browsers", json={"name": f"other-{tag}"})).json()
    app = make_app(browserless_service)
    app.last_filter = f"wall-{tag}"
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and len(app.screen._browsers) >= 6)
        await pilot.press("w")
        await wait_for(pilot, lambda: screen_shown(app, WallScreen) and shown_names(app))
        wall = app.screen
        assert wall.shape == (2, 2)  # 80×24: four tiles a page
        assert shown_names(app) == [f"wall-{tag}-{i}" for i in range(4)]  # the filter applies: not other-…
        status = str(wall.query_one("#wall-status").render())
        assert "6 sessions" in status and "page 1/2" in status
        # each tile: its name in the border, state and idle time; a browserless session's badge says the browser is down
        first = tiles(app)[0]
        assert f"wall-{tag}-0" in str(first.border_title)
        await wait_for(pilot, lambda: all("browser down" in line_of(t) for t in tiles(app)), what="badges")
        assert line_of(first).startswith("active · idle")
        # only the page shown pulls frames
        assert sum(t.pulling for t in tiles(app)) == 4

        await pilot.press("right", "down")
        assert wall.cursor == 3 and tiles(app)[3].has_class("-cursor")
        await pilot.press("space")
        assert "✓" in str(tiles(app)[3].border_title) and tiles(app)[3].has_class("-selected")
        await pilot.press("down")  # past the bottom edge: the next page
        await wait_for(pilot, lambda: shown_names(app) == [f"wall-{tag}-4", f"wall-{tag}-5"])
        assert wall.cursor == 5 and "page 2/2" in str(wall.query_one("#wall-status").render())
        assert sum(t.pulling for t in tiles(app)) == 2  # the sessions paged out cost nothing
        await pilot.press("space")
        assert "2 selected" in str(wall.query_one("#wall-status").render())

        await pilot.press("d")
        await wait_for(pilot, lambda: screen_shown(app, ConfirmScreen))
        question = str(app.screen.query_one(".dialog-question").render())
        assert question.startswith("Delete 2 sessions") and f"wall-{tag}-3" in question and f"wall-{tag}-5" in question
        await pilot.press("y")
        await wait_for(pilot, lambda: screen_shown(app, WallScreen) and len(wall.browsers) == 4)
        assert not wall.selection
        # a session made elsewhere that matches the filter joins the wall
        mine.append((await browserless_http.post("/browsers", json={"name": f"wall-{tag}-6"})).json())
        await wait_for(pilot, lambda: "5 sessions" in str(wall.query_one("#wall-status").render()), what="listed")
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: shown_names(app) == [f"wall-{tag}-6"])
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        listed = {key.value for key in app.screen.query_one("#sessions-table").rows}
        assert listed == {b["session_id"] for b in mine} - {mine[3]["session_id"], mine[5]["session_id"]}
    for index, session in enumerate(mine):
        status = (await browserless_http.get(f"/browsers/{session['session_id']}")).status_code
        assert status == (410 if index in (3, 5) else 200), (index, status)
    assert (await browserless_http.get(f"/browsers/{other['session_id']}")).status_code == 200  # nothing else touched
    for session in [*mine, other]:
        await browserless_http.delete(f"/browsers/{session['session_id']}")


async def test_wall_draws_live_tiles_with_the_recording_badge_and_opens_a_session(service, http, monkeypatch,
                                                                                   tmp_path) -> None:
    downloads = use_downloads_dir(monkeypatch, tmp_path)
    tag = uuid.uuid4().hex[:6]
    mine = await make_sessions(http, f"live-{tag}", 2, at_once=True)
    replay = await http.post(f"/browsers/{mine[1]['session_id']}/replays", json={})
    assert replay.status_code in (200, 201), replay.text
    app = make_app(service)
    app.last_filter = f"live-{tag}"
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and len(app.screen._browsers) >= 2)
        await app.run_action("show_wall")  # the palette's "Session wall"
        await wait_for(pilot, lambda: screen_shown(app, WallScreen) and len(shown_names(app)) == 2)
        wall = app.screen
        assert wall.shape == (2, 2)  # no more tiles than the sessions need; 4×4 fits 160×45
        assert grid_shape(160, 42, 16) == (4, 4) and grid_shape(160, 42, 5) == (3, 2)
        assert grid_shape(160, 42, 40) == (4, 4) and grid_shape(80, 21, 40) == (2, 2)
        await wait_for(pilot, wall.first_frames_drawn, timeout=20, what="a frame in every tile")
        assert wall._warm == {}  # each tile took the screencast started as the wall opened
        for tile in tiles(app)[:2]:
            assert tile.canvas.geometry is not None and tile.canvas.geometry.columns > 20  # a picture, drawn
        recording = next(t for t in tiles(app) if t.browser is not None and t.browser.name == mine[1]["name"])
        await wait_for(pilot, lambda: "● REC" in line_of(recording), what="the recording badge")
        assert "● REC" not in line_of(tiles(app)[0])

        # on a selection: a screenshot of each into one new folder; recording started where it was not, then stopped
        await pilot.press("space", "right", "space")
        await pilot.press("S")
        saved = await wait_for_notification(pilot, "2 screenshots saved in ", timeout=20)
        folder = Path(saved.split(" saved in ", 1)[1])
        assert folder.parent == downloads
        assert sorted(os.listdir(folder)) == sorted(f"{session['name']}.png" for session in mine)
        await pilot.press("R")
        await wait_for_notification(pilot, "Recording started on 1 session", timeout=20)
        replays = (await http.get(f"/browsers/{mine[0]['session_id']}/replays")).json()
        assert [r.get("finished_at") for r in replays] == [None]
        await pilot.press("R")
        await wait_for_notification(pilot, "Recording stopped on 2 sessions", timeout=20)
        for session in mine:
            replays = (await http.get(f"/browsers/{session['session_id']}/replays")).json()
            assert all(r.get("finished_at") for r in replays), replays

        await pilot.press("left", "enter")
        await wait_for(pilot, lambda: screen_shown(app, SessionScreen))
        assert app.screen.browser.session_id == mine[0]["session_id"]
        assert not any(t.pulling for t in wall.query(SessionTile))  # covered: the wall pulls nothing
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is wall and sum(t.pulling for t in tiles(app)) == 2)

        await pilot.press("escape")  # the wall opened again shows each session's last picture at once
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        await app.run_action("show_wall")
        await wait_for(pilot, lambda: screen_shown(app, WallScreen) and len(shown_names(app)) == 2)
        assert app.screen.pictures_shown()
    await http.post(f"/browsers/{mine[1]['session_id']}/replays/{replay.json()['replay_id']}/stop")
    for session in mine:
        await http.delete(f"/browsers/{session['session_id']}")


def screen_text(terminal) -> str:
    return "\n".join(terminal.core.display)


async def test_broadcast_typing_reaches_every_shell_and_shows_each_exit_code(browserless_service,
                                                                            browserless_http) -> None:
    tag = uuid.uuid4().hex[:6]
    mine = await make_sessions(browserless_http, f"cast-{tag}", 3)
    settings = defaults().model_copy(update={"shell": ShellSettings(command=SHELL)})
    app = make_app(browserless_service, settings=settings)
    app.last_filter = f"cast-{tag}"
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.screen.selected() is not None
                       and len(app.screen._browsers) >= 3)
        await pilot.press("space", "space", "space", "b")
        await wait_for(pilot, lambda: screen_shown(app, BroadcastScreen))
        screen = app.screen
        terminals = screen.terminals
        assert len(terminals) == 3
        await wait_for(pilot, lambda: all(screen_text(t).rstrip().endswith(PROMPT) for t in terminals),
                       timeout=20, what="three prompts")
        state = lambda: str(screen.query_one("#broadcast-state").render())  # noqa: E731
        assert state() == "BROADCAST ON · every key goes to 3 of 3 shells · ctrl+] then b: off"  # in the first pane
        footer_hint = lambda: [str(label.render()) for label in screen.query(".-hint")]  # noqa: E731
        await wait_for(pilot, lambda: any("every key goes to the program" in text for text in footer_hint()),
                       what="the footer's terminal hint")
        assert not any("switch tabs" in text for text in footer_hint()), footer_hint()  # this screen has no tabs

        await type_text(pilot, "echo hi-$((6*7))", then="enter")
        await wait_for(pilot, lambda: all("\nhi-42" in screen_text(t) for t in terminals), what="the echo in each")

        await pilot.press("ctrl+right_square_bracket", "b")  # out of the terminal, broadcast off
        assert state().startswith("broadcast off")
        await pilot.press("enter")
        await type_text(pilot, "exit 4", then="enter")  # only the focused shell
        await wait_for(pilot, lambda: terminals[0].exited)
        assert str(terminals[0].border_title).endswith("exit 4")
        assert not terminals[1].exited and not terminals[2].exited

        await pilot.press("escape", "b")  # out of the ended pane, broadcast on again
        assert "2 of 3 shells" in state()
        await pilot.press("enter")
        await type_text(pilot, "exit 3", then="enter")
        await wait_for(pilot, lambda: terminals[1].exited and terminals[2].exited, what="both exits")
        assert [str(t.border_title).rsplit(" · ", 1)[1] for t in terminals] == ["exit 4", "exit 3", "exit 3"]
        await wait_for(pilot, lambda: state().startswith("every shell has ended (3) · esc closes"))
        await pilot.pause()
        banner = terminals[1].render_line(terminals[1].size.height - 1).text.strip()
        assert banner == "process exited with code 3"  # no "press r to restart": nothing restarts here
    for session in mine:
        await browserless_http.delete(f"/browsers/{session['session_id']}")


def test_badges_say_what_needs_a_person() -> None:
    """The badges a tile draws from what it saw (no service: the states are those the tests above reach live)."""
    browser = Browser.model_validate({"session_id": "s1", "cdp_ws_url": "", "created_at": "2026-01-01T00:00:00Z",
                                      "headless": True, "stealth": False, "timeout_seconds": 60})
    now = 1000.0
    assert TileState(touched_at=now - 5).badges(browser, now) == []
    reaping = TileState(touched_at=now - 50).badges(browser, now)  # 10 s of its 60 s timeout left
    assert reaping == [("⌛ reaped in 10s", "bold yellow")]
    assert [text for text, _ in TileState(down="503", recording=True).badges(browser, now)] == ["⚠ browser down",
                                                                                               "● REC"]
    assert [text for text, _ in TileState(restarted=True).badges(browser, now)] == ["⚠ restarted"]
    assert [text for text, _ in TileState(gone=True, touched_at=now - 59).badges(browser, now)] == ["ended"]
    assert TileState(changed_at=now - 125).idle(now) == "125s" and TileState().idle(now) == "–"


async def test_sizes_reported_while_a_shell_starts_start_one_shell_at_the_last_size(browserless_service,
                                                                                   browserless_http) -> None:
    """Broadcast panes and shell tabs start their shell through `ShellSession.fit`: a terminal that reports a
    second size before the spawn has answered (a resize as the screen opens) gets one shell, resized."""
    from bbrowse.client import BrowserClient
    from bbrowse.tui.shell_session import ShellSession

    session = (await make_sessions(browserless_http, f"fit-{uuid.uuid4().hex[:6]}", 1))[0]
    client = BrowserClient(browserless_service.url, browserless_service.token)
    output = bytearray()
    exited = asyncio.Event()
    shell = ShellSession(client, session["session_id"], on_output=output.extend, on_exit=lambda code: exited.set(),
                         command=SHELL)
    try:
        started = await asyncio.gather(shell.fit(80, 24), shell.fit(100, 30))
        assert started == [True, False]
        assert await shell.busy() is None  # one process carries the shell's marker: no second shell
        await shell.write(b"stty size\n")
        deadline = asyncio.get_running_loop().time() + 10
        while b"30 100" not in output and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert b"30 100" in output, bytes(output)
    finally:
        await shell.close()
        await browserless_http.delete(f"/browsers/{session['session_id']}")


async def test_tiles_with_a_picture_wait_for_the_blank_ones_then_take_frames_again(browserless_service,
                                                                                 browserless_http) -> None:
    """As the wall opens, a tile's second frame comes only once every tile shows a first one: the app's (and the
    browsers') time goes to the blank tiles first. The frames here come from the test (two fast sessions, one
    whose first frame takes 0.6 s); the sessions are the browserless service's."""
    import time

    from PIL import Image

    class Frames:
        def __init__(self, first_after: float) -> None:
            self.first_after = first_after
            self.taken: list[float] = []

        async def frames(self):
            await asyncio.sleep(self.first_after)
            while True:
                self.taken.append(time.monotonic())
                yield Image.new("RGB", (160, 100), (40 * len(self.taken) % 256, 0, 0))
                await asyncio.sleep(0.02)

    tag = uuid.uuid4().hex[:6]
    mine = await make_sessions(browserless_http, f"first-{tag}", 3)
    slow = mine[2]["session_id"]
    sources: dict[str, Frames] = {}

    def source_for(browser: Browser, size) -> Frames:
        return sources.setdefault(browser.session_id, Frames(0.6 if browser.session_id == slow else 0.0))

    app = make_app(browserless_service)
    app.last_filter = f"first-{tag}"
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and len(app.screen._browsers) >= 3)
        browsers = sorted(app.screen._browsers.values(), key=lambda b: b.name or "")
        wall = WallScreen(browsers, matches=lambda b: (b.name or "").startswith(f"first-{tag}"), source_for=source_for)
        await app.push_screen(wall)
        await wait_for(pilot, wall.first_frames_drawn, what="a frame in every tile")
        last_first = sources[slow].taken[0]
        await wait_for(pilot, lambda: wall.full_at is not None, what="the full wall noted as drawn")
        assert wall.full_at >= last_first
        await wait_for(pilot, lambda: all(len(s.taken) >= 3 for s in sources.values()), what="frames again")
        for session_id, source in sources.items():
            if session_id != slow:
                assert source.taken[1] >= last_first, "a second frame was taken before every tile had its first"
    for session in mine:
        await browserless_http.delete(f"/browsers/{session['session_id']}")


async def test_a_closed_wall_is_freed_with_its_tiles_and_what_they_drew(browserless_service) -> None:
    """Each screen watches the app's connection state and service label; a closed screen's watchers must go with it,
    or every wall ever opened stays in memory with its tiles (Textual drops them only when the state next changes).
    And the lines its widgets drew (each widget's styles cache) go too, not only the widgets."""
    app = make_app(browserless_service)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))

        def drawn_line_caches() -> int:
            gc.collect()
            return sum(1 for o in gc.get_objects() if type(o).__name__ == "StylesCache")

        walls = []
        before = 0
        for opening in range(4):
            if opening == 1:  # (the table has drawn its footer again once: what it holds from then on stays)
                await pilot.pause(0.3)
                before = drawn_line_caches()
            wall = WallScreen([], live=False)
            await app.push_screen(wall)  # (returns once the wall is mounted)
            assert app.screen is wall
            walls.append(weakref.ref(wall))
            del wall
            await pilot.press("escape")
            await wait_for(pilot, lambda: screen_shown(app, SessionsScreen), what="back on the table")

        def freed() -> bool:
            gc.collect()  # a wall is a cycle of widgets: only the collector frees it
            return all(ref() is None for ref in walls)

        # (a cancelled timer of the last wall's keeps it a moment longer: asyncio drops it at its due time)
        await wait_for(pilot, freed, timeout=5, what="every closed wall freed")
        left = drawn_line_caches() - before
        assert left < 10, left
