"""`bbrowse exec`: run a command in a session to completion, keeping stdout and stderr apart.

The remote stdout goes to the local stdout and the remote stderr to the local stderr, byte for byte,
and the command's exit status becomes bbrowse's, so `bbrowse exec ID -- test -f /x && ...` works.

With `--all` or `--query Q` the command runs on every matching session at once; each session's output
is printed as one block, headed by its name, as soon as it finishes (`==> name <== exit 0`, as `tail`
heads several files), and the status is 1 when it failed anywhere.
"""

from __future__ import annotations

import asyncio
import base64
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import click

from bbrowse.client import BrowserClient, ClientError, ServiceError
from bbrowse.commands.output import EXIT_FAILURE, one_line, print_json, write_all
from bbrowse.commands.runner import CommandError, client_error_code, run
from bbrowse.wire import Browser


def parse_env(pairs: tuple[str, ...]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r} is not NAME=VALUE", param_hint="'--env'")
        env[name] = value
    return env


#: Options after the session id that are not bbrowse's (`ls -la`) belong to the command.
COMMAND_CONTEXT = {"ignore_unknown_options": True}


@click.command("exec", context_settings=COMMAND_CONTEXT)
@click.argument("arguments", nargs=-1, required=True, type=click.UNPROCESSED, metavar="[ID] -- CMD [ARG]...")
# long options only: `-a` and `-q` after the ID belong to the command (`ls -a`, `grep -q`)
@click.option("--all", "every", is_flag=True, help="Run on every active session at once (no ID).")
@click.option("--query", default=None, metavar="Q",
              help="Run on every session whose name or id contains Q, at once (no ID).")
@click.option("-C", "--cwd", default=None, help="Absolute working directory (default: the session's).")
@click.option("-e", "--env", "env_pairs", multiple=True, metavar="NAME=VALUE", help="Set a variable; repeatable.")
@click.option("-t", "--timeout", "timeout_sec", type=click.IntRange(min=1), default=None,
              help="Seconds before the command is terminated (exit status 143).")
@click.option("--json", "as_json", is_flag=True,
              help="Print {exit_code, stdout_b64, stderr_b64, duration_ms} instead of the output "
                   "(with --all/--query: a list, one object per session with its session_id and name).")
def exec_command(arguments: tuple[str, ...], every: bool, query: str | None, cwd: str | None,
                 env_pairs: tuple[str, ...], timeout_sec: int | None, as_json: bool) -> None:
    """Run CMD in the session and wait for it; its exit status is bbrowse's.

    CMD is an argv, not a shell line: use `sh -c '...'` for pipes and globs. Put bbrowse's own
    options before `--`. With --all or --query (and no ID) CMD runs on each matching session
    concurrently: one block of output per session, headed `==> NAME <== exit N`, and the exit status
    is 1 when it failed on any.

    \b
    Examples:
      bbrowse exec ID -- uname -a
      bbrowse exec ID --cwd /tmp --env LANG=C -- ls -la
      bbrowse exec ID -- sh -c 'ps aux | grep chrom' > procs.txt 2> errors.txt
      bbrowse exec ID --timeout 5 -- sleep 60; echo $?      # 143
      bbrowse exec --all -- uptime
      bbrowse exec --query scraper --json -- cat /tmp/result.json | jq '.[].exit_code'
    """
    env = parse_env(env_pairs)
    many = every or query is not None
    if many:
        session, command = None, arguments
    else:
        session, command = arguments[0], arguments[1:]
    if not command:
        raise click.UsageError("a command to run is missing: bbrowse exec ID -- CMD (or --all -- CMD)")

    async def work(client: BrowserClient) -> int:
        if session is None:
            return await exec_many(client, query, command, cwd=cwd, env=env, timeout_sec=timeout_sec,
                                   as_json=as_json)
        result = await client.processes.exec(session, command[0], command[1:], cwd=cwd, env=env,
                                             timeout_sec=timeout_sec)
        if as_json:
            print_json(result)
            return result.exit_code
        sys.stdout.flush()
        write_all(sys.stdout.fileno(), base64.b64decode(result.stdout_b64))
        write_all(sys.stderr.fileno(), base64.b64decode(result.stderr_b64))
        return result.exit_code

    run(work)


async def exec_many(client: BrowserClient, query: str | None, command: Sequence[str], *, cwd: str | None,
                    env: Mapping[str, str], timeout_sec: int | None, as_json: bool) -> int:
    """`command` on every active session matching `query` (None: all) at once; 1 when it failed on any."""
    browsers = [b async for b in client.sessions.list(query=query, page_size=100)]
    if not browsers:
        raise CommandError("not_found", "no active session" + (f" matches {query!r}" if query else ""))

    async def one(browser: Browser) -> dict[str, Any]:
        started = time.monotonic()
        entry: dict[str, Any] = {"session_id": browser.session_id, "name": browser.name}
        try:
            result = await client.processes.exec(browser.session_id, command[0], command[1:], cwd=cwd, env=env,
                                                 timeout_sec=timeout_sec)
        except ClientError as error:
            status = error.status if isinstance(error, ServiceError) else None
            code = error.code if isinstance(error, ServiceError) else client_error_code(error)
            message = error.message if isinstance(error, ServiceError) else str(error)
            entry["error"] = {"code": code, "status": status, "message": one_line(message)}
            entry["duration_ms"] = round((time.monotonic() - started) * 1000)
        else:
            entry.update(result.model_dump(mode="json", exclude_none=True))
        if not as_json:
            print_block(browser, entry)
        return entry

    entries = await asyncio.gather(*(one(b) for b in browsers))
    if as_json:
        print_json(list(entries))
    return EXIT_FAILURE if any("error" in e or e.get("exit_code") != 0 for e in entries) else 0


def print_block(browser: Browser, entry: dict[str, Any]) -> None:
    """One session's output in one piece: its heading, stdout on stdout, stderr on stderr."""
    name = browser.name or browser.session_id
    if "error" in entry:
        error = entry["error"]
        where = f"{error['code']} ({error['status']})" if error["status"] is not None else error["code"]
        heading = f"==> {name} <== error: {where}: {error['message']}\n"
    else:
        heading = f"==> {name} <== exit {entry['exit_code']}\n"
    out = base64.b64decode(entry.get("stdout_b64", ""))
    err = base64.b64decode(entry.get("stderr_b64", ""))
    sys.stdout.flush()
    write_all(sys.stdout.fileno(), heading.encode() + out + (b"" if not out or out.endswith(b"\n") else b"\n"))
    if err:
        write_all(sys.stderr.fileno(), f"==> {name} <==\n".encode() + err + (b"" if err.endswith(b"\n") else b"\n"))
