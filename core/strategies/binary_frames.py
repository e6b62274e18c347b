"""Mapped batches as whole binary COPY statements, for the streams of parallel-copy.

A stream that is handed parsed batches (a Parquet file, a mapped CSV, the `skip` policy)
sends each one as a binary COPY when every target column has an exact binary form and every
value of the batch can be typed exactly (see arrow_binary): the server then skips its text
parsing, the bottleneck of a CSV COPY. A batch that cannot be typed goes as CSV, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from psycopg import sql

from core.strategies.arrow_binary import ArrowEncoder, arrow_columns

if TYPE_CHECKING:
    import polars as pl

    from core.db import TableRef

TRAILER = b"\xff\xff"


class BinaryFrames:
    """One per stream: pgpq's encoders are not shared between threads."""

    def __init__(self, encoder: ArrowEncoder, copy_sql: sql.Composed) -> None:
        self._encoder = encoder
        self.header = encoder.header()  # a binary COPY statement starts with it and ends with TRAILER
        self.copy_sql = copy_sql

    @classmethod
    def for_target(cls, table: TableRef, columns: list[str], types: list[str], utc: bool = False
                   ) -> BinaryFrames | None:
        """None when some target column has no exact binary form (arrays, enums, numeric...);
        `utc`: see WriteContext.utc."""
        typed = arrow_columns(columns, types, utc)
        if typed is None:
            return None
        stmt = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT binary)").format(
            table.ident(), sql.SQL(", ").join(sql.Identifier(c) for c in columns))
        return cls(ArrowEncoder(typed), stmt)

    def tuples(self, frame: pl.DataFrame) -> memoryview | None:
        """The batch's binary tuples, or None when some value cannot be typed exactly here: the
        caller sends that batch as CSV."""
        return self._encoder.encode(frame)

    def statement(self, frame: pl.DataFrame) -> list[bytes | memoryview] | None:
        """The parts of one whole binary COPY of the batch (header, tuples, trailer), or None."""
        body = self._encoder.encode(frame)
        return None if body is None else [self.header, body, TRAILER]
