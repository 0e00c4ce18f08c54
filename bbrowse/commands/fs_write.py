"""`bbrowse put`, `rm-file`, `mkdir`, `mv`, `chmod`, `zip`: change the files of a session's machine.

Transfers stream both ways (a large upload or zip never sits in memory) with a progress bar on stderr
when it is a terminal. Paths on the instance are absolute. `rm-file` is named so to stay clear of
`bbrowse rm`, which deletes sessions.
"""

from __future__ import annotations

import os
import posixpath
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

import click

from bbrowse.client import BrowserClient, NotFound, ServiceError
from bbrowse.commands import progress
from bbrowse.commands.output import EXIT_FAILURE, human_bytes, print_error, write_all
from bbrowse.commands.runner import run

EXECUTABLE_BITS = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH


@dataclass
class LocalTree:
    """What `put` sends for a local directory: its files (with their path under it) and its directories."""

    files: list[tuple[Path, str]] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    #: Files with an executable bit, and their permission bits, to set after the upload.
    executables: list[tuple[str, int]] = field(default_factory=list)
    size: int = 0


def scan(root: Path) -> LocalTree:
    """Walk `root` (symlinks to files are sent as their content; symlinked directories are not entered)."""
    tree = LocalTree()
    for directory, subdirs, names in os.walk(root):
        subdirs.sort()
        relative_dir = Path(directory).relative_to(root).as_posix()
        tree.directories.append("" if relative_dir == "." else relative_dir)
        for name in sorted(names):
            path = Path(directory) / name
            try:
                info = path.stat()
            except OSError:
                continue  # a dangling link
            if not stat.S_ISREG(info.st_mode):
                continue
            relative = (path.relative_to(root)).as_posix()
            tree.files.append((path, relative))
            tree.size += info.st_size
            if info.st_mode & EXECUTABLE_BITS:
                tree.executables.append((relative, stat.S_IMODE(info.st_mode)))
    return tree


async def destination(client: BrowserClient, session: str, name: str, remote: str) -> str:
    """Where `name` lands: `remote` itself, or inside it when it ends with '/' or is a directory (as `cp`)."""
    if remote.endswith("/"):
        return posixpath.join(remote, name)
    try:
        info = await client.fs.file_info(session, remote)
    except NotFound:
        return remote
    return posixpath.join(remote, name) if info.is_dir else remote


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

    name = local.resolve().name
    tree = scan(local) if local.is_dir() else None
    info = local.stat()

    async def work(client: BrowserClient) -> None:
        target = await destination(client, session, name, remote)
        if tree is not None:
            await put_directory(client, session, tree, name, target)
        else:
            await put_file(client, session, local, info, target)
        click.echo(target)

    run(work)


async def put_file(client: BrowserClient, session: str, local: Path, info: os.stat_result, target: str) -> None:
    mode = format(stat.S_IMODE(info.st_mode), "o")
    with progress.transfer(f"{local.name} → {target}", info.st_size, show=progress.wanted()) as advance:
        await client.fs.write_file(session, target, local, mode=mode, progress=Sent(advance))


async def put_directory(client: BrowserClient, session: str, tree: LocalTree, name: str, target: str) -> None:
    await client.fs.create_directory(session, target)
    if tree.files:
        description = f"{name}/ ({len(tree.files)} files, {human_bytes(tree.size)}) → {target}"
        with progress.transfer(description, tree.size, show=progress.wanted()) as advance:
            files = [(path, posixpath.join(target, relative)) for path, relative in tree.files]
            await client.fs.upload(session, files, progress=Sent(advance))
    for relative in tree.directories:
        if relative:  # empty ones too: the upload only makes the parents of files
            await client.fs.create_directory(session, posixpath.join(target, relative))
    for relative, mode in tree.executables:
        await client.fs.set_file_permissions(session, posixpath.join(target, relative), format(mode, "o"))


class Sent:
    """The client's `progress(done_so_far)` turned into the bar's `advance(n)`."""

    def __init__(self, advance: progress.Advance) -> None:
        self.advance = advance
        self.done = 0

    def __call__(self, done: int) -> None:
        self.advance(done - self.done)
        self.done = done


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
      bbrowse mkdir ID /tmp/work/inputs
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
            async with client.fs.download_dir_zip(session, directory) as chunks:
                with progress.transfer(directory, None, show=progress.wanted(stdout_too=True)) as advance:
                    async for chunk in chunks:
                        write_all(out, chunk)
                        advance(len(chunk))
            return
        with progress.transfer(f"{directory} → {target.name}", None, show=progress.wanted()) as advance:
            await client.fs.save_dir_zip(session, directory, target, progress=Sent(advance))
        click.echo(str(target))

    run(work)
