"""The scriptable subcommands (`bbrowse sessions`, `shell`, `exec`, `logs`, `cat`, ...), one module per group.

Each command parses its arguments with click and hands its async work to `runner.run`, which finds
the service, runs the work and turns failures into one-line errors. `output` formats what they print.
"""

from bbrowse.commands.computer import click_command, key_command, scroll_command, type_command
from bbrowse.commands.events import events_command
from bbrowse.commands.exec import exec_command
from bbrowse.commands.files import cat_command, ls_command
from bbrowse.commands.fs_write import (
    chmod_command,
    mkdir_command,
    mv_command,
    put_command,
    rm_file_command,
    zip_command,
)
from bbrowse.commands.info import info_command
from bbrowse.commands.logs import logs_command
from bbrowse.commands.replays import replays_group
from bbrowse.commands.screenshot import screenshot_command
from bbrowse.commands.sessions import new_command, rm_command, sessions_command
from bbrowse.commands.shell import shell_command

#: Every scriptable command, for `bbrowse.cli` to register.
COMMANDS = (
    sessions_command,
    new_command,
    rm_command,
    info_command,
    shell_command,
    exec_command,
    logs_command,
    events_command,
    cat_command,
    ls_command,
    put_command,
    rm_file_command,
    mkdir_command,
    mv_command,
    chmod_command,
    zip_command,
    screenshot_command,
    click_command,
    type_command,
    key_command,
    scroll_command,
    replays_group,
)

__all__ = ["COMMANDS"]
