"""The config file: defaults, every key, precedence (file < environment < flags) and clear errors.

In-process tests load settings from a temporary `BBROWSE_CONFIG_DIR`; CLI tests run `bbrowse`'s entry point
in this process (`bb_here`) against the session's real service, chosen through a profile in a temporary
config file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
from cli_support import bb_here

from bbrowse.config import (
    DEFAULT_THEME,
    ConfigFileError,
    Overrides,
    Settings,
    load_settings,
    parse_rendering,
    save_theme,
    set_command_line,
)
from bbrowse.paths import config_file, user_themes_dir
from bbrowse.tui.logbuffer import DEFAULT_CAPACITY
from bbrowse.tui.panes.screenshot import DEFAULT_INTERVAL

ROOT = Path(__file__).resolve().parent.parent

WORK_CONFIG = """\
theme = "bbrowse-light"
profile = "work"

[profiles.work]
kind = "remote"
base_url = "http://10.0.0.5:7780/"
token_env = "WORK_TOKEN"

[profiles.lab]
kind = "remote"
base_url = "http://10.0.0.6:7780"
token = "lab-token-in-file"

[shell]
command = ["zsh", "-l"]

[logs]
buffer_lines = 5000

[screenshot]
interval = 7
rendering = "halfcell"

[keys]
"sessions.create" = "c"
app.switch_profile = "ctrl+p"
"""


@pytest.fixture
def config_dir(tmp_path, monkeypatch) -> Path:
    """A private config dir and an environment with none of the variables that choose a profile or theme."""
    directory = tmp_path / "config"
    directory.mkdir()
    monkeypatch.setenv("BBROWSE_CONFIG_DIR", str(directory))
    for name in ("KERNEL_BASE_URL", "KERNEL_API_KEY", "BBROWSE_PROFILE", "BBROWSE_THEME", "BBROWSE_IMAGE_RENDERING"):
        monkeypatch.delenv(name, raising=False)
    set_command_line(Overrides())
    yield directory
    set_command_line(Overrides())


def write_config(text: str) -> Path:
    path = config_file()
    path.write_text(text)
    return path


def test_paths_follow_the_config_dir(config_dir):
    assert config_file() == config_dir / "config.toml"
    assert user_themes_dir() == config_dir / "themes"


def test_defaults_without_a_file_match_what_the_panes_use_without_settings(config_dir):
    settings = load_settings()
    assert settings.theme == DEFAULT_THEME == "bbrowse-dark"
    assert settings.profile == "embedded"
    assert set(settings.profiles) == {"embedded", "cloud"}
    cloud = settings.profiles["cloud"]
    assert (cloud.kind, cloud.base_url, cloud.token_env) == ("cloud", "https://api.onkernel.com", "KERNEL_API_KEY")
    assert settings.logs.buffer_lines == DEFAULT_CAPACITY
    assert settings.screenshot.interval == DEFAULT_INTERVAL
    assert settings.screenshot.forced_rendering is None
    assert settings.shell.command is None and settings.keys == {}


def test_every_key_of_the_file_is_read(config_dir, monkeypatch):
    write_config(WORK_CONFIG)
    monkeypatch.setenv("WORK_TOKEN", "work-secret")
    settings = load_settings()
    assert settings.theme == "bbrowse-light"
    assert settings.profile == "work"
    work = settings.active_profile
    assert (work.kind, work.base_url) == ("remote", "http://10.0.0.5:7780")
    assert work.client_config().token == "work-secret"
    assert settings.profiles["lab"].client_config().token == "lab-token-in-file"
    assert "lab-token-in-file" not in repr(settings)  # a token in the file is a secret, never shown
    assert set(settings.profiles) == {"embedded", "cloud", "work", "lab"}
    assert settings.shell.command == ("zsh", "-l")
    assert settings.logs.buffer_lines == 5000
    assert (settings.screenshot.interval, settings.screenshot.forced_rendering) == (7, "halfcell")
    # a quoted dotted id and a bare one (a nested table in TOML) both name a binding
    assert settings.keys == {"sessions.create": "c", "app.switch_profile": "ctrl+p"}


def test_precedence_file_then_environment_then_flags(config_dir, monkeypatch):
    write_config(WORK_CONFIG)
    assert (load_settings().profile, load_settings().theme) == ("work", "bbrowse-light")

    # KERNEL_* pick a remote/cloud service as they always did, over the file's default profile
    monkeypatch.setenv("KERNEL_BASE_URL", "http://127.0.0.1:7999")
    monkeypatch.setenv("KERNEL_API_KEY", "env-token")
    settings = load_settings()
    assert settings.profile == "environment"
    assert settings.active_profile.kind == "remote"
    assert settings.active_profile.client_config().base_url == "http://127.0.0.1:7999"

    # a profile named in the environment beats both, and so does the theme
    monkeypatch.setenv("BBROWSE_PROFILE", "lab")
    monkeypatch.setenv("BBROWSE_THEME", "bbrowse-solarized")
    monkeypatch.setenv("BBROWSE_IMAGE_RENDERING", "sixel")
    settings = load_settings()
    assert (settings.profile, settings.theme, settings.screenshot.rendering) == ("lab", "bbrowse-solarized", "sixel")

    # and the command line beats the environment
    set_command_line(Overrides(profile="embedded", theme="bbrowse-ember"))
    settings = load_settings()
    assert (settings.profile, settings.theme) == ("embedded", "bbrowse-ember")


def test_image_rendering_names_from_the_environment():
    assert [parse_rendering(name) for name in ("sixel", " HalfCell ", "kitty", "auto")] == [
        "sixel", "halfcell", "tgp", "auto"]
    assert parse_rendering("ascii-art") is None and parse_rendering("") is None and parse_rendering(None) is None


def test_kernel_api_key_alone_means_kernel_cloud(config_dir, monkeypatch):
    monkeypatch.setenv("KERNEL_API_KEY", "cloud-token")
    settings = load_settings()
    assert settings.profile == "environment"
    assert settings.active_profile.kind == "cloud"
    assert settings.active_profile.client_config().base_url == "https://api.onkernel.com"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("theme = \n", r"not valid TOML: .*line 1"),
        ('[profiles.x]\nkind = "remot"\n', r"line 2: profiles\.x\.kind: Input should be 'embedded', 'remote' or"),
        ('\n[profiles.box]\nkind = "remote"\n', r"line 2: profiles\.box: a remote profile needs base_url"),
        ('[profiles.box]\nkind = "remote"\nbase_url = "ftp://x"\n', r"line 3: profiles\.box\.base_url: base URL must"),
        ("[logs]\nbuffer_lines = 10\n", r"line 2: logs\.buffer_lines: Input should be greater than or equal to 100"),
        ("[screenshot]\ninterval = -1\n", r"line 2: screenshot\.interval"),
        ('[shell]\ncommand = "bash"\n', r"line 2: shell\.command"),
        ('colour = "red"\n', r"line 1: colour: Extra inputs are not permitted"),
        ('profile = "nowhere"\n', r"no profile named 'nowhere' \(known: cloud, embedded\)"),
    ],
)
def test_a_broken_file_is_one_line_naming_the_file_line_and_field(config_dir, text, expected):
    path = write_config(text)
    with pytest.raises(ConfigFileError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith(str(path)), message
    assert "\n" not in message
    assert re.search(expected, message), message


def test_a_missing_token_variable_is_named(config_dir):
    write_config(WORK_CONFIG)
    with pytest.raises(Exception, match="profile 'work' has no token: set the environment variable WORK_TOKEN"):
        load_settings().active_profile.client_config()


def test_save_theme_changes_only_the_theme_line(config_dir):
    path = write_config("# my settings\ntheme = \"bbrowse-dark\"  # the old one\n\n[keys]\ntheme = \"x\"\n")
    save_theme(path, "bbrowse-light")
    assert path.read_text() == '# my settings\ntheme = "bbrowse-light"\n\n[keys]\ntheme = "x"\n'
    path.write_text('[logs]\nbuffer_lines = 1000\n')
    save_theme(path, "bbrowse-ember")
    assert load_settings().theme == "bbrowse-ember" and load_settings().logs.buffer_lines == 1000
    path.unlink()
    save_theme(path, "bbrowse-solarized")
    assert load_settings().theme == "bbrowse-solarized"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # a new config file may later hold tokens


def test_the_reference_documents_every_key_and_binding_id():
    from textual.binding import Binding
    from textual.dom import DOMNode

    from bbrowse.tui.app import known_binding_ids

    reference = (ROOT / "docs" / "configuration.md").read_text()
    for key in ("theme", "profile", "kind", "base_url", "token", "token_env", "command", "buffer_lines", "interval",
                "rendering", "BBROWSE_PROFILE", "BBROWSE_THEME", "BBROWSE_CONFIG_DIR", "KERNEL_BASE_URL"):
        assert f"`{key}`" in reference, key
    assert "--profile NAME" in reference and "--theme NAME" in reference

    known_binding_ids()  # imports every screen, pane and widget
    ours: set[str] = set()
    pending: list[type] = [DOMNode]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("bbrowse."):
            ours.update(b.id for b in cls.__dict__.get("BINDINGS", ()) if isinstance(b, Binding) and b.id)
    assert len(ours) > 40
    missing = sorted(binding_id for binding_id in ours if f"`{binding_id}`" not in reference)
    assert not missing, f"binding ids missing from docs/configuration.md: {missing}"


# the real CLI -----------------------------------------------------------------------


def profile_env(service, config: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("KERNEL_BASE_URL", "KERNEL_API_KEY", "BBROWSE_PROFILE", "BBROWSE_THEME", "BBROWSE_DEBUG")}
    return {**env, "BBROWSE_CONFIG_DIR": str(config), "BBROWSE_STATE_DIR": str(config.parent / "state"),
            "LIVE_TOKEN": service.token, **extra}


def live_config(service, tmp_path: Path) -> Path:
    directory = tmp_path / "cli-config"
    directory.mkdir()
    (directory / "config.toml").write_text(
        f'profile = "dead"\ntheme = "bbrowse-light"\n\n'
        f'[profiles.live]\nkind = "remote"\nbase_url = "{service.url}"\ntoken_env = "LIVE_TOKEN"\n\n'
        f'[profiles.dead]\nkind = "remote"\nbase_url = "http://127.0.0.1:9"\ntoken_env = "LIVE_TOKEN"\n'
    )
    return directory


def test_cli_flag_beats_environment_beats_file(service, tmp_path):
    directory = live_config(service, tmp_path)
    env = profile_env(service, directory)

    from_file = json.loads(bb_here(service, "info", "--json", env=env).stdout)
    assert from_file["profile"] == "dead"
    assert from_file["service"]["status"] == "connection_failed"
    assert from_file["theme"] == "bbrowse-light"
    assert from_file["config_file"] == str(directory / "config.toml")
    assert from_file["themes_dir"] == str(directory / "themes")

    from_env = json.loads(bb_here(service, "info", "--json", env={**env, "BBROWSE_PROFILE": "live",
                                                            "BBROWSE_THEME": "bbrowse-ember"}).stdout)
    assert (from_env["profile"], from_env["service"]["url"], from_env["service"]["status"]) == (
        "live", service.url, "ok")
    assert from_env["theme"] == "bbrowse-ember"

    from_flag = json.loads(bb_here(service, "--profile", "dead", "--theme", "bbrowse-solarized", "info", "--json",
                              env={**env, "BBROWSE_PROFILE": "live"}).stdout)
    assert (from_flag["profile"], from_flag["theme"]) == ("dead", "bbrowse-solarized")
    assert service.token not in json.dumps(from_flag)

    # a subcommand talks to the profile's service
    listed = bb_here(service, "--profile", "live", "sessions", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert isinstance(json.loads(listed.stdout), list)


def test_info_prints_every_path(service, tmp_path):
    directory = live_config(service, tmp_path)
    text = bb_here(service, "--profile", "live", "info", env=profile_env(service, directory)).stdout.decode()
    state = directory.parent / "state"
    for label, value in [("profile", "live"), ("config file", str(directory / "config.toml")),
                         ("config dir", str(directory)), ("themes dir", str(directory / "themes")),
                         ("state dir", str(state)), ("discovery file", str(state / "serve.json")),
                         ("service log", str(state / "service" / "logs" / "bbrowse.log")),
                         ("launch log", str(state / "embedded-serve.log")), ("service", f"remote · {service.url}")]:
        assert re.search(rf"^{label}\s+{re.escape(value)}", text, re.MULTILINE), (label, text)


def test_cli_reports_a_broken_config_file_in_one_line(service, tmp_path):
    directory = tmp_path / "broken"
    directory.mkdir()
    (directory / "config.toml").write_text('theme = "x"\n[profiles.box]\nkind = "remote"\nbase_url = 42\n')
    result = bb_here(service, "sessions", env=profile_env(service, directory))
    assert result.returncode == 1
    err = result.stderr.decode()
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"error: config: {directory / 'config.toml'}: line 4: profiles.box.base_url:"), err

    unknown = bb_here(service, "--profile", "nope", "sessions", env=profile_env(service, tmp_path / "absent"))
    assert unknown.returncode == 1
    assert unknown.stderr.decode() == "error: config: --profile: no profile named 'nope' (known: cloud, embedded)\n"

    # info still shows where the file is, and what is wrong with it
    info = json.loads(bb_here(service, "info", "--json", env=profile_env(service, directory)).stdout)
    assert "line 4: profiles.box.base_url" in info["config_error"]
    assert info["config_file"] == str(directory / "config.toml")


def test_settings_model_rejects_unknown_keys_in_every_table():
    with pytest.raises(Exception, match="Extra inputs"):
        Settings.model_validate({"logs": {"bufer_lines": 10}})
