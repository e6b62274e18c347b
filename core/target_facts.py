"""What one server says of a load's target tables right now: whether each exists, and its rows.

The window reads these again before every run and never reuses them for another connection,
so a question such as "Truncate public.t (2,000 rows)?" quotes what the table holds now, on the
server the run will write to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from core.db import TableRef, connect, resolve_dsn

EXACT_COUNT_BELOW = 1_000_000  # tables with fewer rows (by the planner's estimate) are counted exactly


@dataclass(frozen=True)
class TableSize:
    rows: int
    exact: bool  # False: the planner's estimate (pg_class.reltuples) of a big table

    def text(self) -> str:
        return f"{'' if self.exact else 'about '}{self.rows:,} row{'' if self.rows == 1 else 's'}"


@dataclass(frozen=True)
class TargetFacts:
    """The tables a run would write to, as one server has them: None for a table that is not there."""

    dsn: str | None  # the connection they were read on (None: the embedded server)
    sizes: dict[TableRef, TableSize | None]
    unfinished: bool = False  # a per-batch run of this file into the (first) table stopped part-way

    def missing(self) -> list[TableRef]:
        return [ref for ref, size in self.sizes.items() if size is None]

    def with_rows(self) -> dict[TableRef, TableSize]:
        return {ref: size for ref, size in self.sizes.items() if size is not None and size.rows > 0}


def size_on(conn: psycopg.Connection[Any], ref: TableRef) -> TableSize | None:
    """How many rows the table has: counted when small, the planner's estimate when big; None if no table."""
    qualified = ref.ident().as_string(conn)
    row = conn.execute(
        "SELECT c.reltuples::bigint FROM pg_class c WHERE c.oid = to_regclass(%s)", (qualified,)
    ).fetchone()
    if row is None:
        return None
    estimate = int(row[0])
    if estimate >= EXACT_COUNT_BELOW:
        return TableSize(estimate, False)
    counted = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(ref.ident())).fetchone()
    return TableSize(int(counted[0]) if counted else 0, True)


def read_target_facts(dsn: str | None, refs: Sequence[TableRef], source_path: str = "") -> TargetFacts:
    """Each table's size now, read on one connection; and whether a run of `source_path` is unfinished."""
    from core import checkpoint as ck

    with connect(resolve_dsn(dsn), autocommit=True) as conn:
        sizes = {ref: size_on(conn, ref) for ref in refs}
        state = None
        if source_path and refs and sizes[refs[0]] is not None:
            state = ck.read(conn, refs[0], ck.load_key(source_path, refs[0]))
        return TargetFacts(dsn, sizes, unfinished=state is not None and not state.finished)
