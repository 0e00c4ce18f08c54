"""`bbrowse sessions`, `bbrowse new`, `bbrowse rm`: list, create and delete browser sessions."""

from __future__ import annotations

import sys

import click

from bbrowse.client import BrowserClient, ServiceError
from bbrowse.commands.output import EXIT_FAILURE, print_error, print_json, table
from bbrowse.commands.runner import run
from bbrowse.humanize import duration, relative_time
from bbrowse.session_options import DEFAULT_TIMEOUT, MAX_TIMEOUT, MIN_TIMEOUT, check_start_url
from bbrowse.wire import Browser, SessionStatusFilter


def session_rows(browsers: list[Browser], *, with_deleted: bool) -> tuple[list[str], list[list[str]]]:
    headers = ["NAME", "ID", "CREATED", "HEADLESS", "TIMEOUT"]
    if with_deleted:
        headers.append("DELETED")
    rows = []
    for b in browsers:
        row = [b.name or "-", b.session_id, relative_time(b.created_at), "yes" if b.headless else "no",
               duration(b.timeout_seconds)]
        if with_deleted:
            row.append(relative_time(b.deleted_at) if b.deleted_at else "-")
        rows.append(row)
    return headers, rows


@click.command("sessions")
@click.option("--json", "as_json", is_flag=True, help="Print the sessions as a JSON array of Browser objects.")
@click.option("-q", "--query", default=None, help="Only sessions whose name or id contains this text.")
@click.option("-a", "--all", "show_all", is_flag=True, help="Include deleted sessions.")
def sessions_command(as_json: bool, query: str | None, show_all: bool) -> None:
    """List browser sessions.

    \b
    Examples:
      bbrowse sessions                       # table: name, id, created, headless, timeout
      bbrowse sessions --query work          # names or ids containing "work"
      bbrowse sessions --all                 # deleted ones too
      bbrowse sessions --json | jq -r '.[].session_id'
    """

    async def work(client: BrowserClient) -> None:
        status = SessionStatusFilter.ALL if show_all else None
        browsers = [b async for b in client.sessions.list(query=query, status=status, page_size=100)]
        if as_json:
            print_json(browsers)
        elif browsers:
            click.echo(table(*session_rows(browsers, with_deleted=show_all)))
        else:
            click.echo("no sessions" + (f" matching {query!r}" if query else ""), err=True)

    run(work)


def _start_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The form's rule: a URL with its scheme (`https://…`, `about:blank`), else a usage error saying why."""
    if value is None:
        return None
    url, problem = check_start_url(value)
    if problem:
        raise click.BadParameter(problem)
    return url


@click.command("new")
@click.option("-n", "--name", default=None, help="A unique name to address the session by instead of its id.")
@click.option("-u", "--start-url", default=None, callback=_start_url,
              help="Page the browser opens first: a URL with its scheme (https://example.com, about:blank).")
@click.option("--headful", is_flag=True, help="A visible browser (with a live view) instead of a headless one.")
@click.option("-t", "--timeout", "timeout_seconds", type=click.IntRange(MIN_TIMEOUT, MAX_TIMEOUT),
              default=DEFAULT_TIMEOUT, show_default=True,
              help=f"Seconds of inactivity before the session is deleted ({MIN_TIMEOUT}..{MAX_TIMEOUT}; the app's "
                   "form proposes the same default).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole Browser object as JSON.")
def new_command(name: str | None, start_url: str | None, headful: bool, timeout_seconds: int,
                as_json: bool) -> None:
    """Create a browser session and print its id.

    \b
    Examples:
      bbrowse new                                    # prints the new session's id
      SID=$(bbrowse new --timeout 600)               # keep it in a variable
      bbrowse new --name work --start-url https://example.com --headful
      bbrowse new --json | jq -r .cdp_ws_url         # for Playwright's connect_over_cdp
    """

    async def work(client: BrowserClient) -> None:
        browser = await client.sessions.create(
            name=name, start_url=start_url, headless=False if headful else None, timeout_seconds=timeout_seconds,
        )
        if as_json:
            print_json(browser)
        else:
            click.echo(browser.session_id)

    run(work)


@click.command("rm")
@click.argument("sessions", nargs=-1, required=True, metavar="ID...")
def rm_command(sessions: tuple[str, ...]) -> None:
    """Delete browser sessions (their processes, recordings and browser end too).

    Each deleted id is printed; a session that cannot be deleted gets an error line and the exit
    status is 1, but the others are still deleted.

    \b
    Examples:
      bbrowse rm k3x9q2...                   # by id
      bbrowse rm work scratch                # by name
      bbrowse sessions --json | jq -r '.[].session_id' | xargs bbrowse rm
    """

    async def work(client: BrowserClient) -> int:
        status = 0
        for id_or_name in sessions:
            try:
                await client.sessions.delete(id_or_name)
            except ServiceError as exc:
                print_error(exc.code, f"{id_or_name}: {exc.message}", exc.status)
                status = EXIT_FAILURE
                continue
            sys.stdout.write(id_or_name + "\n")
            sys.stdout.flush()
        return status

    run(work)
