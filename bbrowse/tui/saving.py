"""Where the app saves files, and how it avoids overwriting one.

Saves go to the user's download directory (`platformdirs.user_downloads_dir()`: `XDG_DOWNLOAD_DIR`
from `user-dirs.dirs`, else `~/Downloads`), never the directory the app was started from, which is
often a git checkout. A taken name becomes `name (1).ext`, `name (2).ext`…; writing the file is
`bbrowse.transfer`'s, which never replaces one that appeared meanwhile either.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from bbrowse.transfer import unused_path


def download_dir() -> Path:
    """The user's download directory (not created here: `resolve_target` creates it when saving)."""
    return Path(platformdirs.user_downloads_dir())


def free_name(directory: Path, name: str) -> Path:
    """`directory/name`, or `name (1)`, `name (2)`… when taken."""
    return unused_path(directory / name)


def resolve_target(typed: str, default_name: str, base: Path | None = None) -> Path:
    """Turn what the user typed in the save dialog into a path that is free to write.

    `~` is expanded; a relative path is taken from the download directory (`base`), not the working
    directory; a directory (existing, or typed with a trailing `/`) gets `default_name`; missing
    parent directories are created. Raises OSError (e.g. a parent that is a file) or ValueError
    (nothing typed).
    """
    text = typed.strip()
    if not text:
        raise ValueError("type where to save the file")
    base = base or download_dir()
    path = Path(os.path.expanduser(text))
    if not path.is_absolute():
        path = base / path
    if text.endswith(("/", os.sep)) or path.is_dir():
        path = path / default_name
    path.parent.mkdir(parents=True, exist_ok=True)
    return unused_path(path)
