"""The discovery file (`serve.json`): how a running `bbrowse serve` tells the app and the CLI where it is.

Written by the service (0600: url, pid, token, its state directory and retention limits), read by
the launcher and `bbrowse info`. It carries a format `version` so that a bbrowse of another release
never misreads it: a file of a version this one does not know is treated as absent (the launcher
starts its own service, which writes its own file) and said so in one line, never a crash. A file
without `version` is the first format, from before versions were written.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from bbrowse.limits import RetentionLimits
from bbrowse.paths import write_private

#: The format this bbrowse writes, and the ones it reads.
DISCOVERY_VERSION = 1
READABLE_VERSIONS = (1,)

log = logging.getLogger("bbrowse.discovery")


class UnknownVersionError(ValueError):
    """A record written in a format this bbrowse does not read (a newer or an unrelated program's)."""


def record_version(record: dict, what: str) -> int:
    """The record's format version (1 when absent); `UnknownVersionError` with a one-line reason otherwise."""
    version = record.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version not in READABLE_VERSIONS:
        raise UnknownVersionError(
            f"{what} has format version {version!r}, which this bbrowse does not read "
            f"(it reads {', '.join(map(str, READABLE_VERSIONS))})"
        )
    return version


def write_discovery(path: Path, *, url: str, pid: int, token: str, state_dir: Path,
                    retention: RetentionLimits, sandbox: str | None = None) -> None:
    record = {
        "version": DISCOVERY_VERSION, "url": url, "pid": pid, "token": token,
        "state_dir": str(state_dir), "retention": retention.to_json(),
    }
    if sandbox is not None:  # whether sessions are sandboxed, for `bbrowse info`
        record["sandbox"] = sandbox
    write_private(path, json.dumps(record))


def read_discovery(path: Path) -> dict | None:
    """The record, or None when there is none, it is damaged, or it is of an unknown version (logged)."""
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not {"url", "token", "pid"} <= info.keys():
        return None
    try:
        record_version(info, str(path))
    except UnknownVersionError as exc:
        log.warning("%s; ignored", exc)
        return None
    return info


def unknown_version_note(path: Path) -> str | None:
    """One line for the service log when the file a service is about to replace is of an unknown version."""
    try:
        info = json.loads(path.read_text())
        if isinstance(info, dict):
            record_version(info, str(path))
    except (OSError, ValueError) as exc:
        if isinstance(exc, UnknownVersionError):
            return f"{exc}; replaced by this service's (pid {os.getpid()})"
    return None
