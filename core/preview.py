"""What the window shows before a load: a source's dialect, sample and types; a table's shape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl
from psycopg import sql

from core import mapping as mp
from core import relative_dates
from core.db import Column, TableRef, connect, list_schemas, list_tables, resolve_dsn, table_columns
from core.errors import SluiceError
from core.pgtypes import is_relative, normalize_type, refused, text_reason
from core.source_notes import report
from core.sources.abilities import RawCsvChunks, ScriptTables, SniffedText
from core.sources.base import BadRecord, Source
from core.sources.csv.records import count_records
from core.sources.factory import open_source
from core.sources.many import ManySource
from core.spec import ColumnMap, SourceOptions
from core.target_facts import TableSize, size_on

BAD_SHOWN = 50  # malformed records kept for the preview
EXACT_FILE_BYTES = 32 << 20  # text files up to this size are read whole to count their rows (~0.3 s)
COUNT_BATCH = 100_000


@dataclass(frozen=True)
class SourceInfo:
    options: SourceOptions  # with the sniffed values filled in
    columns: list[str]
    sample: pl.DataFrame
    types: list[str]  # suggested PostgreSQL type per column
    null_seen: list[str] = field(default_factory=list)  # columns where the sniffed NULL marker stood for a gap
    script_tables: list[tuple[str, int]] = field(default_factory=list)  # SQL scripts: (table, rows), file order
    bad: list[BadRecord] = field(default_factory=list)  # malformed records among the sampled rows, by row
    rows: int = 0  # rows in the file: exact when `rows_exact`, else estimated from the sample's bytes per row
    rows_exact: bool = False
    files: tuple[str, ...] = ()  # many files read as one source (core.sources.many): each, in load order
    formats: list[str | None] = field(default_factory=list)  # per column: the value format inferred (or None)
    null_counts: dict[str, int] = field(default_factory=dict)  # column -> times the marker stands there (sample)

    def rows_text(self) -> str:
        """'7 rows' or 'about 336,800 rows'."""
        return f"{'' if self.rows_exact else 'about '}{self.rows:,} row{'' if self.rows == 1 else 's'}"

    def counted(self, rows: int) -> SourceInfo:
        """This file's info with its rows as a run or a check counted them (read through to the end)."""
        return replace(self, rows=rows, rows_exact=True)

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
                counts = [f"{c} ({self.null_counts[c]:,}×)" if self.null_counts.get(c) else c for c in kept]
                note += (f"; kept as text in {', '.join(counts)} (free text there; "
                         "NULL everywhere reads it as NULL there too)")
        if o.empty_null_columns:
            note += f"; empty fields are NULL too in {', '.join(o.empty_null_columns)}"
        return note

    def null_kept_note(self) -> str:
        """Where a sniffed marker reads as NULL and where it stays text, and how to change that ('' if everywhere)."""
        o = self.options
        if not o.null or o.null_columns is None:
            return ""
        kept = [c for c in self.columns if c not in set(o.null_columns)]
        if not kept:
            return ""
        counts = [f"{c} ({self.null_counts[c]:,}×)" if self.null_counts.get(c) else c for c in kept]
        n = len(o.null_columns)
        return (f"NULL marker {o.null!r}: read as NULL in {n} column{'s' if n != 1 else ''}; kept as text in "
                f"{', '.join(counts)}, free text where it can be a value. NULL everywhere reads it as NULL "
                "there too.")


def inspect_source(options: SourceOptions, rows: int = 200) -> SourceInfo:
    opts = replace(options)
    source = open_source(opts)
    seen_at: tuple[int, ...] = ()  # the columns where the sniffed NULL marker was seen
    if isinstance(source, SniffedText):
        d = source.dialect
        seen_at = d.null_seen
        opts = replace(
            opts, delimiter=d.delimiter, quote=d.quote, header=d.header, encoding=d.encoding, null=d.null,
            null_columns=source.null_columns,
            empty_null_columns=source.empty_null_columns or None,
        )
    sample, bad, whole = _sample_with_bad(source, rows)
    dtypes = source.dtypes()
    types = [mp.suggested_type(sample[c], dtypes.get(c)) if c in sample.columns else "text" for c in source.columns()]
    seen = [source.columns()[i] for i in seen_at if i < len(source.columns())]
    tables = [(t.target.display(), t.rows) for t in source.tables] if isinstance(source, ScriptTables) else []
    picked = [(t, n) for t, n in tables if opts.script_table in (t, t.split(".")[-1])]
    count, exact = _row_count(source, sample, len(bad), whole, picked or tables)
    files = tuple(str(p.path) for p in source.parts) if isinstance(source, ManySource) else ()
    formats = _formats(source.columns(), sample, types, opts)
    said = report(source) if opts.null else None
    return SourceInfo(opts, source.columns(), sample, types, seen, tables, bad[:BAD_SHOWN], count, exact, files=files,
                      formats=formats, null_counts=said.counts if said is not None else {})


