"""Running `bbrowse serve`: token, logging, the discovery file and uvicorn.

The token is generated when not given, printed once, and written with the URL and pid to a 0600
discovery file (`serve.json` in the state dir) so the app can find and reuse a running service.
Logs go to `bbrowse.log` (the supervisor log named `bbrowse`); tokens are never logged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from bbrowse.discovery import unknown_version_note, write_discovery
from bbrowse.hosts import is_loopback
from bbrowse.limits import RetentionLimits
from bbrowse.paths import serve_file, state_dir
from bbrowse.service.cdp import reserve_devtools_fds
from bbrowse.service.config import ServiceConfig
from bbrowse.service.sandbox import no_sandbox_from_env
from bbrowse.service.sandbox import probe as probe_sandbox
from bbrowse.startup import resume_collection

if TYPE_CHECKING:
    import uvicorn

    from bbrowse.service.websocket_routes import WebSocketRegistry

DEFAULT_PORT = 7780
#: How long an idle keep-alive connection is kept open: longer than clients keep theirs (httpx and the SDKs built
#: on it 5 s, bbrowse's client 4 s), so the client closes first and a request never meets a connection the service
#: is closing at that moment ("Server disconnected without sending a response"; uvicorn's default is 5 s too).
KEEP_ALIVE_SECONDS = 30


#: Environment variable that shortens (or lengthens) the life of replay view links, in seconds.
REPLAY_LINK_ENV = "BBROWSE_REPLAY_LINK_SECONDS"


#: Environment variable that bounds the life of the session `jwt` handed out in Browser objects, in seconds.
VM_TOKEN_ENV = "BBROWSE_VM_TOKEN_SECONDS"


def _seconds_from_env(name: str, default: int) -> int:
    """`name` when set (a positive whole number of seconds), else `default`."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        seconds = int(raw)
    except ValueError:
        seconds = 0
    if seconds < 1:
        raise SystemExit(f"{name}={raw!r}: give a whole number of seconds, at least 1")
    return seconds


def replay_link_seconds() -> int:
    """`BBROWSE_REPLAY_LINK_SECONDS` when set (a positive whole number of seconds), else a day."""
    return _seconds_from_env(REPLAY_LINK_ENV, ServiceConfig.replay_link_seconds)


def vm_token_seconds() -> int:
    """`BBROWSE_VM_TOKEN_SECONDS` when set (a positive whole number of seconds), else a day."""
    return _seconds_from_env(VM_TOKEN_ENV, ServiceConfig.vm_token_seconds)


class _NoQueryStrings(logging.Filter):
    """uvicorn names WebSocket handshakes with their query string, which carries a session's `jwt`: cut it off."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(a.split("?", 1)[0] if isinstance(a, str) else a for a in record.args)
        return True


def setup_logging(log_file: Path, verbose: bool = False) -> None:
    log_file.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("bbrowse")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    if verbose:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(handler.formatter)
        root.addHandler(console)
    root.propagate = False
    for name in ("uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).addFilter(_NoQueryStrings())


def bind_socket(host: str, port: int) -> socket.socket:
    """Bound and listening before the app is even imported: `--port 0` yields a known port for the discovery
    file, and a client that connects while the service starts waits in the backlog instead of being refused
    and polling (uvicorn serves the same socket once started)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))  # not inheritable (Python's default): no child the service starts holds the port
    sock.listen(socket.SOMAXCONN)
    return sock


