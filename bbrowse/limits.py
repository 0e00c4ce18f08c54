"""How much the local service may keep in its state directory: retention limits, and how they are written.

Shared by `bbrowse serve` (its flags, its config, the retention it runs), the discovery file (which
carries the limits a running service uses) and `bbrowse info` (which shows them), so the app side
never imports the service to know them. Durations read like `7d`, `12h`, `30m`, `90s`; sizes like
`2G`, `500M`, `64K` or a plain number of bytes (binary units: 1G = 1024³ bytes).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from bbrowse.humanize import human_bytes

#: What is kept when nothing says otherwise: a week, and 2 GiB.
DEFAULT_KEEP_SECONDS = 7 * 24 * 3600.0
DEFAULT_MAX_BYTES = 2 * 1024**3

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class RetentionLimits:
    """Files of ended sessions older than `keep_seconds` go, then the oldest while over `max_bytes`."""

    keep_seconds: float = DEFAULT_KEEP_SECONDS
    max_bytes: int = DEFAULT_MAX_BYTES

    def to_json(self) -> dict:
        return {"keep_seconds": self.keep_seconds, "max_bytes": self.max_bytes}

    @classmethod
    def from_json(cls, data: object) -> RetentionLimits | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(float(data["keep_seconds"]), int(data["max_bytes"]))
        except (KeyError, TypeError, ValueError):
            return None

    def describe(self) -> str:
        return f"ended sessions kept {format_duration(self.keep_seconds)}, at most {human_bytes(self.max_bytes)}"


def parse_duration(text: str) -> float:
    """`7d` -> 604800.0; a bare number is seconds. ValueError naming the text when it is not a duration."""
    match = _DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a duration (e.g. 7d, 12h, 30m, 90s)")
    return float(match.group(1)) * _DURATION_UNITS[(match.group(2) or "s").lower()]


def parse_size(text: str) -> int:
    """`2G` -> 2147483648; a bare number is bytes. ValueError naming the text when it is not a size."""
    match = _SIZE.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a size (e.g. 2G, 500M, 64K)")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()])


def format_duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def tree_size(root: Path) -> int:
    """Bytes of the regular files under `root` (symlinks not followed); 0 when it does not exist."""
    total = 0
    stack = [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue  # vanished while we looked
        except OSError:
            continue
    return total
