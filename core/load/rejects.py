"""The `skip` error policy: isolate the rows the server refuses, keep the rest.

A failed batch is rolled back to its savepoint and bisected with INSERTs inside
nested savepoints, so good rows load and each bad row is found with O(log n)
statements per bad row. Each reject is written with its line, column and reason.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from core.db import TableRef, insert_into
from core.diagnose import bad_column, server_reason
from core.errors import ConfigError, TooManyRejects
from core.sources.abilities import SeveralFiles
from core.sources.base import BadRecord, Source


@dataclass(frozen=True)
class Reject:
    row: int  # 0-based source row
    reason: str


def isolate(
    conn: psycopg.Connection[Any], table: TableRef, columns: Sequence[str], rows: Sequence[tuple[Any, ...]],
    first_row: int,
) -> tuple[int, list[Reject]]:
    """Insert what loads of `rows` (inside the open transaction); return (loaded, rejects)."""
    stmt = sql.SQL("{} VALUES ({})").format(
        insert_into(table, columns), sql.SQL(", ").join(sql.Placeholder() * len(columns)))
    cur = conn.cursor()
    rejects: list[Reject] = []

    def attempt(lo: int, hi: int) -> int:
        try:
            with conn.transaction():
                cur.executemany(stmt, rows[lo:hi])
            return hi - lo
        except psycopg.Error as exc:
            if hi - lo == 1:
                rejects.append(Reject(first_row + lo, server_reason(exc)))
                return 0
        mid = (lo + hi) // 2
        return attempt(lo, mid) + attempt(mid, hi)

    loaded = attempt(0, len(rows)) if rows else 0
    return loaded, rejects


def reject_fields(
    source: Source, reject: Reject, dsn: str, columns: Sequence[str], types: Sequence[str],
    values: Sequence[Any] | None,
) -> tuple[Any, ...]:
    """One reject-file record: line, row, column, value, reason and the original record."""
    line, record = source.locate(reject.row)
    column, value = bad_column(dsn, columns, types, values, None) if values is not None else (None, None)
    return _named(source, (line or "", reject.row + 1, column or "", "" if value is None else value, reject.reason,
                           record or ""), reject.row)


def bad_record_fields(bad: BadRecord, source: Source | None = None) -> tuple[Any, ...]:
    return _named(source, (bad.line or "", bad.row + 1, bad.column or "",
                          "" if bad.value is None else bad.value, bad.reason, bad.record), bad.row)


def _named(source: Source | None, fields: tuple[Any, ...], row: int) -> tuple[Any, ...]:
    """Many files read as one source (core.sources.many): the row counted in its own file (as its
    line is), and the file named in a last column."""
    if not isinstance(source, SeveralFiles):
        return fields
    path, own = source.file_of(row)
    return (fields[0], own + 1, *fields[2:], path)


class RejectWriter:
    """The reject file: line, row, column, value, reason and the original record."""

    HEADER = ("line", "row", "column", "value", "reason", "record")
    outcome = "nothing was loaded"  # what a load stopped by the limit leaves behind

    def __init__(
        self,
        path: str | None,
        source: Source,
        limit: int | None,
        limit_pct: float | None,
        *,
        resume_at: tuple[int, int] | None = None,
    ) -> None:
        """resume_at=(bytes, count): a resumed per-batch load keeps what its commits recorded."""
        self.path = path or f"{source.path}.rejects.csv"
        self.source = source
        self.limit, self.limit_pct = limit, limit_pct
        self.count = 0
        keep = resume_at is not None and resume_at[0] > 0 and Path(self.path).is_file()
        # Binary-safe reopen for resume: the text layer would refuse to truncate mid-way.
        try:
            self._file = open(self.path, "r+" if keep else "w", newline="", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise ConfigError(f"cannot write the reject file {self.path}: {exc.strerror}") from None
        self._csv = csv.writer(self._file)
        if keep and resume_at is not None:
            self.rewind(*resume_at)
        else:  # many files read as one source (core.sources.many): each record also names its file
            self._csv.writerow(self.HEADER + (("file",) if isinstance(source, SeveralFiles) else ()))
        self._start = self.position()

    def position(self) -> int:
        """The file's length now (flushed), which a per-batch commit records."""
        self._file.flush()
        return self._file.seek(0, 2)

    def rewind(self, length: int, count: int) -> None:
        """Drop what was written after the last commit (its batch was rolled back)."""
        if length <= 0:
            length, count = getattr(self, "_start", 0), 0
        self._file.flush()
        self._file.seek(length)
        self._file.truncate(length)
        self.count = count

    def add(
        self, reject: Reject, dsn: str, columns: Sequence[str], types: Sequence[str], values: Sequence[Any] | None
    ) -> None:
        self._csv.writerow(reject_fields(self.source, reject, dsn, columns, types, values))
        self.count += 1

    def add_bad(self, bad: BadRecord) -> None:
        """A record the source could not turn into a row: no column or value, its own text."""
        self._csv.writerow(bad_record_fields(bad, self.source))
        self.count += 1

    def add_lines(self, text: str, count: int) -> None:
        """Reject lines already formatted (CSV), e.g. kept by a chunk's checkpoint row."""
        self._file.write(text)
        self.count += count

    def check_limit(self, rows_read: int) -> None:
        if self.limit is not None and self.count > self.limit:
            raise TooManyRejects(f"{self.count} rows rejected, more than the limit of {self.limit}; {self.outcome}")
        if self.limit_pct is not None and rows_read and self.count * 100 / rows_read > self.limit_pct:
            raise TooManyRejects(
                f"{self.count} of {rows_read} rows rejected, more than {self.limit_pct}%; {self.outcome}"
            )

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def discard_if_empty(self) -> str | None:
        self.close()
        if self.count == 0:
            Path(self.path).unlink(missing_ok=True)
            return None
        return self.path
