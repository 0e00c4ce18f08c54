"""The supervised logs a session offers to `logs/stream?source=supervisor`, by name.

`bbrowse` is the service's own log (`config.service_log`: startup, sessions, and one access line
`METHOD path status time` per request), always offered. Every other name is a program the session
supervises (`chromium`, `recorder`, ...): whoever runs it writes `session.supervisor_log(name)`,
and the name is offered from the moment that file exists. Discovering names from the session's log
directory keeps this registry free of knowledge about the programs themselves. `SupervisorLog` is how
the service writes one: the program's own output, and its notes about the program, timestamped.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from bbrowse.service.errors import not_found
from bbrowse.service.sessions import Session

#: The supervisor name of the service's own log.
SERVICE_LOG_NAME = "bbrowse"

_LOG_SUFFIX = ".log"


def supervisor_names(session: Session) -> list[str]:
    """Names offered for this session: `bbrowse` first, then the session's programs with a log, by name."""
    programs: set[str] = set()
    try:
        for entry in session.logdir.iterdir():
            name = entry.name.removesuffix(_LOG_SUFFIX)
            if entry.name.endswith(_LOG_SUFFIX) and name and not name.startswith(".") and entry.is_file():
                programs.add(name)
    except OSError:
        pass  # no log directory (yet): only the service's own log
    programs.discard(SERVICE_LOG_NAME)
    return [SERVICE_LOG_NAME, *sorted(programs)]


def supervisor_log_path(session: Session, service_log: Path, name: str) -> Path:
    """The log file of supervised program `name`; 404 (naming the offered ones) when there is none."""
    if name == SERVICE_LOG_NAME:
        if not service_log.exists():
            # The service always has a log; it may just not have written its first line yet.
            with contextlib.suppress(OSError):
                service_log.parent.mkdir(parents=True, exist_ok=True)
                service_log.touch()
        return service_log
    offered = supervisor_names(session)
    if name not in offered:
        raise not_found(f"no supervised program named {name!r} in this session (available: {', '.join(offered)})")
    return session.supervisor_log(name)


class SupervisorLog:
    """A supervised log being written (`chromium`, `recorder`): the program's own lines and the service's notes."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[bytes] = open(path, "ab", buffering=0)

    def note(self, text: str) -> None:
        self.write(f"{_stamp()} bbrowse: {text}\n".encode())

    def write(self, data: bytes) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._file.write(data)

    def close(self) -> None:
        self._file.close()


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
