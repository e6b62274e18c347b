"""How a SQL script's rows map onto an existing table, as its load sends them.

A script whose INSERTs name no columns (pg_dump --inserts) fills the table's columns in
order: that is what the statements mean, and what core.load.protocols.script does. Matching its
placeholder names (column_1, column_2, ...) by name would leave every column unmatched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.spec import ColumnMap

if TYPE_CHECKING:
    from core.db import Column


def placeholder_names(width: int) -> list[str]:
    """The names a script's columns get when its statements list none."""
    return [f"column_{i + 1}" for i in range(width)]


def positional_maps(columns: Sequence[str], target: Sequence[Column]) -> list[ColumnMap] | None:
    """The script's columns onto the table's first columns in order, or None.

    None when the script names its columns (match those by name) or its rows are wider
    than the table (the user has to decide). A generated column among them (`target` from
    table_columns(generated=True)) takes its place in the order but is not written: pg_dump
    writes DEFAULT there, and the server computes it.
    """
    if not columns or list(columns) != placeholder_names(len(columns)) or len(columns) > len(target):
        return None
    return [ColumnMap(target=c.name, source=s, type=c.type, include=not c.generated) for s, c in zip(columns, target)]
