"""Paths and modes as the files pane's questions take them: typed for the instance, completed locally, shown."""

from __future__ import annotations

import asyncio
import os
import posixpath

from textual.suggester import Suggester


def dir_label(directory: str) -> str:
    """A directory as shown in questions: with one trailing slash (`/`, never `//`)."""
    return directory.rstrip("/") + "/"


def instance_path(typed: str, base: str) -> str:
    """A path typed for the instance: absolute as is, else from `base`; normalised."""
    return posixpath.normpath(posixpath.join(base, typed))


def is_inside(target: str, base: str) -> bool:
    """`target` is `base` or below it (`../../etc/x` typed in /work is not)."""
    return target == base or target.startswith(dir_label(base))


def parent_of(path: str) -> str:
    """The directory holding `path` on the instance (`/` for a top-level entry)."""
    return posixpath.dirname(path) or "/"


def mode_bits(mode: str) -> int | None:
    """Permission bits of an `ls -l` style mode ("-rwxr-xr-x", "drwxrwsr-t") or octal text ("755")."""
    text = mode.strip()
    if text and all(c in "01234567" for c in text):
        return int(text, 8) if int(text, 8) <= 0o7777 else None
    if len(text) != 10:
        return None
    bits = 0
    for index, (char, bit) in enumerate(zip(text[1:], (0o400, 0o200, 0o100, 0o40, 0o20, 0o10, 0o4, 0o2, 0o1),
                                            strict=True)):
        special = (0o4000, 0o2000, 0o1000)[index // 3] if index % 3 == 2 else 0
        if char in "rwx":
            bits |= bit
        elif char in "st":
            bits |= bit | special
        elif char in "ST":
            bits |= special
        elif char != "-":
            return None
    return bits


def complete_local_path(value: str) -> str | None:
    """`value` completed from the local filesystem (directories end with '/'), None when nothing fits."""
    if not value:
        return None
    expanded = os.path.expanduser(value)
    directory, prefix = os.path.split(expanded)
    try:
        names = sorted(n for n in os.listdir(directory or ".") if n.startswith(prefix))
    except OSError:
        return None
    if not prefix:
        names = [n for n in names if not n.startswith(".")]
    if not names:
        return None
    shared = os.path.commonprefix(names)  # noqa: RUF071 - names share characters, not path components
    if len(names) == 1 and os.path.isdir(os.path.join(directory or ".", shared)):
        shared += "/"
    if len(shared) <= len(prefix):
        return None
    return value + shared[len(prefix):]


class LocalPathSuggester(Suggester):
    """Completes a local path as a shell does: the rest of the only match, else what all matches share."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)

    async def get_suggestion(self, value: str) -> str | None:
        return await asyncio.to_thread(complete_local_path, value)