def _formats(columns: list[str], sample: pl.DataFrame, types: list[str], opts: SourceOptions) -> list[str | None]:
    """Each column's value format, as a new table would take it (`types` follow the formats)."""
    from core.column_formats import settle

    if opts.format == "sql":
        return [None] * len(columns)
    maps = [ColumnMap(target=c, source=c, type=t) for c, t in zip(columns, types)]
    settle(maps, sample, opts.column_formats, new_table=True, explicit=False)
    types[:] = [m.type for m in maps]
    return [m.format for m in maps]


def _sample_with_bad(source: Source, rows: int) -> tuple[pl.DataFrame, list[BadRecord], bool]:
    """The first `rows` good rows, the malformed records among them, and whether that was the whole file."""
    if type(source).sample is not Source.sample:
        return source.sample(rows), [], False
    frames: list[pl.DataFrame] = []
    bad: list[BadRecord] = []
    have, whole = 0, True
    for batch in source.batches_with_bad(rows):
        bad.extend(batch.bad)
        frames.append(batch.frame)
        have += batch.frame.height
        if have >= rows:
            whole = False
            break
    if not frames:
        return pl.DataFrame({c: pl.Series(c, [], dtype=pl.String) for c in source.columns()}), bad, True
    frame = (pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]).head(rows)
    # Keep the bad records that stand before the last good row shown (or anywhere, if that was all).
    bad.sort(key=lambda b: b.row)
    kept = [b for i, b in enumerate(bad) if whole or b.row - i < frame.height]
    return frame, kept, whole and have <= rows


def _row_count(
    source: Source, sample: pl.DataFrame, bad: int, whole: bool, tables: list[tuple[str, int]]
) -> tuple[int, bool]:
    """The file's rows: exact where it is cheap (a script's own count, a file read whole already,
    metadata, a frame in memory, a text file small enough to read through), else an estimate."""
    if tables:
        return sum(n for _, n in tables), True
    if whole:
        return sample.height + bad, True
    known = source.known_rows()
    if known is not None:
        return known, True
    if source.size <= EXACT_FILE_BYTES:
        try:  # the reader a load uses: malformed records count as rows, as they do there
            return sum(b.frame.height + len(b.bad) for b in source.batches_with_bad(COUNT_BATCH)), True
        except (SluiceError, pl.exceptions.PolarsError, OSError):
            pass  # the load will say what is wrong; an estimate meanwhile
    if sample.height == 0:
        return 0, False
    per_record = _bytes_per_record(source)
    if per_record:
        return max(sample.height, round(source.size / per_record)), False
    # Bytes per row as the file spells them: field text plus a delimiter each (quotes are not counted).
    text = sample.select(pl.all().cast(pl.String).str.len_bytes().fill_null(0))
    per_row = (float(text.sum_horizontal().sum()) + sample.width * sample.height) / sample.height
    return max(sample.height, round(source.size / max(per_row, 1.0))), False


def _bytes_per_record(source: Source) -> float | None:
    """A CSV's bytes per record in its first few megabytes, quotes and quoted newlines counted
    as they stand (the sample's field text leaves them out); None for other formats."""
    if not isinstance(source, RawCsvChunks):
        return None
    dialect = source.dialect
    try:
        first = next(iter(source.raw_chunks(1 << 20, tolerant=True)), None)
    except (SluiceError, OSError):
        return None
    if first is None:
        return None
    records = count_records(first.data, dialect.quote.encode())
    return len(first.data) / records if records else None


def sample_warnings(sample: pl.DataFrame, maps: Sequence[ColumnMap], *, new_table: bool = True) -> list[str]:
    """One note per column map: the sample values that will not convert to the chosen type, or
    why a column of another type's values is text ('' if nothing to say).

    Checked column-wise on the text each value is sent as, the same for every strategy (a quick
    client-side check; the server has the last word). Impossible dates (2024-02-30) do not
    convert; relative date words (yesterday) are refused in date and time columns.
    """
    notes: list[str] = []
    for m in maps:
        if not m.include or m.source is None or m.source not in sample.columns or sample.height == 0:
            notes.append("")
            continue
        values = mp.pg_text(sample[m.source]).drop_nulls()
        if normalize_type(m.type) == "text":  # a new table's inferred text: say what made it so
            notes.append(text_reason(values) if new_table and sample[m.source].dtype == pl.String else "")
            continue
        if m.format:
            note = _format_misses(values, m.format, sample.height)
            if note:
                notes.append(note)
                continue
            values = _formatted(values, m.format)
        bad = values.filter(refused(values, m.type))
        if bad.len() == 0:
            notes.append("")
            continue
        counts = bad.value_counts(sort=True)
        shown = ", ".join(repr(str(v)[:20]) for v in counts[:, 0].head(3).to_list())
        shown += ", …" if counts.height > 3 else ""
        relative = bool(is_relative(bad).any()) and relative_dates.is_time_type(m.type)
        notes.append(f"{bad.len()} of {sample.height} sample rows not {m.type}: {shown}"
                     + ("; relative date words are refused (not loaded as the day of the load)" if relative else ""))
    return notes


def _formatted(values: pl.Series, name: str) -> pl.Series:
    from core.value_formats import parse_format

    return parse_format(name).apply(values)


def _format_misses(values: pl.Series, name: str, height: int) -> str:
    """'2 of 200 sample rows not DD.MM.YYYY: ...' for the values the format does not read ('' if none)."""
    from core.errors import ConfigError

    try:
        converted = _formatted(values, name)
    except ConfigError as exc:
        return str(exc)
    missed = values.filter(converted.is_null())
    if not missed.len():
        return ""
    shown = ", ".join(repr(str(v)[:20]) for v in missed.unique(maintain_order=True).head(3).to_list())
    return f"{missed.len()} of {height} sample rows not {name}: {shown}"


def ddl_preview(ref: TableRef, maps: list[ColumnMap]) -> str:
    return mp.create_table_sql(ref, maps).as_string(None)


def ddl_renamed(ddl: str, old: TableRef, new: TableRef) -> str | None:
    """A CREATE TABLE text (the user's edit of ddl_preview's) naming `new` instead of `old`.

    None when `old` does not stand in it exactly once as ddl_preview writes it: no safe rename.
    """
    old_text, new_text = (sql.SQL("CREATE TABLE {}").format(r.ident()).as_string(None) for r in (old, new))
    return ddl.replace(old_text, new_text) if ddl.count(old_text) == 1 else None


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


def table_size(dsn: str | None, ref: TableRef) -> TableSize | None:
    """How many rows the table has: counted when small, the planner's estimate when big; None if no table."""
    with connect(resolve_dsn(dsn), autocommit=True) as conn:
        return size_on(conn, ref)


@dataclass(frozen=True)
class TableRows:
    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]


def first_rows(dsn: str | None, ref: TableRef, limit: int = 1000) -> TableRows:
    """The first `limit` rows of a table as text, for a read-only look after a load."""
    with connect(resolve_dsn(dsn), autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(sql.SQL("SELECT * FROM {} LIMIT %s").format(ref.ident()), (limit,))
        desc = cur.description or []
        rows = cur.fetchall()
        cols = table_columns(conn, ref) or []
    types = {c.name: c.type for c in cols}
    return TableRows([d.name for d in desc], [types.get(d.name, "") for d in desc], rows)


def committed(dsn: str | None, source_path: str, ref: TableRef) -> tuple[int, int, int] | None:
    """A per-batch load's committed (source rows, loaded, rejected) from its checkpoint; None if none."""
    from core import checkpoint as ck

    with connect(resolve_dsn(dsn), autocommit=True) as conn:
        state = ck.read(conn, ref, ck.load_key(source_path, ref))
    return None if state is None else (state.rows_done, state.rows_loaded, state.rows_rejected)
