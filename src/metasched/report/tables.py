"""Rich tables of summaries for the terminal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table


def summary_table(rows: Mapping[str, Mapping[str, Any]], columns: Sequence[tuple[str, str]], title: str = "") -> Table:
    """One row per label; ``columns`` are ``(key, header)``; floats shown with 4 significant digits."""
    table = Table(title=title or None)
    table.add_column("")
    for _, header in columns:
        table.add_column(header, justify="right")
    for label, row in rows.items():
        cells = []
        for key, _ in columns:
            value = row.get(key)
            if isinstance(value, float):
                cells.append(f"{value:.4g}")
            else:
                cells.append("" if value is None else str(value))
        table.add_row(label, *cells)
    return table
