"""`bbrowse replays ID [list|start|stop|download]`: screen recordings of a session.

`stop` without a replay id stops the one recording that runs (the service allows one at a time);
`download` waits while the service is still finalising the MP4 and shows a progress bar on a terminal.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from bbrowse.client import BrowserClient
from bbrowse.commands import progress
from bbrowse.commands.output import print_json, table, write_all
from bbrowse.commands.runner import CommandError, run
from bbrowse.humanize import relative_time
from bbrowse.transfer import pour, save_stream
from bbrowse.wire import Replay


def replay_rows(replays: list[Replay]) -> list[list[str]]:
    return [[r.replay_id, relative_time(r.started_at) if r.started_at else "-",
             relative_time(r.finished_at) if r.finished_at else "recording",
             r.replay_view_url or "-"] for r in replays]


async def running_replay(client: BrowserClient, session: str) -> Replay:
    recording = [r for r in await client.replays.list(session) if r.finished_at is None]
    if not recording:
        raise CommandError("not_found", f"no replay is recording in session {session}")
    if len(recording) > 1:
        ids = ", ".join(r.replay_id for r in recording)
        raise CommandError("ambiguous", f"several replays are recording ({ids}); name the one to stop")
    return recording[0]


@click.group("replays", invoke_without_command=True)
@click.argument("session", metavar="ID")
@click.pass_context
def replays_group(ctx: click.Context, session: str) -> None:
    """Screen recordings of a session: list (default), start, stop, download.

    \b
    Examples:
      bbrowse replays ID                              # table of the session's replays
      bbrowse replays ID list --json
      RID=$(bbrowse replays ID start --framerate 10)
      bbrowse replays ID stop                         # the one that is recording
      bbrowse replays ID download $RID -o run.mp4
    """
    ctx.obj = session
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_command)


@replays_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of Replay objects.")
@click.pass_obj
def list_command(session: str, as_json: bool = False) -> None:
    """List the session's replays (id, started, finished, view URL)."""

    async def work(client: BrowserClient) -> None:
        replays = await client.replays.list(session)
        if as_json:
            print_json(replays)
        elif replays:
            click.echo(table(["REPLAY ID", "STARTED", "FINISHED", "VIEW URL"], replay_rows(replays)))
        else:
            click.echo(f"no replays in session {session}", err=True)

    run(work)


@replays_group.command("start")
@click.option("--framerate", type=click.IntRange(1, 60), default=None, help="Frames per second (1..60).")
@click.option("--max-duration", type=click.IntRange(min=1), default=None, help="Stop by itself after N seconds.")
@click.option("--json", "as_json", is_flag=True, help="Print the Replay object as JSON.")
@click.pass_obj
def start_command(session: str, framerate: int | None, max_duration: int | None, as_json: bool) -> None:
    """Start recording the screen; prints the replay id."""

    async def work(client: BrowserClient) -> None:
        replay = await client.replays.start(session, framerate=framerate, max_duration_in_seconds=max_duration)
        if as_json:
            print_json(replay)
        else:
            click.echo(replay.replay_id)

    run(work)


@replays_group.command("stop")
@click.argument("replay_id", required=False)
@click.pass_obj
def stop_command(session: str, replay_id: str | None) -> None:
    """Stop a recording: REPLAY_ID, or the one that is recording. Prints the stopped id."""

    async def work(client: BrowserClient) -> None:
        rid = replay_id or (await running_replay(client, session)).replay_id
        await client.replays.stop(session, rid)
        click.echo(rid)

    run(work)


def default_video_name(replay_id: str) -> str:
    return f"replay-{re.sub(r'[^A-Za-z0-9._-]+', '_', replay_id)}.mp4"


@replays_group.command("download")
@click.argument("replay_id")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="Where to save the MP4 ('-' for stdout). Default: replay-<replay id>.mp4.")
@click.pass_obj
def download_command(session: str, replay_id: str, output: str | None) -> None:
    """Download a replay as MP4 and print where it was saved."""

    async def work(client: BrowserClient) -> None:
        chunks = client.replays.download(session, replay_id)
        label = f"replay {replay_id}"
        to_stdout = output == "-"
        path = Path(output or default_video_name(replay_id))
        async with chunks:  # open first: the response says how long the MP4 is
            with progress.transfer(label, chunks.content_length,
                                   show=progress.wanted(stdout_too=to_stdout)) as moved:
                if to_stdout:
                    out = sys.stdout.fileno()
                    await pour(chunks, lambda chunk: write_all(out, chunk), moved)
                    return
                await save_stream(chunks, path, moved, replace=True)  # complete under its name, or absent
        click.echo(str(path))

    run(work)
