"""`bbrowse logs`: print a session's log, a file or a supervised program, and follow it like `tail -f`.

Each line is flushed as it arrives so `bbrowse logs ... | grep` sees it at once. Following runs until
ctrl-c (exit 130) or until the session ends, and holds the session alive meanwhile (`KeepAlive`: on
Kernel a log stream is not activity). `--no-follow` ends on any service: Kernel's VM never ends a
`follow=false` stream, so a file is read with `read_file` instead (`Logs.existing`).

Following survives a dropped or stalled link (`Logs.follow`): the state goes to stderr (`-- link
stalled: ...`, `-- reconnecting ...`), and where the link was down a mark (stderr) is followed by the
lines of a file written meanwhile (stdout, in order, none twice).
"""

from __future__ import annotations

import sys

import click

from bbrowse.client import BrowserClient, KeepAlive
from bbrowse.client.logs import CONNECTING, LIVE, LogGap
from bbrowse.commands.output import print_json, write_all
from bbrowse.commands.runner import run
from bbrowse.humanize import duration
from bbrowse.wire import LogEvent, LogSource


@click.command("logs")
@click.argument("session", metavar="ID")
@click.option("-p", "--path", default=None, help="Absolute path of a log file on the session's machine.")
@click.option("-s", "--supervisor", default=None,
              help="Name of a supervised program (bbrowse serve: bbrowse, chromium, recorder).")
@click.option("--no-follow", is_flag=True, help="Print the existing lines and stop instead of following.")
@click.option("-n", "--tail", type=click.IntRange(min=0), default=None,
              help="Start with the last N existing lines (a bbrowse serve extension).")
@click.option("--json", "as_json", is_flag=True, help="One JSON log event per line: {event, message, timestamp}.")
def logs_command(session: str, path: str | None, supervisor: str | None, no_follow: bool, tail: int | None,
                 as_json: bool) -> None:
    """Print or follow a log of the session: a file (--path) or a supervised program (--supervisor).

    Following starts at the end of the log: only new lines are printed (add --tail N for context).

    \b
    Examples:
      bbrowse logs ID --supervisor chromium              # follow Chromium's log
      bbrowse logs ID --path /var/log/app.log -n 20      # last 20 lines, then follow
      bbrowse logs ID --supervisor bbrowse --no-follow   # the whole service log, then exit
      bbrowse logs ID --path /tmp/x.log --json | jq -r .timestamp
    """
    if (path is None) == (supervisor is None):
        raise click.UsageError("give exactly one of --path or --supervisor")

    source = LogSource.PATH if path is not None else LogSource.SUPERVISOR
    out = sys.stdout.fileno()

    def show(event: LogEvent) -> None:
        if as_json:
            print_json(event, compact=True)
        else:
            write_all(out, event.message.encode("utf-8", "surrogateescape") + b"\n")

    async def work(client: BrowserClient) -> None:
        if no_follow:
            async for event in client.logs.existing(session, source=source, path=path,
                                                    supervisor_process=supervisor, tail=tail):
                show(event)
            return
        said: list[str] = [CONNECTING]

        def state(now: str, reason: str | None) -> None:
            previous, said[0] = said[0], now
            if now == previous or now == CONNECTING or (now == LIVE and previous == CONNECTING):
                return
            note = "link back: following again" if now == LIVE else f"link {now}{f': {reason}' if reason else ''}"
            sys.stderr.write(f"-- {note}\n")
            sys.stderr.flush()

        events = client.logs.follow(session, source=source, path=path, supervisor_process=supervisor, tail=tail,
                                    on_state=state)
        async with KeepAlive(client, session):
            async for item in events:
                if isinstance(item, LogGap):
                    what = (f"{item.recovered} line{'s' if item.recovered != 1 else ''} written meanwhile follow"
                            if item.recovered is not None else "lines written meanwhile are not known")
                    sys.stderr.write(f"-- gap of {duration(round(item.seconds))}: {what}"
                                     f"{' (the file was rewritten)' if item.rewritten else ''}\n")
                    sys.stderr.flush()
                else:
                    show(item)

    run(work)
