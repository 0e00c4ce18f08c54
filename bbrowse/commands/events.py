"""`bbrowse events`: a session's telemetry, one line per event (or JSON Lines), and following it live.

Following reconnects by seq after a dropped connection (`Telemetry.follow`), so nothing is printed
twice and nothing is skipped; it ends when the session ends, or with ctrl-c.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click

from bbrowse.client import BrowserClient
from bbrowse.client.telemetry import summary
from bbrowse.commands.output import print_json
from bbrowse.commands.runner import run
from bbrowse.wire.telemetry import CATEGORIES, TelemetryEnvelope, duration_seconds

#: `since` for "every event kept".
EVERYTHING = "1970-01-01T00:00:00Z"


def event_line(envelope: TelemetryEnvelope) -> str:
    event = envelope.event
    when = datetime.fromtimestamp(event.ts / 1_000_000, UTC).astimezone().strftime("%H:%M:%S.%f")[:-3]
    return f"{when}  {envelope.seq:>6}  {event.category:<10}  {event.type:<24}  {summary(envelope)}"


@click.command("events")
@click.argument("session", metavar="ID")
@click.option("-f", "--follow", is_flag=True, help="Keep printing events as they happen, until the session ends.")
@click.option("-c", "--category", "categories", multiple=True, type=click.Choice(CATEGORIES),
              help="Only this category (repeat for several).")
@click.option("-t", "--type", "types", multiple=True, help="Only this event type, e.g. console_error (repeatable).")
@click.option("--since", default=None, metavar="5m|SEQ",
              help="From this long ago (30s, 5m, 2h, 1d) or from this event number on. Default: all kept "
                   "(with --follow: only new events).")
@click.option("--json", "as_json", is_flag=True, help="One JSON envelope per line: {seq, event}.")
def events_command(session: str, follow: bool, categories: tuple[str, ...], types: tuple[str, ...],
                   since: str | None, as_json: bool) -> None:
    """Print what the session's browser did: console, network, page, control, connection, system events.

    The session needs telemetry on (create it with `telemetry`, or PATCH it; the app's Events tab too).

    \b
    Examples:
      bbrowse events ID                                 # everything kept, oldest first
      bbrowse events ID -f -c console -c network        # follow console and network events
      bbrowse events ID --type console_error --since 10m
      bbrowse events ID -f --since 120 --json | jq .event.type
    """
    from_seq: int | None = None
    window: str | None = None
    if since is not None:
        if since.isdigit():
            from_seq = int(since)
        elif duration_seconds(since) is not None:
            window = since
        else:
            raise click.BadParameter("expected a duration such as 5m, or an event number", param_hint="--since")

    def show(envelope: TelemetryEnvelope) -> None:
        if categories and envelope.event.category not in categories:
            return
        if types and envelope.event.type not in types:
            return
        if as_json:
            print_json(envelope, compact=True)
        else:
            sys.stdout.write(event_line(envelope) + "\n")
            sys.stdout.flush()

    async def work(client: BrowserClient) -> None:
        last = 0
        if not follow or window is not None:
            start = window or EVERYTHING
            async for envelope in client.telemetry.all_events(session, since=start, category=categories,
                                                              type=types):
                if from_seq is None or envelope.seq >= from_seq:
                    show(envelope)
                last = max(last, envelope.seq)
            if not follow:
                return
        after = last if window is not None else (from_seq - 1 if from_seq is not None else None)
        stream = client.telemetry.follow(session, types=types, after=after)
        async with stream:
            async for envelope in stream:
                show(envelope)

    run(work)
