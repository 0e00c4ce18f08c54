"""The terminal tests run against both cores: libghostty (where pyghostty is installed) and the Python
core, which is forced with `BBROWSE_TERMINAL_CORE=python` (the setting people use too)."""

from __future__ import annotations

import pytest

from bbrowse.tui.terminal.core import ENV, NAMES, ghostty_import_error

CORE_PARAMS = [
    pytest.param(
        name,
        id=name,
        marks=pytest.mark.skipif(name == "ghostty" and ghostty_import_error() is not None,
                                 reason=f"libghostty is not available here: {ghostty_import_error()}"),
    )
    for name in NAMES
]


def use_core(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Make `TerminalCore()` build the core this test is parametrized with; its name."""
    name: str = request.param
    monkeypatch.setenv(ENV, name)
    return name
