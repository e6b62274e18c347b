"""What reading a SQL script yields: its tables (TableInfo) and its rows, chunk by chunk.

A chunk holds rows of one table in file order: parsed INSERT rows (ParsedChunk), checked
INSERT rows still as their literal text, to go to COPY as CSV (CsvChunk), or a COPY block's
own bytes (CopyChunk, copy_blocks). reader makes them; source and
script_load take them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import polars as pl

from core.sources.sqlscript.bulk_values import rows_to_csv
from core.sources.sqlscript.copy_blocks import CopyChunk
from core.sources.sqlscript.statements import InsertTarget


@dataclass
class ParsedChunk:
    """Rows of one table from INSERT statements, as string columns c0..cN (None for NULL)."""

    target: InsertTarget
    frame: pl.DataFrame
    lines: list[int]
    statements: int
    bytes_end: int
    ignored: int = 0
    on_conflict: bool = False

    @property
    def rows(self) -> int:
        return self.frame.height

    @property
    def columns(self) -> list[list[str | None]]:
        return [self.frame.get_column(c).to_list() for c in self.frame.columns]


class CsvChunk:
    """Checked INSERT rows of one table, to go to COPY as CSV (quote ', NULL written NULL unquoted).

    The rows are kept as their literal text; prepare() starts making the CSV on a helper
    thread (polars frees the GIL), so a load converts the next chunk while COPY takes this one.
    """

    def __init__(
        self, target: InsertTarget, texts: pl.Series, width: int, first_line: int, stmt_lines: pl.Series,
        per_stmt: list[int], bytes_end: int, on_conflict: bool = False,
    ) -> None:
        self.target, self._texts, self._width = target, texts, width
        self._first_line, self._stmt_lines, self._per_stmt = first_line, stmt_lines, per_stmt
        self.rows, self.bytes_end, self.on_conflict = len(texts), bytes_end, on_conflict
        self._thread: threading.Thread | None = None
        self._result: bytes | BaseException | None = None

    def prepare(self) -> None:
        """Start making the CSV on a helper thread."""
        if self._thread is None and self._result is None:
            self._thread = threading.Thread(target=self._convert, name="sluice-sql-csv", daemon=True)
            self._thread.start()

    def _convert(self) -> None:
        try:
            self._result = rows_to_csv(self._texts, self._width)
        except BaseException as exc:  # noqa: BLE001 - raised again where the data is asked for
            self._result = exc

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @property
    def data(self) -> bytes:
        self.prepare()
        self.wait()
        result, self._result = self._result, None  # not kept: the rows are, and are smaller
        if isinstance(result, BaseException):
            raise result
        assert result is not None
        return result

    @property
    def lines(self) -> list[int]:
        """The line of each row's statement."""
        base = self._first_line
        return [base + line for line, k in zip(self._stmt_lines.to_list(), self._per_stmt) for _ in range(k)]


Chunk = ParsedChunk | CopyChunk | CsvChunk


@dataclass
class TableInfo:
    """One table the script fills, in the order it first appears."""

    target: InsertTarget
    kind: str  # "copy" or "insert"
    first_line: int
    rows: int = 0
    statements: int = 0
    width: int = -1
    on_conflict: bool = False
    disable_triggers: bool = False  # the script says ALTER TABLE ... DISABLE TRIGGER ALL for it

    def describe(self) -> str:
        return f"{self.target.display()} ({self.rows:,} rows)"
