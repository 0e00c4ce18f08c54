"""The user's settings: `config.toml` at the XDG config path, then the environment, then command-line flags.

Each later source wins: a value in the file is the default, `BBROWSE_PROFILE` / `BBROWSE_THEME` (and
`KERNEL_BASE_URL` / `KERNEL_API_KEY`, which pick a remote or cloud service as the official SDK does)
override it, and `bbrowse --profile` / `--theme` override both. The file is validated as a whole: a
mistake becomes one `ConfigFileError` line naming the file, the line and the field, never a traceback.
Nothing here imports Textual; the app turns these settings into themes, keymaps and panes.
See docs/configuration.md for every key.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from bbrowse.client import DEFAULT_BASE_URL, ENV_BASE_URL, ENV_TOKEN, ClientConfig
from bbrowse.client import ConfigError as ClientConfigError
from bbrowse.client.config import normalize_base_url
from bbrowse.paths import config_file, write_private

ENV_PROFILE = "BBROWSE_PROFILE"
ENV_THEME = "BBROWSE_THEME"
ENV_IMAGE_RENDERING = "BBROWSE_IMAGE_RENDERING"

DEFAULT_THEME = "bbrowse-dark"
EMBEDDED = "embedded"
CLOUD = "cloud"
#: The profile made up from `KERNEL_BASE_URL` / `KERNEL_API_KEY` when they are set.
ENVIRONMENT = "environment"

ProfileKind = Literal["embedded", "remote", "cloud"]
Rendering = Literal["auto", "tgp", "sixel", "halfcell", "unicode"]
#: What `BBROWSE_IMAGE_RENDERING` may say, in any case: a rendering's name, or `kitty` for its graphics (tgp).
_RENDERING_NAMES: dict[str, Rendering] = {name: name for name in get_args(Rendering)} | {"kitty": "tgp"}


def parse_rendering(text: str | None) -> Rendering | None:
    """The rendering `text` names (the value of `BBROWSE_IMAGE_RENDERING`), None when it names none."""
    return _RENDERING_NAMES.get((text or "").strip().lower())


class ConfigFileError(ClientConfigError):
    """The config file (or a profile named on the command line) is unusable; the message is one line."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Profile(_Section):
    """Where to connect: the embedded local service, a remote `bbrowse serve`, or Kernel's cloud."""

    name: str = ""
    kind: ProfileKind
    base_url: str | None = None
    #: A token written in the file; `token_env` (an environment variable holding it) is preferred.
    token: SecretStr | None = None
    token_env: str | None = None

    @field_validator("base_url")
    @classmethod
    def _valid_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        try:
            return normalize_base_url(url)
        except ClientConfigError as error:
            raise ValueError(str(error)) from None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: object) -> object:
        """Cloud defaults to Kernel's API URL; a remote or cloud token defaults to `$KERNEL_API_KEY`."""
        if not isinstance(data, Mapping) or data.get("kind") not in ("remote", "cloud"):
            return data
        data = dict(data)
        if data.get("kind") == "cloud":
            data.setdefault("base_url", DEFAULT_BASE_URL)
        if data.get("token") is None and not data.get("token_env"):
            data["token_env"] = ENV_TOKEN
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        if self.kind == "embedded" and (self.base_url or self.token or self.token_env):
            raise ValueError("an embedded profile takes no base_url or token: bbrowse starts the local service")
        if self.kind == "remote" and not self.base_url:
            raise ValueError("a remote profile needs base_url (e.g. http://10.0.0.5:7780)")
        if self.token is not None and self.token_env:
            raise ValueError("give token or token_env, not both")
        return self

    def client_config(self, env: Mapping[str, str] | None = None) -> ClientConfig:
        """URL and token for a remote or cloud profile; a clear ConfigError when the token is missing."""
        if self.kind == "embedded":
            raise ValueError("the embedded profile's URL and token come from the service bbrowse starts")
        env = os.environ if env is None else env
        token = self.token.get_secret_value() if self.token is not None else env.get(self.token_env or "", "")
        if not token:
            raise ClientConfigError(f"profile {self.name!r} has no token: set the environment variable "
                                    f"{self.token_env} (named by its token_env)")
        return ClientConfig(base_url=self.base_url or DEFAULT_BASE_URL, token=token)

    def describe(self) -> str:
        """`remote · http://10.0.0.5:7780`, for pickers and `bbrowse info`."""
        return self.kind if self.kind == "embedded" else f"{self.kind} · {self.base_url}"


BUILTIN_PROFILES: dict[str, Profile] = {
    EMBEDDED: Profile(name=EMBEDDED, kind="embedded"),
    CLOUD: Profile(name=CLOUD, kind="cloud"),
}


