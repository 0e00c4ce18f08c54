"""Command-line entry points: the app (default), `serve`, and the scriptable subcommands."""

from __future__ import annotations

import click

from bbrowse import __version__


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bbrowse")
@click.pass_context
def main(ctx: click.Context) -> None:
    """bbrowse: drive browser sessions from your terminal.

    With no command, starts the local service in the foreground (the app lands here next).
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(serve_command)


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind; loopback by default.")
@click.option("--port", default=7780, show_default=True, type=int, help="Port to bind; 0 picks a free one.")
@click.option("--token", default=None, envvar="BBROWSE_TOKEN", help="Bearer token; generated when not given.")
@click.option("--chromium", "chromium_path", default=None, envvar="BBROWSE_CHROMIUM",
              help="Chromium binary (default: chromium, chromium-browser or google-chrome on PATH).")
@click.option("--ssl-certfile", default=None, help="Serve HTTPS with this certificate.")
@click.option("--ssl-keyfile", default=None, help="Private key for --ssl-certfile.")
@click.option("-v", "--verbose", is_flag=True, help="Also print the service log to stderr.")
def serve_command(host, port, token, chromium_path, ssl_certfile, ssl_keyfile, verbose) -> None:
    """Serve the Browser Instance Control Service locally.

    \b
    Examples:
      bbrowse serve                      # 127.0.0.1:7780, new token printed once
      bbrowse serve --port 0             # any free port
      KERNEL_BASE_URL=http://127.0.0.1:7780 KERNEL_API_KEY=<token> python my_kernel_script.py
    """
    from bbrowse.service.server import serve

    serve(host=host, port=port, token=token, chromium_path=chromium_path,
          ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile, verbose=verbose,
          announce=lambda line: click.echo(line, err=line.startswith("warning")))
