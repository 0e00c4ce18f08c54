"""The scriptable subcommands (`bbrowse sessions`, `shell`, `exec`, `logs`, `cat`, ...), one module per group.

Each command parses its arguments with click and hands its async work to `runner.run`, which finds
the service, runs the work and turns failures into one-line errors. `output` formats what they print.
"""

#: Every scriptable command by name, as "module:attribute": `bbrowse.cli` imports one only when it runs
#: (or when `--help` lists them), so the app and `bbrowse serve` start without loading them all.
COMMANDS: dict[str, str] = {
    "sessions": "bbrowse.commands.sessions:sessions_command",
    "new": "bbrowse.commands.sessions:new_command",
    "rm": "bbrowse.commands.sessions:rm_command",
    "info": "bbrowse.commands.info:info_command",
    "shell": "bbrowse.commands.shell:shell_command",
    "exec": "bbrowse.commands.exec:exec_command",
    "logs": "bbrowse.commands.logs:logs_command",
    "events": "bbrowse.commands.events:events_command",
    "cat": "bbrowse.commands.files:cat_command",
    "ls": "bbrowse.commands.files:ls_command",
    "put": "bbrowse.commands.fs_write:put_command",
    "rm-file": "bbrowse.commands.fs_write:rm_file_command",
    "mkdir": "bbrowse.commands.fs_write:mkdir_command",
    "mv": "bbrowse.commands.fs_write:mv_command",
    "chmod": "bbrowse.commands.fs_write:chmod_command",
    "zip": "bbrowse.commands.fs_write:zip_command",
    "screenshot": "bbrowse.commands.screenshot:screenshot_command",
    "click": "bbrowse.commands.computer:click_command",
    "type": "bbrowse.commands.computer:type_command",
    "key": "bbrowse.commands.computer:key_command",
    "scroll": "bbrowse.commands.computer:scroll_command",
    "replays": "bbrowse.commands.replays:replays_group",
}

__all__ = ["COMMANDS"]
