"""`bbrowse info`: which service the commands talk to, whether it answers, and where bbrowse keeps things.

It only looks: an embedded service that is not running is reported as such, not started (the next
command that needs it starts it). The token is never printed.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import click

from bbrowse import __version__, launcher
from bbrowse.client import (
    DEFAULT_BASE_URL,
    NO_RETRY,
    BrowserClient,
    ClientConfig,
    ClientError,
    ServiceError,
    close_shared_clients,
)
from bbrowse.commands.output import print_json, table
from bbrowse.commands.runner import client_error_code, exit_status, guarded
from bbrowse.paths import config_dir, serve_file, state_dir
from bbrowse.target import remote_configured

#: How long `info` waits for the service to answer before calling it unreachable.
PROBE_TIMEOUT_SECONDS = 3.0


def embedded_log_files() -> tuple[Path, Path]:
    """(the embedded service's own log, the file its stdout/stderr go to when bbrowse starts it)."""
    root = state_dir()
    return root / "service" / "logs" / "bbrowse.log", root / "embedded-serve.log"


async def probe(config: ClientConfig) -> str:
    """`ok`, or the code of what went wrong (`unauthorized`, `connection_failed`...)."""
    quick = ClientConfig(base_url=config.base_url, token=config.token, connect_timeout=PROBE_TIMEOUT_SECONDS,
                         timeout=PROBE_TIMEOUT_SECONDS, retry=NO_RETRY)
    try:
        await BrowserClient(config=quick).sessions.page(limit=1)
    except ServiceError as exc:
        return exc.code
    except ClientError as exc:
        return client_error_code(exc)
    finally:
        await close_shared_clients()
    return "ok"


def gather() -> dict:
    service_log, launch_log = embedded_log_files()
    info: dict = {"version": __version__}
    if remote_configured():
        config = ClientConfig.resolve()
        info["service"] = {
            "kind": "cloud" if config.base_url == DEFAULT_BASE_URL else "remote",
            "url": config.base_url,
            "status": asyncio.run(probe(config)),
            "from": "environment (KERNEL_BASE_URL, KERNEL_API_KEY)",
        }
    else:
        running = launcher.find_running()
        info["service"] = {
            "kind": "embedded",
            "url": running.url if running else None,
            "status": "ok" if running else "not running (started by the next command that needs it)",
            "pid": running.pid if running else None,
        }
    info.update(
        config_dir=str(config_dir()),
        state_dir=str(state_dir()),
        discovery_file=str(serve_file()),
        log_file=str(service_log),
        launch_log=str(launch_log),
        env={name: os.environ.get(name) for name in ("KERNEL_BASE_URL", "BBROWSE_STATE_DIR", "BBROWSE_CONFIG_DIR")
             if os.environ.get(name)},
    )
    return info


def show(info: dict) -> None:
    service = info["service"]
    rows = [
        ["service", service["kind"] + (f" · {service['url']}" if service.get("url") else "")],
        ["status", service["status"] + (f" (pid {service['pid']})" if service.get("pid") else "")],
        ["config dir", info["config_dir"]],
        ["state dir", info["state_dir"]],
        ["discovery file", info["discovery_file"]],
        ["service log", info["log_file"]],
        ["launch log", info["launch_log"]],
        ["version", info["version"]],
    ]
    click.echo(table(["", ""], rows, show_header=False))


@click.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print the same facts as a JSON object.")
def info_command(as_json: bool) -> None:
    """Show the service in use (embedded, remote or cloud) and bbrowse's directories and logs.

    \b
    Examples:
      bbrowse info
      bbrowse info --json | jq -r .service.url
      KERNEL_BASE_URL=http://10.0.0.5:7780 KERNEL_API_KEY=... bbrowse info    # check a remote service
    """

    def action() -> None:
        info = gather()
        if as_json:
            print_json(info)
        else:
            show(info)

    raise SystemExit(exit_status(guarded(action)))
