"""The one place every scriptable command runs its async work: target, client, event loop, errors.

`run(work)` finds the service (the environment's `KERNEL_BASE_URL` / `KERNEL_API_KEY`, else the
embedded service, found or started detached so it outlives the command), runs `work(client)` on a
fresh event loop and exits with its status. Whatever goes wrong becomes one line on stderr and a
non-zero exit, never a traceback (set `BBROWSE_DEBUG=1` to see one for an unexpected failure).
"""

from __future__ import annotations

import asyncio
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import NoReturn

from bbrowse.client import (
    BrowserClient,
    ClientError,
    ConfigError,
    ConnectionLost,
    IncompleteStream,
    ProtocolError,
    RequestTimeout,
    ServiceError,
    close_shared_clients,
)
from bbrowse.commands.output import EXIT_FAILURE, print_error
from bbrowse.launcher import LaunchError
from bbrowse.target import resolve_target

#: Exit status after ctrl-c, as shells report a program ended by SIGINT.
EXIT_INTERRUPTED = 130
#: Exit status when stdout's reader went away (`bbrowse cat ... | head`), as for SIGPIPE.
EXIT_BROKEN_PIPE = 141

Work = Callable[[BrowserClient], Awaitable[int | None]]


class CommandError(Exception):
    """A failure the command itself detects (no recording running, a file it cannot write...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def run(work: Work) -> NoReturn:
    """Run `work` against the service in use and exit with the status it returns (0 for None)."""
    sys.exit(exit_status(guarded(lambda: asyncio.run(_with_client(work)))))


def exit_status(code: int) -> int:
    """A status the OS can carry: 0..255 as is, anything else (a -1 from the service) is a plain failure."""
    return code if 0 <= code <= 255 else EXIT_FAILURE


async def _with_client(work: Work) -> int | None:
    target = resolve_target(detached=True)
    client = BrowserClient(config=target.config)
    try:
        return await work(client)
    finally:
        await close_shared_clients()


def guarded(action: Callable[[], int | None]) -> int:
    """Call `action`; its status, or the status for the failure after printing it as one line."""
    try:
        return action() or 0
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except ServiceError as exc:
        print_error(exc.code, _service_message(exc), exc.status)
    except CommandError as exc:
        print_error(exc.code, exc.message)
    except ClientError as exc:
        print_error(client_error_code(exc), str(exc))
    except LaunchError as exc:
        print_error("service_unavailable", str(exc))
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print_error("local_io", f"{where}{exc.strerror or exc}")
    except Exception as exc:  # a bug: still one line, with a way to see the traceback
        if os.environ.get("BBROWSE_DEBUG"):
            traceback.print_exc()
        print_error("internal", f"{type(exc).__name__}: {exc} (set BBROWSE_DEBUG=1 for the traceback)")
    return EXIT_FAILURE


def _service_message(exc: ServiceError) -> str:
    notes = [note for d in exc.details if (note := d.message or d.code)]
    return exc.message + (" [" + "; ".join(notes) + "]" if notes else "")


def client_error_code(exc: ClientError) -> str:
    """A stable code for failures where the service gave none."""
    if isinstance(exc, ConfigError):
        return "config"
    if isinstance(exc, RequestTimeout):
        return "timeout"
    if isinstance(exc, ConnectionLost):
        return "connection_failed"
    if isinstance(exc, IncompleteStream):
        return "incomplete_stream"
    if isinstance(exc, ProtocolError):
        return "protocol_error"
    return "client_error"


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
