"""What the window shows before a load: a source's dialect, sample and types; a table's shape."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import polars as pl

from core import mapping as mp
from core.db import Column, TableRef, connect, list_schemas, list_tables, resolve_dsn, table_columns
from core.sources.factory import open_source
from core.spec import ColumnMap, SourceOptions


@dataclass(frozen=True)
class SourceInfo:
    options: SourceOptions  # with the sniffed values filled in
    columns: list[str]
    sample: pl.DataFrame
    types: list[str]  # suggested PostgreSQL type per column
    null_seen: list[str] = field(default_factory=list)  # columns where the sniffed NULL marker stood for a gap
    script_tables: list[tuple[str, int]] = field(default_factory=list)  # SQL scripts: (table, rows), file order

    def null_note(self) -> str:
        """The sniffed NULL marker in words, for the source panel ('' when it is PostgreSQL's default)."""
        o = self.options
        if not o.null:
            return ""
        note = f"NULL marker {o.null!r}"
        if self.null_seen:
            note += f" (seen in {', '.join(self.null_seen)})"
        if o.null_columns is not None:
            kept = [c for c in self.columns if c not in set(o.null_columns)]
            if kept:
                note += f"; kept as text in {', '.join(kept)}"
        return note


def inspect_source(options: SourceOptions, rows: int = 200) -> SourceInfo:
    opts = replace(options)
    source = open_source(opts)
    dialect = getattr(source, "dialect", None)
    if dialect is not None:
        opts = replace(
            opts, delimiter=dialect.delimiter, quote=dialect.quote, header=dialect.header,
            encoding=dialect.encoding, null=dialect.null,
            null_columns=getattr(source, "null_columns", None),
        )
    sample = source.sample(rows)
    dtypes = source.dtypes()
    types = [mp.suggested_type(sample[c], dtypes.get(c)) if c in sample.columns else "text" for c in source.columns()]
    seen = [source.columns()[i] for i in getattr(dialect, "null_seen", ()) if i < len(source.columns())]
    tables = [(t.target.display(), t.rows) for t in getattr(source, "tables", [])]
    return SourceInfo(opts, source.columns(), sample, types, seen, tables)


def ddl_preview(ref: TableRef, maps: list[ColumnMap]) -> str:
    return mp.create_table_sql(ref, maps).as_string(None)


@dataclass(frozen=True)
class DatabaseInfo:
    dsn: str
    schemas: list[str]
    tables: dict[str, list[str]]
    version: str


def inspect_database(dsn: str | None) -> DatabaseInfo:
    real = resolve_dsn(dsn)
    with connect(real, autocommit=True) as conn:
        schemas = list_schemas(conn)
        tables = {s: list_tables(conn, s) for s in schemas}
        row = conn.execute("SHOW server_version").fetchone()
    return DatabaseInfo(real, schemas, tables, str(row[0]) if row else "?")


def inspect_table(dsn: str | None, ref: TableRef) -> list[Column] | None:
    with connect(resolve_dsn(dsn), autocommit=True) as conn:
        return table_columns(conn, ref)
