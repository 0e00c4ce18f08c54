"""Write the keys tables of README.md and docs/configuration.md from the app's bindings.

    .venv/bin/python scripts/key_tables.py          # rewrite both tables
    .venv/bin/python scripts/key_tables.py --check  # exit 1, with a diff, when a table is out of date

README.md's "Screen | Keys" table comes from `bbrowse.tui.key_hints.README_KEYS` (keys by binding id).
docs/configuration.md's binding table has a row per binding id (or ids, `a` / `b`): the Id and Default key
columns come from the bindings; the Action and Where columns are kept as written (a new id gets its
binding's description and class). tests/test_key_tables.py runs the check.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CONFIGURATION = ROOT / "docs" / "configuration.md"
README_HEADER = "| Screen | Keys |"
CONFIG_HEADER = "| Id | Default key | Action | Where |"


def load_app() -> None:
    """Import every module of the app, so every binding's class exists."""
    import bbrowse.tui

    for module in pkgutil.walk_packages(bbrowse.tui.__path__, "bbrowse.tui."):
        importlib.import_module(module.name)


def split_table(text: str, header: str) -> tuple[list[str], list[str], list[str]]:
    """(lines before the table's rows, its rows, lines after): the rows follow the header and its rule."""
    lines = text.split("\n")
    start = lines.index(header) + 2
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return lines[:start], lines[start:end], lines[end:]


def readme_rows() -> list[str]:
    from bbrowse.tui.key_hints import README_KEYS, hint_text

    return [f"| {screen} | {hint_text(template, {}, quote=True)} |" for screen, template in README_KEYS]


def cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split(" | ")]


def default_key_cell(binding_ids: list[str]) -> str:
    """`slash` (`/`): the keys as the configuration names them, with the character where it is punctuation.
    A key bound only as the character a terminal sends for an alt+key (`alt+2` arrives as `™`) is left out."""
    from textual.keys import format_key

    from bbrowse.tui.key_hints import default_binding, say_key
    from bbrowse.tui.palette import typed_character

    parts = []
    for binding_id in binding_ids:
        keys = [key for key in default_binding(binding_id).key.split(",")
                if (typed_character(key) or "").isascii()]
        said = [say_key(key) for key in keys if len(base := format_key(key.split("+")[-1])) == 1
                and base.isascii() and not base.isalnum() and base != key.split("+")[-1]]
        parts.append(f"`{','.join(keys)}`" + (f" ({', '.join(f'`{s}`' for s in said)})" if said else ""))
    return " / ".join(parts)


def config_rows(old_rows: list[str]) -> list[str]:
    from bbrowse.tui.key_hints import bbrowse_bindings

    ours = {}
    for cls, binding in bbrowse_bindings():
        if cls.__module__.startswith("bbrowse.") and binding.id not in ours:
            ours[binding.id] = (cls, binding)
    rows, done = [], set()
    for row in old_rows:
        id_cell, _, action, where = cells(row)
        ids = [part.strip().strip("`") for part in id_cell.split(" / ")]
        ids = [binding_id for binding_id in ids if binding_id in ours]
        if not ids:
            continue  # the binding is gone
        done.update(ids)
        rows.append(f"| {' / '.join(f'`{i}`' for i in ids)} | {default_key_cell(ids)} | {action} | {where} |")
    for binding_id, (cls, binding) in ours.items():
        if binding_id not in done:
            rows.append(f"| `{binding_id}` | {default_key_cell([binding_id])} | {binding.description} | "
                        f"{cls.__name__} |")
    return rows


def regenerated() -> dict[Path, str]:
    load_app()
    out = {}
    for path, header, make in ((README, README_HEADER, lambda old: readme_rows()),
                               (CONFIGURATION, CONFIG_HEADER, config_rows)):
        text = path.read_text()
        before, rows, after = split_table(text, header)
        out[path] = "\n".join([*before, *make(rows), *after])
    return out


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = 0
    for path, text in regenerated().items():
        old = path.read_text()
        if old == text:
            continue
        stale += 1
        if check:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                       str(path.relative_to(ROOT)), "generated"))
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if check and stale:
        print("\nkeys tables out of date: run .venv/bin/python scripts/key_tables.py")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
