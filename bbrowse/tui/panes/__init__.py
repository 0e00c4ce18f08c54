"""The panes of a session screen: shells, replays (logs, files and screenshot follow)."""
