"""Command-line entry points: the app (default), `serve`, and the scriptable subcommands."""

from __future__ import annotations

import importlib
import os
import sys

import click

from bbrowse import __version__
from bbrowse.commands import COMMANDS
from bbrowse.limits import RetentionLimits, parse_duration, parse_size
from bbrowse.startup import pause_collection, skip_httpx_command_line

skip_httpx_command_line()


class CommandGroup(click.Group):
    """click's group, but a usage error is one line (`error: usage: ...`, exit 2) like every other failure,
    and the scriptable commands are imported only when named (`COMMANDS`): the app starts without them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, attribute = where.split(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except (click.ClickException, click.Abort) as exc:
            _exit_with(exc)
        sys.exit(result if isinstance(result, int) else 0)


def _exit_with(exc: click.ClickException | click.Abort) -> None:
    """Fail in one line, usage errors included (imported here: the app starts without the output helpers)."""
    from bbrowse.commands.output import EXIT_FAILURE, EXIT_USAGE, print_error

    if isinstance(exc, click.UsageError):
        message = exc.format_message().rstrip()
        if exc.ctx is not None:
            message += ("" if message.endswith(".") else ".") + f" See '{exc.ctx.command_path} --help'."
        print_error("usage", message)
        sys.exit(EXIT_USAGE)
    if isinstance(exc, click.ClickException):
        print_error("usage", exc.format_message())
        sys.exit(exc.exit_code)
    sys.exit(EXIT_FAILURE)


def _limit(parse, value: str):
    """A `serve` retention flag read with `parse`; a usage error naming the value when it does not read."""
    try:
        return parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.group(cls=CommandGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bbrowse")
@click.option("--profile", metavar="NAME", default=None,
              help="Connect as this profile from the config file (embedded, cloud, or your own); "
                   "overrides BBROWSE_PROFILE and KERNEL_BASE_URL / KERNEL_API_KEY.")
@click.option("--theme", metavar="NAME", default=None,
              help="The app's theme; overrides BBROWSE_THEME and the config file.")
@click.pass_context
def main(ctx: click.Context, profile: str | None, theme: str | None) -> None:
    """bbrowse: drive browser sessions from your terminal.

    With no command, opens the app: on the service named by KERNEL_BASE_URL / KERNEL_API_KEY, or
    on the embedded local service, started on a random port for the app's lifetime (or reused when
    one already runs). The other commands talk to the service named by KERNEL_BASE_URL / KERNEL_API_KEY, or else to
    the embedded local service, which they start in the background when it is not running
    (`bbrowse serve --stop` stops it).

    \b
    Examples:
      SID=$(bbrowse new)                  # a browser session
      bbrowse shell $SID                  # a terminal in it
      bbrowse screenshot $SID -o page.png
      bbrowse rm $SID
      bbrowse --profile work sessions     # a profile from ~/.config/bbrowse/config.toml
    """
    if ctx.invoked_subcommand == "serve" and profile is None and theme is None:
        return  # the service reads no profile nor theme: it starts without loading the configuration's models
    app = ctx.invoked_subcommand is None
    embedded = None
    if app:
        pause_collection()  # until the app runs (`bbrowse.startup`)
        if theme is None and names_no_service(profile):  # the embedded service starts first, before the settings load
            from bbrowse.launcher import find_or_start_soon

            embedded = find_or_start_soon()
        from bbrowse.tui import graphics_probe

        graphics_probe.start()  # the terminal answers while the app loads
    from bbrowse.config import Overrides, set_command_line

    if theme is not None:
        _check_theme(theme)
    set_command_line(Overrides(profile=profile, theme=theme))
    if app:
        from bbrowse.config import load_app_settings
        from bbrowse.target import resolve_soon

        settings, problems = load_app_settings()
        pending = resolve_soon(settings.active_profile, embedded)  # the service starts while the app's modules load
        from bbrowse.tui.app import run_app

        run_app(settings, problems, pending)


#: What names a service other than the embedded one, besides `--profile` and the file (`bbrowse.config` reads
#: them; `test_startup` holds the two to the same answer).
SERVICE_NAMING_ENV = ("BBROWSE_PROFILE", "KERNEL_BASE_URL", "KERNEL_API_KEY")


def names_no_service(profile: str | None) -> bool:
    """Whether the settings will pick the embedded service, known without loading them (they import pydantic and
    the client: 0.2 CPU-s): no `--profile`, none of `SERVICE_NAMING_ENV`, and a config file that is absent or
    names no profile and does not redefine `embedded`. False when unsure: the settings then decide."""
    import tomllib

    from bbrowse.paths import config_file

    if profile or any(os.environ.get(name) for name in SERVICE_NAMING_ENV):
        return False
    try:
        data = tomllib.loads(config_file().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return True
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    profiles = data.get("profiles", {})
    return "profile" not in data and isinstance(profiles, dict) and "embedded" not in profiles


def _check_theme(name: str) -> None:
    """`--theme` names a theme the app has (Textual's, the shipped ones, the user's), else a usage error listing
    them: a typo is said at once instead of the app quietly using its default."""
    from textual.theme import BUILTIN_THEMES

    from bbrowse.paths import user_themes_dir
    from bbrowse.tui.themes import load_themes, shipped_themes_dir

    known = {*BUILTIN_THEMES, *load_themes([shipped_themes_dir(), user_themes_dir()]).themes}
    if name not in known:
        raise click.BadParameter(f"no theme named {name!r} (known: {', '.join(sorted(known))})", param_hint="'--theme'")


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind; loopback by default.")
@click.option("--port", default=7780, show_default=True, type=int, help="Port to bind; 0 picks a free one.")
@click.option("--token", default=None, envvar="BBROWSE_TOKEN", help="Bearer token; generated when not given.")
@click.option("--chromium", "chromium_path", default=None, envvar="BBROWSE_CHROMIUM",
              help="Chromium binary (default: chromium, chromium-browser or google-chrome on PATH).")
@click.option("--ssl-certfile", default=None, help="Serve HTTPS with this certificate.")
@click.option("--ssl-keyfile", default=None, help="Private key for --ssl-certfile.")
@click.option("-v", "--verbose", is_flag=True, help="Also print the service log to stderr.")
@click.option("--kernel-compat", is_flag=True, envvar="BBROWSE_KERNEL_COMPAT",
              help="Behave as Kernel's cloud VM does (PTY output only over attach, stricter errors); see the README.")
@click.option("--keep-for", "keep_for", default="7d", show_default=True, envvar="BBROWSE_KEEP_FOR",
              callback=lambda ctx, param, value: _limit(parse_duration, value),
              help="Remove ended sessions' logs, records and replays this long after they end (e.g. 7d, 12h).")
@click.option("--max-state-size", default="2G", show_default=True, envvar="BBROWSE_MAX_STATE_SIZE",
              callback=lambda ctx, param, value: _limit(parse_size, value),
              help="Past this size, remove ended sessions' files early, oldest first (e.g. 2G, 500M).")
@click.option("--no-sandbox", "no_sandbox", is_flag=True, envvar="BBROWSE_NO_SANDBOX",
              help="Run sessions on the host as this user, not each in its own sandbox (see the README).")
@click.option("--stop", is_flag=True, help="Stop the running local service (e.g. the one commands started) and exit.")
def serve_command(host, port, token, chromium_path, ssl_certfile, ssl_keyfile, verbose, kernel_compat, keep_for,
                  max_state_size, no_sandbox, stop) -> None:
    """Serve the Browser Instance Control Service locally.

    \b
    Examples:
      bbrowse serve                      # 127.0.0.1:7780, new token printed once
      bbrowse serve --port 0             # any free port
      bbrowse serve --stop               # stop the background service commands started
      bbrowse serve --kernel-compat      # as strict as Kernel's cloud VM, to test clients against
      KERNEL_BASE_URL=http://127.0.0.1:7780 KERNEL_API_KEY=<token> python my_kernel_script.py
    """
    from bbrowse.launcher import local_service_unavailable

    unavailable = local_service_unavailable()
    if unavailable:
        click.echo(unavailable, err=True)
        sys.exit(2)
    if stop:
        from bbrowse.launcher import stop_running

        pid = stop_running()
        click.echo(f"stopped bbrowse serve (pid {pid})" if pid else "no bbrowse serve is running")
        return

    pause_collection()  # until the service listens (`bbrowse.startup`)
    from bbrowse.service.server import serve

    serve(host=host, port=port, token=token, chromium_path=chromium_path,
          ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile, verbose=verbose, kernel_compat=kernel_compat,
          retention=RetentionLimits(keep_seconds=keep_for, max_bytes=max_state_size), no_sandbox=no_sandbox,
          announce=lambda line: click.echo(line, err=line.startswith("warning")))

