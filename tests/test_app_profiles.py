"""Settings inside the app, against real local services: profiles switched from the palette (two
`bbrowse serve` defined as remote profiles in a temporary config file, and an embedded service the
app started and must stop), remapped keys, a broken config file, and the pane settings."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from app_support import screen_shown, type_text, wait_for, wait_for_notification
from conftest import ServiceHandle, start_service, stop_service
from textual.command import CommandList, CommandPalette
from textual.screen import Screen
from textual.widgets import Input

from bbrowse.client import ClientConfig
from bbrowse.config import Overrides, Settings, load_settings
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp, StartingScreen, load_app_settings
from bbrowse.tui.panes.logs import LogsPane, LogTarget
from bbrowse.tui.panes.screenshot import ScreenshotPane
from bbrowse.tui.screens.create_session import CreateSessionScreen
from bbrowse.tui.screens.quit import QuitScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.shell_session import DEFAULT_SHELL
from bbrowse.tui.widgets.service_bar import ServiceBar
from bbrowse.wire import LogSource

NO_CHROMIUM = {"BBROWSE_CHROMIUM": "/nonexistent/chromium"}


@pytest.fixture(scope="module")
def two_services(tmp_path_factory) -> Iterator[tuple[ServiceHandle, ServiceHandle]]:
    """Two services with no Chromium: the profiles' tests switch between services and list their sessions,
    which then start without a browser."""
    alpha = start_service(tmp_path_factory.mktemp("alpha-state"), NO_CHROMIUM)
    try:
        beta = start_service(tmp_path_factory.mktemp("beta-state"), NO_CHROMIUM)
    except Exception:
        stop_service(alpha)
        raise
    yield alpha, beta
    stop_service(beta)
    stop_service(alpha)


@pytest.fixture
def profiles_config(two_services, tmp_path, monkeypatch) -> Path:
    """A config file naming both services as remote profiles (tokens in the environment), plus a broken one."""
    alpha, beta = two_services
    for name in ("KERNEL_BASE_URL", "KERNEL_API_KEY", "BBROWSE_PROFILE", "BBROWSE_THEME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ALPHA_TOKEN", alpha.token)
    monkeypatch.setenv("BETA_TOKEN", beta.token)
    monkeypatch.delenv("NOBODY_SET_THIS_TOKEN", raising=False)
    path = tmp_path / "config.toml"
    path.write_text(
        'profile = "alpha"\n\n'
        f'[profiles.alpha]\nkind = "remote"\nbase_url = "{alpha.url}"\ntoken_env = "ALPHA_TOKEN"\n\n'
        f'[profiles.beta]\nkind = "remote"\nbase_url = "{beta.url}"\ntoken_env = "BETA_TOKEN"\n\n'
        f'[profiles.tokenless]\nkind = "remote"\nbase_url = "{beta.url}"\ntoken_env = "NOBODY_SET_THIS_TOKEN"\n'
    )
    return path


def settings_from(path: Path) -> Settings:
    return load_settings(path, overrides=Overrides())


def table_ids(app) -> list[str]:
    """The session ids in the sessions table; none while a new sessions screen is still being composed."""
    tables = app.screen.query("#sessions-table")
    return [key.value for key in tables.first().rows] if tables else []


def bar_label(app) -> str:
    bars = app.screen.query(ServiceBar)
    return bars.first().service_label if bars else ""


async def pick_in_palette(pilot, app, text: str) -> None:
    """Type `text` in the open command palette and run the first match."""
    await wait_for(pilot, lambda: screen_shown(app, CommandPalette) and app.screen.query(CommandList))
    await type_text(pilot, text)
    command_list = app.screen.query_one(CommandList)
    await wait_for(pilot, lambda: command_list.option_count >= 1 and command_list.highlighted is not None)
    await pilot.press("enter")


async def test_switch_profile_from_the_palette_reconnects_to_the_other_service(two_services, profiles_config):
    alpha, beta = two_services
    name = f"on-beta-{uuid.uuid4().hex[:6]}"
    async with httpx.AsyncClient(base_url=beta.url, headers=beta.headers) as http:
        on_beta = (await http.post("/browsers", json={"name": name})).json()["session_id"]
    try:
        app = BbrowseApp(settings=settings_from(profiles_config))
        async with app.run_test(size=(140, 36)) as pilot:
            # started on the file's profile, alpha, in the worker thread
            await wait_for(pilot, lambda: screen_shown(app, SessionsScreen)
                           and app.connection_state == "connected")
            assert app.target.config.base_url == alpha.url
            await wait_for(pilot, lambda: bar_label(app) == f"alpha · {alpha.url}")
            first_screen = app.screen
            assert on_beta not in table_ids(app)

            await pilot.press("ctrl+p")
            await pick_in_palette(pilot, app, "Switch profile")
            await wait_for(pilot, lambda: screen_shown(app, CommandPalette) and app.screen.query(Input)
                           and app.screen.query_one(Input).placeholder == "Switch to profile…")
            await pick_in_palette(pilot, app, "beta")

            await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.screen is not first_screen
                           and app.connection_state == "connected")
            assert app.target.config.base_url == beta.url and app.target.profile == "beta"
            assert app.settings.profile == "beta"
            await wait_for(pilot, lambda: bar_label(app) == f"beta · {beta.url}")
            await wait_for(pilot, lambda: on_beta in table_ids(app))
            assert len(app.screen_stack) == 2  # the default screen and the fresh sessions table, nothing left over
    finally:
        async with httpx.AsyncClient(base_url=beta.url, headers=beta.headers) as http:
            await http.delete(f"/browsers/{on_beta}")


async def test_shift_p_lists_the_profiles_and_a_failing_one_says_why_then_another_works(two_services,
                                                                                      profiles_config):
    _, beta = two_services
    app = BbrowseApp(settings=settings_from(profiles_config))
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.connection_state == "connected")
        await pilot.press("P")
        await wait_for(pilot, lambda: screen_shown(app, CommandPalette) and app.screen.query(CommandList))
        command_list = app.screen.query_one(CommandList)
        await wait_for(pilot, lambda: command_list.option_count == 5)
        listed = [str(command_list.get_option_at_index(i).prompt) for i in range(command_list.option_count)]
        assert [line.split("\n")[0] for line in listed] == ["alpha", "beta", "cloud", "embedded", "tokenless"]
        assert any("(current)" in line and line.startswith("alpha") for line in listed)

        await type_text(pilot, "tokenless", then="enter")
        await wait_for(pilot, lambda: screen_shown(app, StartingScreen)
                       and "has no token" in str(app.screen.query_one("#starting-message").render()))
        message = str(app.screen.query_one("#starting-message").render())
        assert "NOBODY_SET_THIS_TOKEN" in message
        # the configuration error, not "reconnecting": nothing is retried until the user acts
        assert app.connection_state == "failed" and app.client is None
        bar = str(app.screen.query_one(ServiceBar).render())
        assert "not connected" in bar and "reconnecting" not in bar

        await pilot.press("P")
        await pick_in_palette(pilot, app, "beta")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.connection_state == "connected")
        assert app.target.config.base_url == beta.url
        await wait_for(pilot, lambda: app.screen._loaded)


async def test_switching_away_leaves_the_embedded_service_running_and_switching_back_finds_its_sessions(
    two_services, profiles_config, tmp_path, monkeypatch
):
    alpha, _ = two_services
    monkeypatch.setenv("BBROWSE_STATE_DIR", str(tmp_path / "fresh-state"))  # no service runs there yet
    monkeypatch.setenv("BBROWSE_CHROMIUM", NO_CHROMIUM["BBROWSE_CHROMIUM"])  # its session needs no browser
    settings = settings_from(profiles_config).model_copy(update={"profile": "embedded"})
    app = BbrowseApp(settings=settings)
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.connection_state == "connected",
                       timeout=40)
        embedded = app.target.embedded
        assert embedded is not None and embedded.owned
        url = app.target.config.base_url
        await wait_for(pilot, lambda: bar_label(app).startswith("embedded · http://127.0.0.1:"))
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {embedded.token}"}) as http:
            made_elsewhere = (await http.post("/browsers", json={"name": "made-with-the-cli"})).json()["session_id"]
        await wait_for(pilot, lambda: made_elsewhere in table_ids(app))

        app.switch_profile("alpha")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.target is not None
                       and app.target.config.base_url == alpha.url)
        await wait_for(pilot, lambda: app.screen._loaded)
        assert embedded.running  # nothing was destroyed by switching

        app.switch_profile("embedded")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.target is not None
                       and app.target.kind == "embedded", timeout=40)
        assert app.target.config.base_url == url  # the same service, found through its discovery file
        assert app.target.embedded is embedded  # still the one this app started (so quitting stops it)
        await wait_for(pilot, lambda: made_elsewhere in table_ids(app))

        # quitting would end that session: the app asks first and says how many
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: screen_shown(app, QuitScreen))
        assert "ending 1 session " in str(app.screen.query_one("#quit-question").render())
        await pilot.press("n")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        assert embedded.running
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: screen_shown(app, QuitScreen))
        await pilot.press("y")
    assert embedded.process.wait(timeout=60) is not None  # stopped, in the background, after the app was gone


# keys --------------------------------------------------------------------------------


async def test_a_remapped_key_runs_the_action_and_the_old_key_no_longer_does(service):
    settings = Settings(keys={"sessions.create": "c", "no.such_binding": "x"})
    app = BbrowseApp(target=Target(ClientConfig(service.url, service.token), "remote"), settings=settings)
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        await pilot.press("n")
        await pilot.pause(0.2)
        assert isinstance(app.screen, SessionsScreen)  # n is no longer "new session"
        await pilot.press("c")
        await wait_for(pilot, lambda: screen_shown(app, CreateSessionScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        await wait_for_notification(pilot, "[keys] names no binding no.such_binding")


# a broken file and the pane settings ------------------------------------------------


async def test_a_broken_config_file_gives_a_notification_and_the_defaults(service, tmp_path, monkeypatch):
    monkeypatch.setenv("BBROWSE_CONFIG_DIR", str(tmp_path))
    for name in ("BBROWSE_PROFILE", "BBROWSE_THEME", "KERNEL_BASE_URL", "KERNEL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config.toml").write_text('theme = "bbrowse-light"\n[screenshot]\ninterval = "often"\n')
    settings, problems = load_app_settings()
    assert settings == Settings()
    app = BbrowseApp(target=Target(ClientConfig(service.url, service.token), "remote"), settings=settings,
                     problems=problems)
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        assert app.theme == "bbrowse-dark"
        note = await wait_for_notification(pilot, f"{tmp_path / 'config.toml'}: line 3: screenshot.interval:")
        assert note.startswith(f"{tmp_path / 'config.toml'}: line 3: screenshot.interval:")


class PaneScreen(Screen):
    def __init__(self, pane) -> None:
        super().__init__()
        self.pane = pane

    def compose(self):
        yield self.pane


async def test_panes_use_the_configured_buffer_interval_rendering_and_shell(service, session_id, tmp_path):
    settings = Settings.model_validate({"logs": {"buffer_lines": 500},
                                        "screenshot": {"interval": 7, "rendering": "halfcell"},
                                        "shell": {"command": ["sh", "-i"]}})
    log = tmp_path / "configured.log"
    log.write_text("one\n")
    app = BbrowseApp(target=Target(ClientConfig(service.url, service.token), "remote"), settings=settings)
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        logs = LogsPane(session_id, open_default=False)
        await app.push_screen(PaneScreen(logs))
        panel = await logs.open_log(LogTarget(LogSource.PATH, str(log)))
        assert panel.view.buffer.capacity == 500

        shot = ScreenshotPane(session_id, auto_capture=False)
        await app.push_screen(PaneScreen(shot))
        await wait_for(pilot, lambda: shot.is_mounted)
        assert shot.interval == 7 and shot.view.rendering == "halfcell"
        assert "every 7s" in str(shot.query_one("#shot-status").render())
        assert app.shell_command == ("sh", "-i")
    assert BbrowseApp(settings=Settings()).shell_command == DEFAULT_SHELL
