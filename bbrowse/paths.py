"""Where bbrowse keeps things, by XDG rules (platformdirs), overridable for tests and sandboxes.

`BBROWSE_STATE_DIR` and `BBROWSE_CONFIG_DIR` win over the platform defaults so a test run never
touches the user's real state.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "bbrowse"


def state_dir() -> Path:
    override = os.environ.get("BBROWSE_STATE_DIR")
    return Path(override) if override else Path(platformdirs.user_state_dir(APP_NAME))


def config_dir() -> Path:
    override = os.environ.get("BBROWSE_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP_NAME))


def config_file() -> Path:
    """The user's settings (`config.toml`): theme, profiles, keys; see docs/configuration.md."""
    return config_dir() / "config.toml"


def user_themes_dir() -> Path:
    """Where users drop their own `*.toml` themes, next to the config file."""
    return config_dir() / "themes"


def serve_file() -> Path:
    """The 0600 discovery file a running `bbrowse serve` writes: url, pid and token."""
    return state_dir() / "serve.json"


def write_private(path: Path, text: str) -> None:
    """Write a file readable by its owner only, created 0600 from the start (never world-readable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)
