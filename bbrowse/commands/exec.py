"""`bbrowse exec`: run a command in a session to completion, keeping stdout and stderr apart.

The remote stdout goes to the local stdout and the remote stderr to the local stderr, byte for byte,
and the command's exit status becomes bbrowse's, so `bbrowse exec ID -- test -f /x && ...` works.
"""

from __future__ import annotations

import base64
import sys

import click

from bbrowse.client import BrowserClient
from bbrowse.commands.output import print_json, write_all
from bbrowse.commands.runner import run


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
@click.argument("session", metavar="ID")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARG]...")
@click.option("-C", "--cwd", default=None, help="Absolute working directory (default: the session's).")
@click.option("-e", "--env", "env_pairs", multiple=True, metavar="NAME=VALUE", help="Set a variable; repeatable.")
@click.option("-t", "--timeout", "timeout_sec", type=click.IntRange(min=1), default=None,
              help="Seconds before the command is terminated (exit status 143).")
@click.option("--json", "as_json", is_flag=True,
              help="Print {exit_code, stdout_b64, stderr_b64, duration_ms} instead of the output.")
def exec_command(session: str, command: tuple[str, ...], cwd: str | None, env_pairs: tuple[str, ...],
                 timeout_sec: int | None, as_json: bool) -> None:
    """Run CMD in the session and wait for it; its exit status is bbrowse's.

    CMD is an argv, not a shell line: use `sh -c '...'` for pipes and globs. Put bbrowse's own
    options before `--`.

    \b
    Examples:
      bbrowse exec ID -- uname -a
      bbrowse exec ID --cwd /tmp --env LANG=C -- ls -la
      bbrowse exec ID -- sh -c 'ps aux | grep chrom' > procs.txt 2> errors.txt
      bbrowse exec ID --timeout 5 -- sleep 60; echo $?      # 143
    """
    env = parse_env(env_pairs)

    async def work(client: BrowserClient) -> int:
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
