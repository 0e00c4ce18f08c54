"""`bbrowse info`: which profile and service the commands talk to, whether it answers, and every path;
the shell pane's terminal core, and what `bbrowse serve` needs that this machine lacks, with how to get it.

It only looks: an embedded service that is not running is reported as such, not started (the next
command that needs it starts it). The token is never printed. It also shows how much the local state
directory holds and the retention limits bounding it: those the running local service reports in its
discovery file, else those it would start with (`BBROWSE_KEEP_FOR`, `BBROWSE_MAX_STATE_SIZE`, defaults).
A broken config file (or an unknown `--profile`) is reported on its own line, with the paths still shown,
since `info` is where a user goes to find the file, and the exit status is 1.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import click

from bbrowse import __version__, launcher
from bbrowse.client import (
    NO_RETRY,
    BrowserClient,
    ClientConfig,
    ClientError,
    ServiceError,
    close_shared_clients,
)
from bbrowse.commands.output import EXIT_FAILURE, print_error, print_json, table
from bbrowse.commands.runner import client_error_code, exit_status, guarded
from bbrowse.config import ENVIRONMENT, ConfigFileError, Settings, defaults, load_settings
from bbrowse.humanize import human_bytes
from bbrowse.limits import RetentionLimits, parse_duration, parse_size, tree_size
from bbrowse.paths import config_dir, config_file, serve_file, state_dir, user_themes_dir

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


def retention_limits() -> RetentionLimits:
    """The running local service's limits, else what `bbrowse serve` would start with here."""
    running = launcher.read_discovery()
    limits = RetentionLimits.from_json(running.get("retention")) if running else None
    if limits is not None:
        return limits
    limits = RetentionLimits()
    try:
        keep = parse_duration(os.environ["BBROWSE_KEEP_FOR"]) if "BBROWSE_KEEP_FOR" in os.environ else None
        size = parse_size(os.environ["BBROWSE_MAX_STATE_SIZE"]) if "BBROWSE_MAX_STATE_SIZE" in os.environ else None
    except ValueError:
        return limits
    return RetentionLimits(keep or limits.keep_seconds, size or limits.max_bytes)


# What `bbrowse serve` runs, by the commands it looks for: (name, commands, why, Debian/Ubuntu package, Fedora package)
SERVICE_PROGRAMS = [
    ("chromium", ("chromium", "chromium-browser", "google-chrome"), "the browsers", "chromium", "chromium"),
    ("ffmpeg", ("ffmpeg",), "replays (screen recordings)", "ffmpeg", "ffmpeg-free"),
    ("Xvfb", ("Xvfb",), "headful sessions (a virtual display)", "xvfb", "xorg-x11-server-Xvfb"),
    ("xdotool", ("xdotool",), "computer controls (mouse, keys) on headful sessions", "xdotool", "xdotool"),
    ("xclip", ("xclip",), "the clipboard of headful sessions", "xclip", "xclip"),
    ("bwrap", ("bwrap",), "a sandbox per session (else sessions run on the host)", "bubblewrap", "bubblewrap"),
]


def terminal_core() -> dict:
    """Which terminal core the shell pane runs on here, and why."""
    from bbrowse.tui.terminal.core import core_class, core_status

    name, why = core_status()
    return {"name": name, "label": core_class(name).label, "why": why}


def doctor() -> list[dict]:
    """What is missing on this machine for `bbrowse serve`, and how to get it (empty: nothing)."""
    unavailable = launcher.local_service_unavailable()
    if unavailable:
        return [{"what": "bbrowse serve", "why": "the local service needs Linux",
                 "how": "use Kernel's cloud (KERNEL_API_KEY) or a profile for a bbrowse serve on Linux"}]
    missing = []
    for name, commands, why, debian, fedora in SERVICE_PROGRAMS:
        if not any(shutil.which(command) for command in commands):
            missing.append({"what": name, "why": why,
                            "how": f"sudo apt-get install {debian}  (Fedora: sudo dnf install {fedora})"})
    return missing


