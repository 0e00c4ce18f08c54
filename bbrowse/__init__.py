"""bbrowse: drive remote browser sessions from a terminal, or serve them locally."""

__version__ = "0.1.0"
