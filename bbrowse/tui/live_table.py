"""Keeping a Textual `DataTable` that is refreshed in place in step: rows synced by key, columns fitted.

Live tables (sessions, replays) refresh every couple of seconds; rewriting them whole would move
the cursor and the scroll. Rows are keyed by id: gone rows are removed, new ones appended, and only
cells whose value changed are updated. `fit_columns` sizes the columns to the table's width: at
80 columns the least useful ones shrink first, their cells ending with an ellipsis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

Cells = Mapping[str, str | Text]

#: The content widths each table had at its last fit (column key, cells), to see when they move.
_FITTED_CONTENT_WIDTHS: WeakKeyDictionary[DataTable, tuple[tuple[str, int], ...]] = WeakKeyDictionary()


def sync_rows(table: DataTable, rows: Mapping[str, Cells], columns: Sequence[str]) -> None:
    """Make `table` show exactly `rows` (row key -> column key -> value), in the order given for new rows."""
    for row_key in list(table.rows):
        if row_key.value not in rows:
            table.remove_row(row_key)
    for key, cells in rows.items():
        if key in table.rows:
            for column in columns:
                if table.get_cell(key, column) != cells[column]:
                    table.update_cell(key, column, cells[column], update_width=True)
        else:
            table.add_row(*(cells[column] for column in columns), key=key)


@dataclass(frozen=True)
class ColumnFit:
    """How a column gives way when the table is narrower than its content: lowest `priority` first,
    never below `min_width` cells (its cells then end with an ellipsis)."""

    key: str
    priority: int
    min_width: int


def fit_columns(table: DataTable, fits: Sequence[ColumnFit]) -> None:
    """Size `table`'s columns to its width: every column at its content's width when that fits, else the
    lowest-priority columns shrink first (down to their minimum) until the row fits.

    DataTable has no public way to change a column's width after it was added; this sets the
    column's width and asks the table to lay out again (its render caches hold the old widths).
    """
    available = table.scrollable_content_region.width
    if available <= 0:
        return
    padding = 2 * table.cell_padding
    columns = table.columns
    natural = {fit.key: columns[ColumnKey(fit.key)].content_width for fit in fits if fit.key in columns}
    widths = dict(natural)
    excess = sum(width + padding for width in widths.values()) - available
    for fit in sorted(fits, key=lambda f: f.priority):
        if excess <= 0:
            break
        if fit.key not in widths:
            continue
        give = min(excess, max(0, widths[fit.key] - fit.min_width))
        widths[fit.key] -= give
        excess -= give
    # A row drawn before the table measured new content is cached at the old widths (cropped, or cut
    # with an ellipsis): when the measured widths moved since the last fit, draw every row again.
    measured = tuple(sorted(natural.items()))
    changed = _FITTED_CONTENT_WIDTHS.get(table) not in (None, measured)
    _FITTED_CONTENT_WIDTHS[table] = measured
    for key, width in widths.items():
        column = columns[ColumnKey(key)]
        auto = width >= natural[key]
        if column.auto_width != auto or (not auto and column.width != width):
            column.auto_width = auto
            column.width = width
            changed = True
    if changed:
        table._clear_caches()
        table._require_update_dimensions = True
        table.refresh()


def ellipsized(value: str | Text) -> Text:
    """A cell that ends with `…` when its column is narrower than it (never wraps)."""
    text = value.copy() if isinstance(value, Text) else Text(value)
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text
