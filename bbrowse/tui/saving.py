"""Where the app saves files, and how it avoids overwriting one.

Saves go to the user's download directory (`platformdirs.user_downloads_dir()`: `XDG_DOWNLOAD_DIR`
from `user-dirs.dirs`, else `~/Downloads`), never the directory the app was started from, which is
often a git checkout. A taken name becomes `name (1).ext`, `name (2).ext`…; the final step links the
finished file into place, so even a file that appeared meanwhile is never replaced.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import platformdirs


def download_dir() -> Path:
    """The user's download directory (not created here: `resolve_target` creates it when saving)."""
    return Path(platformdirs.user_downloads_dir())


def numbered(path: Path, counter: int) -> Path:
    """`dir/name (counter).ext` (`archive.tar.gz` keeps its double suffix together)."""
    name = path.name
    suffixes = "".join(path.suffixes[-2:]) if name.endswith((".tar.gz", ".tar.bz2", ".tar.xz")) else path.suffix
    stem = name[: len(name) - len(suffixes)] if suffixes else name
    return path.with_name(f"{stem} ({counter}){suffixes}")


def unused_path(path: Path) -> Path:
    """`path`, or the first `name (N).ext` next to it that neither exists nor is being written (`.part`)."""
    candidate, counter = path, 0
    while candidate.exists() or candidate.with_name(candidate.name + ".part").exists():
        counter += 1
        candidate = numbered(path, counter)
    return candidate


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


def partial_path(target: Path) -> Path:
    """Where a save is written until it is complete (`name.ext.part`, next to the target)."""
    return target.with_name(target.name + ".part")


def commit(partial: Path, target: Path) -> Path:
    """Move a finished `partial` file to `target`, or to `target (N)` if that name got taken meanwhile.

    A hard link never replaces an existing file (unlike rename); where links are not possible
    (some file systems) the rename happens after a last check. Returns the final path.
    """
    candidate = target
    for _ in range(1000):
        try:
            os.link(partial, candidate)
        except FileExistsError:
            candidate = unused_path(target)
            continue
        except OSError:
            candidate = unused_path(candidate)
            partial.replace(candidate)
            return candidate
        with contextlib.suppress(OSError):
            partial.unlink()
        return candidate
    raise OSError(f"no free name next to {target}")
