"""Bring a DataTable in line with keyed rows, touching only what changed.

Live tables (sessions, replays) refresh every couple of seconds; rewriting them whole would move
the cursor and the scroll. Rows are keyed by id: gone rows are removed, new ones appended, and only
cells whose value changed are updated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.widgets import DataTable

Cells = Mapping[str, str | Text]


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
