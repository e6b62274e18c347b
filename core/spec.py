"""What a load is: plain dataclasses shared by the CLI, profiles and the window."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class LoadMode(StrEnum):
    APPEND = "append"
    TRUNCATE = "truncate"
    CREATE = "create"
    UPSERT = "upsert"


class CommitMode(StrEnum):
    SINGLE = "single"
    PER_BATCH = "per-batch"
    PER_FILE = "per-file"  # many files into one table: each file in its own transaction (core.many_files)


class ErrorPolicy(StrEnum):
    ABORT = "abort"
    SKIP = "skip"


FORMATS = ("csv", "tsv", "parquet", "json", "ndjson", "excel", "sql", "arrow", "pgtext")


@dataclass
class SourceOptions:
    """How to read the source. `None` means "sniff it"."""

    path: str
    format: str | None = None
    delimiter: str | None = None
    quote: str | None = None
    header: bool | None = None
    encoding: str | None = None
    null: str | None = None
    # Columns where `null` means NULL (None: every column). Sniffing keeps a marker off
    # columns of unquoted free text, where the same word can be a value.
    null_columns: list[str] | None = None
    # Columns where an empty unquoted field is NULL too, beside a named marker: what sniffing
    # found in a file that writes NULL both ways (None: as sniffed, or PostgreSQL's rule).
    empty_null_columns: list[str] | None = None
    sheet: str | None = None
    script_table: str | None = None  # SQL scripts: the one table to load (schema.table or table); None: all
    # Value formats the user gave by source column (`--column-format col=FORMAT`; "" clears an
    # inferred one), laid over the mapping's (core.column_formats).
    column_formats: dict[str, str] | None = None


@dataclass
class ColumnMap:
    """One target column: where its values come from and what it is called."""

    target: str
    source: str | None = None  # source column name; None means `constant`
    type: str = "text"  # PostgreSQL type of the target column
    include: bool = True
    constant: str | None = None  # used when source is None (None -> NULL)
    format: str | None = None  # how the source spells its values (core.value_formats), e.g. DD.MM.YYYY


@dataclass
class TargetSpec:
    table: str
    schema: str | None = None
    mode: LoadMode = LoadMode.APPEND
    key: list[str] = field(default_factory=list)  # upsert conflict columns
    ddl: str | None = None  # edited CREATE TABLE text for mode=create


@dataclass
class LoadSpec:
    source: SourceOptions
    target: TargetSpec
    strategy: str = "auto"  # or a strategy id; auto picks one from the source and the target
    # None: sized for the strategy and the file's rows when the load starts (LoadJob settles it;
    # Strategy.default_batch_rows): bytes for a COPY stream, 10,000 rows for the others.
    batch_rows: int | None = None
    workers: int = 2
    commit: CommitMode = CommitMode.SINGLE
    on_error: ErrorPolicy = ErrorPolicy.ABORT
    reject_file: str | None = None
    reject_limit: int | None = None  # abort when more rows than this are rejected
    reject_limit_pct: float | None = None  # ... or more than this percentage
    columns: list[ColumnMap] | None = None  # None: every source column as it is
    dsn: str | None = None  # None: the embedded server; never holds a password

    @property
    def rows_per_batch(self) -> int:
        """batch_rows once the load has settled it (a spec nobody settled: 10,000)."""
        from core.batch_size import DEFAULT_BATCH_ROWS

        return self.batch_rows if self.batch_rows is not None else DEFAULT_BATCH_ROWS
