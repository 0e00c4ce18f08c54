"""`bbrowse put`, `rm-file`, `mkdir`, `mv`, `chmod`, `zip`: change the files of a session's machine.

Transfers stream both ways (a large upload or zip never sits in memory) with a progress bar on stderr
when it is a terminal. Paths on the instance are absolute. `rm-file` is named so to stay clear of
`bbrowse rm`, which deletes sessions.
"""

from __future__ import annotations

import posixpath
import sys
from pathlib import Path

import click

from bbrowse.client import BrowserClient, ServiceError
from bbrowse.commands import progress
from bbrowse.commands.output import EXIT_FAILURE, print_error, write_all
from bbrowse.commands.runner import run
from bbrowse.transfer import pour, save_stream
from bbrowse.uploads import destination, plan, upload


@click.command("put")
@click.argument("session", metavar="ID")
@click.argument("local", metavar="LOCAL", type=click.Path(exists=True, readable=True, path_type=Path))
@click.argument("remote", metavar="REMOTE")
def put_command(session: str, local: Path, remote: str) -> None:
    """Upload a local file or directory to the session's machine.

    REMOTE is the new path; when it is an existing directory or ends with '/', LOCAL goes inside it
    (as cp does). Parent directories are made; an existing file is replaced. Executable bits are kept.
    The path written is printed.

    \b
    Examples:
      bbrowse put ID report.pdf /tmp/report.pdf
      bbrowse put ID ./extension /home/kernel/           # -> /home/kernel/extension
      bbrowse put ID build/ /srv/site                    # the directory's content as /srv/site
    """
    try:
        what = plan(local)
    except OSError as exc:
        raise click.BadParameter(exc.strerror or str(exc), param_hint="LOCAL") from None

    async def work(client: BrowserClient) -> None:
        target = await destination(client.fs, session, what.name, remote)
        description = f"{what.describe()} → {target}"
        with progress.transfer(description, what.size, show=progress.wanted()) as moved:
            await upload(client.fs, session, what, target, progress=moved)
        click.echo(target)

    run(work)


@click.command("rm-file")
@click.argument("session", metavar="ID")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("-r", "--recursive", is_flag=True, help="Delete directories too, with everything in them.")
def rm_file_command(session: str, paths: tuple[str, ...], recursive: bool) -> None:
    """Delete files on the session's machine (directories only with -r).

    Each deleted path is printed; one that cannot be deleted gets an error line, the others are still
    deleted, and the exit status is 1.

    \b
    Examples:
      bbrowse rm-file ID /tmp/report.pdf
      bbrowse rm-file ID /tmp/a.log /tmp/b.log
      bbrowse rm-file ID -r /tmp/build                   # a directory and its content
    """
    async def work(client: BrowserClient) -> int:
        status = 0
        for path in paths:
            try:
                if recursive and (await client.fs.file_info(session, path)).is_dir:
                    await client.fs.delete_directory(session, path)
                else:
                    await client.fs.delete_file(session, path)
            except ServiceError as exc:
                message = f"{path}: {exc.message}"
                if exc.status == 400 and not recursive and "is a directory" in exc.message:
                    message = f"{path} is a directory; add -r to delete it with everything in it"
                print_error(exc.code, message, exc.status)
                status = EXIT_FAILURE
                continue
            sys.stdout.write(path + "\n")
            sys.stdout.flush()
        return status

    run(work)


class ModeType(click.ParamType):
    """An octal permission mode: 755, 0644."""

    name = "MODE"

    def convert(self, value, param, ctx) -> str:
        text = str(value).strip()
        if not text or any(c not in "01234567" for c in text) or int(text, 8) > 0o7777:
            self.fail(f"{value!r} is not an octal mode such as 755 or 0644", param, ctx)
        return text


@click.command("mkdir")
@click.argument("session", metavar="ID")
@click.argument("path")
@click.option("-m", "--mode", type=ModeType(), default=None, help="Octal mode of the new directories (default 755).")
def mkdir_command(session: str, path: str, mode: str | None) -> None:
    """Make a directory on the session's machine, with its parents (as mkdir -p).

    \b
    Examples:
      bbrowse mkdir ID /tmp/job/inputs
      bbrowse mkdir ID /tmp/private --mode 700
    """

    async def work(client: BrowserClient) -> None:
        await client.fs.create_directory(session, path, mode=mode)

    run(work)


@click.command("mv")
@click.argument("session", metavar="ID")
@click.argument("src")
@click.argument("dst")
@click.option("-f", "--force", is_flag=True, help="Replace DST when it exists.")
def mv_command(session: str, src: str, dst: str, force: bool) -> None:
    """Rename or move a file or directory on the session's machine.

    DST is the new path; an existing DST is an error (409) unless --force.

    \b
    Examples:
      bbrowse mv ID /tmp/report.pdf /tmp/report-old.pdf
      bbrowse mv ID /tmp/build /srv/site --force
    """

    async def work(client: BrowserClient) -> None:
        await client.fs.move(session, src, dst, overwrite=force)

    run(work)


@click.command("chmod")
@click.argument("session", metavar="ID")
@click.argument("mode", type=ModeType())
@click.argument("path")
def chmod_command(session: str, mode: str, path: str) -> None:
    """Change the permission mode of a file or directory on the session's machine.

    \b
    Examples:
      bbrowse chmod ID 755 /tmp/run.sh
      bbrowse chmod ID 600 /tmp/secret.txt
    """

    async def work(client: BrowserClient) -> None:
        await client.fs.set_file_permissions(session, path, mode)

    run(work)


def default_zip_name(directory: str) -> str:
    return (posixpath.basename(directory.rstrip("/")) or "root") + ".zip"


def local_zip_target(output: str | None, directory: str) -> Path:
    """The local file `zip` writes: `output` (into it when it is a directory), else DIR's name + .zip here."""
    target = Path(output or default_zip_name(directory)).expanduser()
    if target.is_dir():
        target = target / default_zip_name(directory)
    if not target.parent.is_dir():
        raise click.BadParameter(f"{target.parent}: no such directory", param_hint="'-o'")
    return target


@click.command("zip")
@click.argument("session", metavar="ID")
@click.argument("directory", metavar="DIR")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="Where to save the zip ('-' for stdout). Default: DIR's name + .zip, here.")
def zip_command(session: str, directory: str, output: str | None) -> None:
    """Download a directory of the session's machine as a zip archive.

    The file is written whole or not at all; its path is printed.

    \b
    Examples:
      bbrowse zip ID /tmp/downloads                      # ./downloads.zip
      bbrowse zip ID /tmp/downloads -o ~/dl.zip
      bbrowse zip ID /srv/site -o - | bsdtar -tf -       # the archive on stdout
    """

    target = None if output == "-" else local_zip_target(output, directory)

    async def work(client: BrowserClient) -> None:
        if target is None:
            out = sys.stdout.fileno()
            with progress.transfer(directory, None, show=progress.wanted(stdout_too=True)) as moved:
                await pour(client.fs.download_dir_zip(session, directory), lambda chunk: write_all(out, chunk), moved)
            return
        with progress.transfer(f"{directory} → {target.name}", None, show=progress.wanted()) as moved:
            await save_stream(client.fs.download_dir_zip(session, directory, chunk_size=None), target, moved,
                              replace=True)
        click.echo(str(target))

    run(work)