#: What a shell runs when no program is configured or given (the shells pane, `bbrowse shell`): bash
#: where the instance has it, else sh.
DEFAULT_SHELL: tuple[str, ...] = ("sh", "-c", "command -v bash >/dev/null && exec bash || exec sh")


class ShellSettings(_Section):
    #: The shells pane's program and arguments; None means `DEFAULT_SHELL`.
    command: tuple[str, ...] | None = Field(default=None, min_length=1)
    #: Predicted echo: keys drawn before the program echoes them (auto: on a link slower than ~30 ms).
    predict: Literal["auto", "always", "never"] = "auto"


class LogsSettings(_Section):
    #: Lines a log pane keeps; older ones are dropped (and counted). Same as tui.logbuffer.DEFAULT_CAPACITY.
    buffer_lines: int = Field(default=100_000, ge=100, le=50_000_000)


class ScreenshotSettings(_Section):
    #: Seconds between captures in the live view, 0 = continuous (the pane's +/- change it within 0..60).
    interval: int = Field(default=0, ge=0, le=60)
    #: How images are drawn: auto-detect, kitty graphics (tgp), sixel, half-cell blocks or unicode.
    rendering: Rendering = "auto"

    @property
    def forced_rendering(self) -> str | None:
        """The rendering to force on the screenshot widget, None to let it detect one."""
        return None if self.rendering == "auto" else self.rendering


class Settings(_Section):
    """The settings in effect. After `load_settings`, `profile` is the chosen profile's name and
    `profiles` holds the built-in ones too."""

    theme: str = DEFAULT_THEME
    profile: str = EMBEDDED
    profiles: dict[str, Profile] = Field(default_factory=lambda: dict(BUILTIN_PROFILES))
    shell: ShellSettings = ShellSettings()
    logs: LogsSettings = LogsSettings()
    screenshot: ScreenshotSettings = ScreenshotSettings()
    #: Binding id → key(s), e.g. {"sessions.create": "c"}; applied with `App.set_keymap`.
    keys: dict[str, str] = Field(default_factory=dict)

    @field_validator("profiles", mode="before")
    @classmethod
    def _named_profiles(cls, profiles: object) -> object:
        if not isinstance(profiles, Mapping):
            return profiles
        named = {}
        for name, body in profiles.items():
            named[name] = {**body, "name": name} if isinstance(body, Mapping) else body
        return named

    @field_validator("keys", mode="before")
    @classmethod
    def _flatten_keys(cls, keys: object) -> object:
        """`"sessions.create" = "c"` and `sessions.create = "c"` (a nested table in TOML) mean the same."""
        if not isinstance(keys, Mapping):
            return keys
        flat: dict[str, object] = {}

        def walk(prefix: str, table: Mapping) -> None:
            for key, value in table.items():
                name = f"{prefix}.{key}" if prefix else str(key)
                if isinstance(value, Mapping):
                    walk(name, value)
                else:
                    flat[name] = value

        walk("", keys)
        return flat

    @property
    def active_profile(self) -> Profile:
        return self.profiles[self.profile]


@dataclass(frozen=True)
class Overrides:
    """What the command line chose (`bbrowse --profile NAME --theme NAME`); None leaves the choice to others."""

    profile: str | None = None
    theme: str | None = None


_command_line = Overrides()


def set_command_line(overrides: Overrides) -> None:
    """Called once by the top-level CLI group so the app and every subcommand see the flags."""
    global _command_line
    _command_line = overrides


def command_line() -> Overrides:
    return _command_line


def read_file(path: Path) -> dict:
    """The file's TOML as a dict ({} when there is none); ConfigFileError with the line when it is not TOML."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigFileError(f"{path}: cannot read: {getattr(error, 'strerror', None) or error}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigFileError(f"{path}: not valid TOML: {error}") from None


def parse_settings(data: Mapping, path: Path, text: str | None = None) -> Settings:
    """Validate the file's tables; every problem is named by line (when found) and dotted field."""
    data = dict(data)
    profiles = data.get("profiles", {})
    if isinstance(profiles, Mapping):  # the built-in ones exist unless the file redefines them
        data["profiles"] = {**BUILTIN_PROFILES, **profiles}
    try:
        return Settings.model_validate(data)
    except ValidationError as error:
        if text is None:
            try:
                text = path.read_text(encoding="utf-8")
            except OSError:
                text = ""
        problems = [_describe(item, text) for item in error.errors(include_url=False)]
        raise ConfigFileError(f"{path}: " + "; ".join(problems)) from None


def _describe(item: Mapping, text: str) -> str:
    location = [str(part) for part in item["loc"]]
    message = item["msg"].removeprefix("Value error, ")
    field = ".".join(location)
    line = _line_of(text, location)
    where = f"line {line}: " if line else ""
    return f"{where}{field}: {message}" if field else f"{where}{message}"


