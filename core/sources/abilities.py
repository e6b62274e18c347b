"""What some sources can do beyond the Source interface: typing Protocols, checked with isinstance."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from core.sources.base import Batch, ParseLater, RawChunk, Source, ValueGuard
    from core.sources.sniff import CsvDialect
    from core.sources.sqlscript.chunks import TableInfo


@runtime_checkable
class SniffedText(Protocol):
    """A text file read by a sniffed dialect (CSV, TSV, PostgreSQL's text format, or many of them read
    as one): the dialect, the columns where its NULL marker counts, and those where an empty field is NULL."""

    dialect: CsvDialect
    null_columns: list[str] | None
    empty_null_columns: list[str]


@runtime_checkable
class RawCsvChunks(SniffedText, Protocol):
    """CSV whose own bytes can go to COPY: its dialect, its records in raw chunks, and the columns
    where its null marker counts. One file (RawCsvSource), or many read as one (core.sources.many)."""

    path: Path
    format: str
    refuse: ValueGuard | None

    def raw_chunks(self, chunk_bytes: int | None = None, *, tolerant: bool = False) -> Iterator[RawChunk]: ...


@runtime_checkable
class FindsDataLines(Protocol):
    """A file whose own bytes went to one COPY: the source row at COPY's "line N" of the data
    (one CSV file, or PostgreSQL's text format, core.sources.pgtext)."""

    def row_at_data_line(self, data_line: int) -> int | None: ...


@runtime_checkable
class RawCsvSource(RawCsvChunks, Protocol):
    """One CSV file whose own bytes can go to COPY: also its quote, its bytes first then its
    parsed batches (the warm start), and rows found again by COPY's data line."""

    @property
    def quote(self) -> str: ...

    def raw_or_parsed(self, parse_now: Callable[[], bool], batch_rows: int, unit_bytes: int = ...,
                      raw_bytes: int | None = None) -> Iterator[RawChunk | ParseLater | Batch]: ...

    def parse_later(self, unit: ParseLater, batch_rows: int, *, guarded: bool = ...) -> list[Batch]: ...

    def row_at_data_line(self, data_line: int) -> int | None: ...


@runtime_checkable
class ScriptTables(Protocol):
    """A data script's tables, each with its rows, in the order they first appear."""

    tables: list[TableInfo]


@runtime_checkable
class InsertScript(Protocol):
    """A data script read into rows (core.sources.sqlscript.source.SqlScriptSource), asked without
    importing its reader: whether its INSERTs say ON CONFLICT DO NOTHING, whether it fills several
    tables, and whether its INSERTs name their columns."""

    @property
    def on_conflict(self) -> bool: ...

    @property
    def several(self) -> bool: ...

    @property
    def has_column_list(self) -> bool: ...


def copy_reads_as_is(source: Source) -> bool:
    """A CSV whose own bytes COPY can read as Sluice does. Not one that writes NULL two ways
    (a marker, and empty fields in typed columns): COPY takes one NULL string."""
    return (source.format in ("csv", "tsv") and isinstance(source, RawCsvChunks)
            and not source.empty_null_columns)


def copy_reads_raw(source: Source) -> bool:
    """A file whose own bytes one COPY reads as Sluice does: a CSV (copy_reads_as_is), or
    PostgreSQL's text format (COPY's FORMAT text; not split into byte ranges for several streams)."""
    return copy_reads_as_is(source) or (source.format == "pgtext" and isinstance(source, RawCsvChunks))


@runtime_checkable
class SeveralFiles(Protocol):
    """Many files read as one source (core.sources.many): a row's own file and its row there."""

    def file_of(self, row: int) -> tuple[str, int]: ...
