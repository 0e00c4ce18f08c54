"""Every scriptable command, read from the command registry as test_auth reads the routes, run in this process
(`bb_here`) against the suite's real service: its help, and its one-line errors. A command added to
`bbrowse.commands.COMMANDS` is checked here without touching this file (or fails, naming what to add).
The same commands run as a user runs them, in a subprocess or on a PTY, in tests/test_cli_*.py."""

from __future__ import annotations

import time
from collections.abc import Iterator

import click
from cli_support import assert_one_line_error, bb_here, cli_env

from bbrowse.cli import main
from bbrowse.commands import COMMANDS

#: A value for each argument a command takes after the session id, by the argument's name.
ARGUMENT_VALUES = {
    "path": ["/etc/hostname"], "paths": ["/x"], "directory": ["/"], "mode": ["644"], "src": ["/a"], "dst": ["/b"],
    "remote": ["/x"], "x": ["1"], "y": ["1"], "dx": ["0"], "dy": ["1"], "keys": ["a"], "text": ["x"],
    "command": [],
}
#: What a command needs beyond its arguments to reach the session (an option saying what to read).
EXTRA = {"logs": ["--supervisor", "bbrowse"]}


def every_command() -> Iterator[tuple[list[str], click.Command]]:
    """Each command and subcommand with its path (`["replays", "list"]`), as `bbrowse --help` lists them."""
    def walk(command: click.Command, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            context = click.Context(command)
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                assert sub is not None, f"{' '.join([*path, name])} is listed but cannot be loaded"
                yield from walk(sub, [*path, name])

    yield from walk(main, [])


def arguments(command: click.Command) -> list[str]:
    return [p.name or "" for p in command.params if isinstance(p, click.Argument)]


def test_the_registry_lists_every_command_and_each_has_help_with_examples(service) -> None:
    listed = {path[0] for path, _ in every_command() if path}
    assert set(COMMANDS) <= listed, set(COMMANDS) - listed
    for path, _ in every_command():
        result = bb_here(service, *path, "--help")
        assert result.returncode == 0, (path, result.stderr)
        assert b"Examples:" in result.stdout, path


def test_every_command_on_an_unknown_session_fails_in_one_line_naming_it(service, tmp_path) -> None:
    local = tmp_path / "upload.txt"
    local.write_text("x")
    values = {**ARGUMENT_VALUES, "local": [str(local)]}
    checked = []
    for path, command in every_command():
        names = arguments(command)
        if len(path) != 1 or not names or names[0] not in ("session", "sessions"):
            continue
        rest = [value for name in names[1:] for value in values[name]]  # KeyError: add the argument above
        args = [*path, "nope-session", *EXTRA.get(path[0], []), *rest]
        line = assert_one_line_error(bb_here(service, *args), "not_found", 404)
        assert "nope-session" in line, args
        checked.append(path[0])
    line = assert_one_line_error(bb_here(service, "exec", "nope-session", "--", "true"), "not_found", 404)
    assert "nope-session" in line
    assert {"cat", "ls", "logs", "screenshot", "replays", "rm", "shell", "put", "type"} <= set(checked), checked


def test_a_wrong_token_or_an_unreachable_service_is_one_line(service) -> None:
    wrong = bb_here(service, "sessions", env=cli_env(service, KERNEL_API_KEY="nope"))
    assert_one_line_error(wrong, "unauthorized", 401)
    started = time.monotonic()
    away = bb_here(service, "sessions", env=cli_env(service, KERNEL_BASE_URL="http://127.0.0.1:9"))
    assert_one_line_error(away, "connection_failed")
    assert time.monotonic() - started < 60