_TABLE = re.compile(r"^\s*\[+\s*([^\]]+?)\s*\]+\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=""")


def _split_dotted(key: str) -> list[str]:
    """`profiles."my box".kind` → ["profiles", "my box", "kind"]."""
    return [a or b or c for a, b, c in re.findall(r'"([^"]*)"|\'([^\']*)\'|([^.\s]+)', key)]


def _line_of(text: str, location: list[str]) -> int | None:
    """Best effort: the line that writes the field at `location`, else the header of its closest table."""

    def leads_to(path: list[str]) -> bool:
        return bool(path) and location[: len(path)] == path

    table: list[str] = []
    best_table: tuple[int, int] | None = None  # (depth, line)
    for number, line in enumerate(text.splitlines(), start=1):
        if match := _TABLE.match(line):
            table = _split_dotted(match.group(1))
            if leads_to(table) and (best_table is None or len(table) > best_table[0]):
                best_table = (len(table), number)
        elif (match := _KEY.match(line)) and leads_to(table + _split_dotted(match.group(1))):
            return number
    return best_table[1] if best_table else None


def load_settings(
    path: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Overrides | None = None,
) -> Settings:
    """The settings in effect: the file, then the environment, then the command line. Raises ConfigFileError."""
    path = path or config_file()
    env = os.environ if env is None else env
    overrides = overrides or command_line()
    settings = parse_settings(read_file(path), path)
    return apply_overrides(settings, path, env, overrides)


def apply_overrides(settings: Settings, path: Path, env: Mapping[str, str], overrides: Overrides) -> Settings:
    """Layer the environment and the command line over the file's settings."""
    profiles = dict(settings.profiles)
    if env.get(ENV_BASE_URL) or env.get(ENV_TOKEN):
        base_url = env.get(ENV_BASE_URL) or DEFAULT_BASE_URL
        try:
            profiles[ENVIRONMENT] = Profile(name=ENVIRONMENT, base_url=base_url, token_env=ENV_TOKEN,
                                            kind="cloud" if normalize_base_url(base_url) == DEFAULT_BASE_URL
                                            else "remote")
        except (ValidationError, ClientConfigError) as error:
            raise ConfigFileError(f"{ENV_BASE_URL}: {_first_message(error)}") from None
    chosen, source = settings.profile, str(path)
    if ENVIRONMENT in profiles:
        chosen, source = ENVIRONMENT, f"{ENV_BASE_URL} / {ENV_TOKEN}"
    if env.get(ENV_PROFILE):
        chosen, source = env[ENV_PROFILE], ENV_PROFILE
    if overrides.profile:
        chosen, source = overrides.profile, "--profile"
    if chosen not in profiles:
        known = ", ".join(sorted(profiles))
        raise ConfigFileError(f"{source}: no profile named {chosen!r} (known: {known})")
    theme = overrides.theme or env.get(ENV_THEME) or settings.theme
    screenshot = settings.screenshot
    forced = parse_rendering(env.get(ENV_IMAGE_RENDERING))
    if forced is not None:
        screenshot = screenshot.model_copy(update={"rendering": forced})
    return settings.model_copy(update={"profiles": profiles, "profile": chosen, "theme": theme,
                                       "screenshot": screenshot})


def _first_message(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return error.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
    return str(error)


def load_app_settings() -> tuple[Settings, list[str]]:
    """The settings in effect for the app; a broken file gives the defaults and a line saying why."""
    try:
        return load_settings(), []
    except ConfigFileError as error:
        return defaults(), [f"{error}\nUsing the defaults until it is fixed."]


def defaults(env: Mapping[str, str] | None = None, overrides: Overrides | None = None) -> Settings:
    """The settings without any file: what the app falls back to when the file is broken."""
    env = os.environ if env is None else env
    overrides = overrides or command_line()
    try:
        return apply_overrides(Settings(), Path("(defaults)"), env, overrides)
    except ConfigFileError:
        return apply_overrides(Settings(), Path("(defaults)"), {}, Overrides())


_THEME_LINE = re.compile(r"^[ \t]*theme[ \t]*=.*$", re.MULTILINE)
_FIRST_TABLE = re.compile(r"^[ \t]*\[", re.MULTILINE)


def save_theme(path: Path, theme: str) -> None:
    """Set the top-level `theme = "..."` in the file, keeping every other line as the user wrote it."""
    line = f"theme = {_toml_string(theme)}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        write_private(path, line + "\n")
        return
    first_table = _FIRST_TABLE.search(text)
    split = first_table.start() if first_table else len(text)
    head, tail = text[:split], text[split:]
    if _THEME_LINE.search(head):
        head = _THEME_LINE.sub(lambda _: line, head, count=1)
    else:
        head = line + "\n" + head
    path.write_text(head + tail, encoding="utf-8")


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