def gather() -> dict:
    service_log, launch_log = embedded_log_files()
    info: dict = {"version": __version__}
    try:
        settings = load_settings()
        config_problem = None
    except ConfigFileError as error:
        settings, config_problem = defaults(), str(error)
    info["profile"] = settings.profile
    info["theme"] = settings.theme
    info["service"] = _service(settings)
    info.update(
        config_file=str(config_file()),
        config_dir=str(config_dir()),
        themes_dir=str(user_themes_dir()),
        state_dir=str(state_dir()),
        state_size_bytes=tree_size(state_dir()),
        retention=retention_limits().to_json(),
        discovery_file=str(serve_file()),
        log_file=str(service_log),
        launch_log=str(launch_log),
        env={name: os.environ.get(name) for name in ("KERNEL_BASE_URL", "BBROWSE_STATE_DIR", "BBROWSE_CONFIG_DIR",
                                                     "BBROWSE_PROFILE", "BBROWSE_THEME")
             if os.environ.get(name)},
    )
    info["terminal_core"] = terminal_core()
    info["platform"] = f"{sys.platform} {os.uname().machine}, Python {sys.version.split()[0]}"
    info["missing"] = doctor()
    if config_problem:
        info["config_error"] = config_problem
    return info


def _service(settings: Settings) -> dict:
    profile = settings.active_profile
    if profile.kind == "embedded":
        running = launcher.find_running()
        return {
            "kind": "embedded",
            "url": running.url if running else None,
            "status": "ok" if running else "not running (started by the next command that needs it)",
            "pid": running.pid if running else None,
            # Whether its sessions are sandboxed (and if not, why), as it said at start.
            "sandbox": (launcher.read_discovery() or {}).get("sandbox") if running else None,
        }
    where = ("environment (KERNEL_BASE_URL, KERNEL_API_KEY)" if profile.name == ENVIRONMENT
             else f"profile {profile.name}")
    try:
        config = profile.client_config()
    except ClientError as error:
        return {"kind": profile.kind, "url": profile.base_url, "status": f"config: {error}", "from": where}
    return {"kind": profile.kind, "url": config.base_url, "status": asyncio.run(probe(config)), "from": where}


def show(info: dict) -> None:
    service = info["service"]
    rows = [
        ["profile", info["profile"]],
        ["service", service["kind"] + (f" · {service['url']}" if service.get("url") else "")],
        ["status", service["status"] + (f" (pid {service['pid']})" if service.get("pid") else "")],
        *([["sandbox", service["sandbox"]]] if service.get("sandbox") else []),
        ["theme", info["theme"]],
        ["config file", info["config_file"] + ("" if Path(info["config_file"]).exists() else " (none yet)")],
    ]
    if info.get("config_error"):
        rows.append(["config error", info["config_error"]])
    rows += [
        ["config dir", info["config_dir"]],
        ["themes dir", info["themes_dir"]],
        ["state dir", info["state_dir"]],
        ["state size", f"{human_bytes(info['state_size_bytes'])} "
                       f"({(RetentionLimits.from_json(info['retention']) or RetentionLimits()).describe()})"],
        ["discovery file", info["discovery_file"]],
        ["service log", info["log_file"]],
        ["launch log", info["launch_log"]],
        ["version", info["version"]],
        ["platform", info["platform"]],
        ["terminal core", f"{info['terminal_core']['label']} ({info['terminal_core']['why']})"],
    ]
    if info["missing"]:
        rows += [[f"missing: {item['what']}", f"{item['why']}: {item['how']}"] for item in info["missing"]]
    else:
        rows.append(["service needs", "all found (" + ", ".join(name for name, *_ in SERVICE_PROGRAMS) + ")"])
    click.echo(table(["", ""], rows, show_header=False))


@click.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print the same facts as a JSON object.")
def info_command(as_json: bool) -> None:
    """Show the profile and service in use (embedded, remote or cloud), the config file and every path.

    \b
    Examples:
      bbrowse info
      bbrowse info --json | jq -r .config_file
      bbrowse --profile work info                                             # check a profile
      KERNEL_BASE_URL=http://10.0.0.5:7780 KERNEL_API_KEY=... bbrowse info    # check a remote service
    """

    def action() -> int:
        info = gather()
        if as_json:
            print_json(info)
        else:
            show(info)
        if info.get("config_error"):  # shown above with every path, and the exit status says it too
            print_error("config", info["config_error"])
            return EXIT_FAILURE
        return 0

    raise SystemExit(exit_status(guarded(action)))
