"""`bbrowse cat` and `bbrowse ls`: read files and list directories of a session's machine.

`cat` streams: chunks go to stdout as they arrive (binary-safe, never the whole file in memory), with
a progress bar on stderr when stdout is redirected and stderr is a terminal.
"""

from __future__ import annotations

import sys

import click

from bbrowse.client import BrowserClient, is_symlink, parse_mode
from bbrowse.commands import progress
from bbrowse.commands.output import print_json, table, write_all
from bbrowse.commands.runner import run
from bbrowse.humanize import absolute_time, human_bytes
from bbrowse.transfer import pour
from bbrowse.wire import FileInfo


@click.command("cat")
@click.argument("session", metavar="ID")
@click.argument("path")
def cat_command(session: str, path: str) -> None:
    """Write a file of the session to stdout, byte for byte.

    \b
    Examples:
      bbrowse cat ID /etc/os-release
      bbrowse cat ID /tmp/download.pdf > download.pdf      # progress bar on a terminal
      bbrowse cat ID /var/log/app.log | grep ERROR
    """

    async def work(client: BrowserClient) -> None:
        show = progress.wanted(stdout_too=True)
        total = (await client.fs.file_info(session, path)).size_bytes if show else None
        out = sys.stdout.fileno()
        chunks = client.fs.read_file(session, path)
        async with chunks:
            with progress.transfer(path, total, show=show) as moved:
                await pour(chunks, lambda chunk: write_all(out, chunk), moved)

    run(work)


def long_rows(entries: list[FileInfo]) -> list[list[str]]:
    return [[shown_mode(e), human_bytes(e.size_bytes, compact=True) if not e.is_dir else "-",
             absolute_time(e.mod_time), display_name(e)] for e in entries]


def shown_mode(entry: FileInfo) -> str:
    """The mode as `ls -l` writes it, whichever form the service used (Kernel's VM: Go's `dtrwxrwxrwx`)."""
    mode = parse_mode(entry.mode)
    return mode.ls() if mode is not None else entry.mode


def display_name(entry: FileInfo) -> str:
    """`name/` for a directory, `name@` for a symbolic link (as `ls -F`), else the name."""
    if is_symlink(entry):
        return entry.name + "@"
    return entry.name + ("/" if entry.is_dir else "")


@click.command("ls")
@click.argument("session", metavar="ID")
@click.argument("path")
@click.option("-l", "long", is_flag=True, help="Long listing: mode, size, modification time, name.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of FileInfo objects.")
def ls_command(session: str, path: str, long: bool, as_json: bool) -> None:
    """List a directory of the session's machine (directories end with /, symbolic links with @).

    \b
    Examples:
      bbrowse ls ID /tmp
      bbrowse ls ID /tmp -l
      bbrowse ls ID /tmp --json | jq -r '.[] | select(.is_dir | not) | .path'
    """

    async def work(client: BrowserClient) -> None:
        entries = sorted(await client.fs.list_files(session, path), key=lambda e: e.name)
        if as_json:
            print_json(entries)
        elif long:
            if entries:
                click.echo(table(["MODE", "SIZE", "MODIFIED", "NAME"], long_rows(entries), show_header=False))
        else:
            for entry in entries:
                click.echo(display_name(entry))

    run(work)