@contextlib.contextmanager
def without_pydantic_v1() -> Iterator[None]:
    """FastAPI imports `pydantic.v1` (~50 ms of CPU) when it builds a route, only to check that no parameter is
    one of its models; none is here, and with the import refused FastAPI takes its own no-v1 path (False). The
    refusal ends once the routes are built."""
    blocked = "pydantic.v1" not in sys.modules
    if blocked:
        sys.modules["pydantic.v1"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if blocked and sys.modules.get("pydantic.v1", 0) is None:
            del sys.modules["pydantic.v1"]


def serve(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    chromium_path: str | None = None,
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
    verbose: bool = False,
    kernel_compat: bool = False,
    retention: RetentionLimits | None = None,
    no_sandbox: bool = False,
    announce=print,
) -> None:
    reserve_devtools_fds()  # before anything is opened, see there
    root = state_dir()
    token = token or os.environ.get("BBROWSE_TOKEN")
    generated = token is None
    token = token or secrets.token_urlsafe(32)
    sock = bind_socket(host, port)
    bound_port = sock.getsockname()[1]
    scheme = "https" if ssl_certfile else "http"
    shown_host = f"[{host}]" if ":" in host else host
    url = f"{scheme}://{shown_host}:{bound_port}"
    config = ServiceConfig(
        token=token, state_dir=root / "service", host=host, port=bound_port,
        chromium_path=chromium_path, public_url=url, replay_link_seconds=replay_link_seconds(),
        kernel_compat=kernel_compat, retention=retention or RetentionLimits(), vm_token_seconds=vm_token_seconds(),
    )
    setup_logging(config.service_log, verbose)
    config.no_sandbox = no_sandbox or no_sandbox_from_env()
    with ThreadPoolExecutor(1, thread_name_prefix="sandbox-probe") as pool:  # its bwrap runs while the app imports
        probing = pool.submit(probe_sandbox, config.no_sandbox)
        with without_pydantic_v1():
            import uvicorn

            from bbrowse.service.app import create_app
        config.sandbox = probing.result()
    if not is_loopback(host) and not ssl_certfile:
        announce(
            f"warning: listening on {host} without TLS: the bearer token crosses the network in clear. "
            "Use --ssl-certfile/--ssl-keyfile or an SSH tunnel.",
        )
    discovery = serve_file()
    if note := unknown_version_note(discovery):
        logging.getLogger("bbrowse.service").warning("%s", note)
    write_discovery(discovery, url=url, pid=os.getpid(), token=token, state_dir=config.state_dir,
                    retention=config.retention, sandbox=config.sandbox.describe())
    announce(f"bbrowse serve listening on {url}" + (" (--kernel-compat: behaving as Kernel's VM)" if kernel_compat
                                                      else ""))
    # Said once: whether sessions are sandboxed, and if not, why (also in `bbrowse info` and the service log).
    announce(f"session sandbox: {config.sandbox.describe()}")
    logging.getLogger("bbrowse.sandbox").info("session sandbox: %s", config.sandbox.describe())
    if generated:
        # Printed once, only when made here: a token that was given is already known to its owner.
        announce(f"token: {token}")
    announce(f"(url and token in {discovery}, mode 0600)")
    sys.stdout.flush()
    with without_pydantic_v1():
        app = create_app(config, defer_routes=True)
    resume_collection()  # started: what start-up made stays for good (`bbrowse.startup`)
    uv_config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="on",
        ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile, timeout_graceful_shutdown=3,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    server = _going_away_server(uv_config, app.state.service.websockets) if kernel_compat else uvicorn.Server(uv_config)
    try:
        server.run(sockets=[sock])
    finally:
        try:
            current = json.loads(discovery.read_text())
            if current.get("pid") == os.getpid():
                discovery.unlink()
        except (OSError, ValueError):
            pass


def _going_away_server(config: uvicorn.Config, websockets: WebSocketRegistry) -> uvicorn.Server:
    """--kernel-compat: at a stop, attach and CDP sockets close with 1001 `browser shutting down` (Kernel's
    VM's shutdown) before uvicorn closes what is left with its own 1012 (made here: uvicorn loads late)."""
    import uvicorn

    class GoingAwayServer(uvicorn.Server):
        async def shutdown(self, sockets=None) -> None:
            await websockets.close_all()
            await super().shutdown(sockets)

    return GoingAwayServer(config)
