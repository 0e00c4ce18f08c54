"""Textual is pinned where it matters: one exact version in pyproject.toml and the lock, the one that
bbrowse/tui/textual_private.py was written for, and no other file reaching Textual's private API."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from bbrowse.tui.textual_private import WRITTEN_FOR, version_problem

ROOT = Path(__file__).resolve().parent.parent
#: A private Textual module imported, a private name imported from Textual, a Final constant of Textual set,
#: or a private attribute of the app read.
PRIVATE_USE = re.compile(
    r"(from|import)\s+textual(\.\w+)*\._\w"
    r"|from\s+textual[\w.]*\s+import\s+[^\n]*\b_[a-z]\w*"
    r"|textual\.\w+\.[A-Z_]+\s*=[^=]"
    r"|\bapp\._(notifications|driver|keymap)\b|\._compositor\b"
)


def test_textual_is_pinned_to_the_version_the_private_module_was_written_for():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert f"textual=={WRITTEN_FOR}" in pyproject["project"]["dependencies"]
    lock = (ROOT / "requirements-dev.lock").read_text().splitlines()
    assert f"textual=={WRITTEN_FOR}" in lock
    assert version("textual") == WRITTEN_FOR
    assert version_problem() is None


def test_only_the_private_module_reaches_textuals_private_api():
    offenders = []
    for folder in ("bbrowse", "tests", "bench", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name in ("textual_private.py", "test_textual_private.py"):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if PRIVATE_USE.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []
