"""Data-only SQL scripts (pg_dump's shapes), read into rows and never executed.

The whole script is read when the source opens: what is not data is refused then,
with its line, before anything is sent, and the tables it fills are listed with their
row counts. A script may fill several tables; `SourceOptions.script_table` picks one
(by `schema.table` or `table`), and without it a script of several tables loads them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import polars as pl

from core.errors import ConfigError, SourceError
from core.sources.base import Batch, Source
from core.sources.sqlscript.chunks import Chunk, CsvChunk, ParsedChunk, TableInfo
from core.sources.sqlscript.columns import placeholder_names
from core.sources.sqlscript.copy_blocks import CopyChunk
from core.sources.sqlscript.reader import InsertTarget, ScriptError, iter_script, scan_script
from core.spec import SourceOptions

CACHE_LIMIT = 256 << 20  # scripts up to this size keep the rows read while checking them, for the load

# `SET client_encoding = '...'` as pg_dump writes it (-E/--encoding): PostgreSQL's name, Python's codec.
_CLIENT_ENCODING = re.compile(rb"^SET client_encoding = '([A-Za-z0-9_]+)';", re.MULTILINE)
_PG_CODECS = {
    "UTF8": "utf-8", "UNICODE": "utf-8", "SQL_ASCII": "utf-8", "LATIN1": "latin-1", "LATIN2": "iso8859-2",
    "LATIN3": "iso8859-3", "LATIN4": "iso8859-4", "LATIN5": "iso8859-9", "LATIN6": "iso8859-10",
    "LATIN7": "iso8859-13", "LATIN8": "iso8859-14", "LATIN9": "iso8859-15", "LATIN10": "iso8859-16",
    "ISO_8859_5": "iso8859-5", "ISO_8859_6": "iso8859-6", "ISO_8859_7": "iso8859-7", "ISO_8859_8": "iso8859-8",
    "WIN866": "cp866", "WIN874": "cp874", "WIN1250": "cp1250", "WIN1251": "cp1251", "WIN1252": "cp1252",
    "WIN1253": "cp1253", "WIN1254": "cp1254", "WIN1255": "cp1255", "WIN1256": "cp1256", "WIN1257": "cp1257",
    "WIN1258": "cp1258", "KOI8R": "koi8-r", "KOI8U": "koi8-u",
}


def script_encoding(path: str, head_bytes: int = 64 << 10) -> str:
    """The encoding the script says it is in (pg_dump -E writes `SET client_encoding` first), else UTF-8;
    single-byte encodings and UTF-8 only.

    SQL_ASCII is read as UTF-8: PostgreSQL converts nothing from it, and a byte that is not
    UTF-8 is refused with its line rather than guessed at.
    """
    with open(path, "rb") as f:
        head = f.read(head_bytes)
    m = _CLIENT_ENCODING.search(head)
    if m is None:
        return "utf-8"
    name = m.group(1).decode("ascii").upper()
    codec = _PG_CODECS.get(name)
    if codec is None:
        # Multi-byte encodings such as SJIS can hide a quote or backslash byte inside a character,
        # which the script's byte-level scanning would misread: they are converted first.
        raise ConfigError(f"{path}: the script is in the encoding {name}, which Sluice does not read; "
                          f"convert it to UTF-8 first (iconv -f {name} -t UTF-8)")
    return codec


class SqlScriptSource(Source):
    format = "sql"

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        self.encoding = options.encoding or script_encoding(str(self.path))
        self.tables, self._cache = _read(str(self.path), self.encoding, self.fingerprint.size,
                                         self.fingerprint.mtime_ns)
        if not self.tables:
            raise SourceError("the script has no INSERT statement or COPY block", path=str(self.path), line=1)
        self.selected = self._select(options.script_table)
        first = self.selected[0]
        self.target: InsertTarget = first.target
        self.statements, self.rows = first.statements, first.rows
        self._columns = list(first.target.columns or placeholder_names(max(first.width, 0)))

    def _errors(self) -> _ScriptErrors:
        return _ScriptErrors(str(self.path))

    def _select(self, name: str | None) -> list[TableInfo]:
        if not name:
            return list(self.tables)
        for t in self.tables:
            if name in (t.target.display(), t.target.table):
                return [t]
        names = ", ".join(t.target.display() for t in self.tables)
        raise ConfigError(f"the script fills no table {name!r}; it fills {names}")

    @property
    def several(self) -> bool:
        """More than one table is to be loaded (each into its own table)."""
        return len(self.selected) > 1

    @property
    def on_conflict(self) -> bool:
        return any(t.on_conflict for t in self.selected)

    def columns(self) -> list[str]:
        return list(self._columns)

    @property
    def has_column_list(self) -> bool:
        return bool(self.target.columns)

    def load_chunks(self) -> Iterator[Chunk]:
        """The selected tables' rows in file order: COPY blocks as they are, INSERT rows as CSV."""
        keys = {t.target.key for t in self.selected}
        if self._cache is not None:
            yield from (c for c in self._cache if c.target.key in keys)
            return
        with self._errors():
            yield from scan_script(str(self.path), encoding=self.encoding, csv=True, trusted=True,
                                   want=lambda t: t.key in keys)

    def chunks(self, rows_per_chunk: int) -> Iterator[ParsedChunk]:
        if self.several:
            names = ", ".join(t.describe() for t in self.selected)
            raise ConfigError(
                f"the script fills {len(self.selected)} tables ({names}); this needs one: pick it (--script-table)"
            )
        with self._errors():
            yield from iter_script(str(self.path), encoding=self.encoding, rows_per_chunk=rows_per_chunk,
                                   table=self.target)

    def sample(self, rows: int = 200) -> pl.DataFrame:
        """The first rows of the first selected table (also when several are selected)."""
        frames, have = [], 0
        with self._errors():
            for chunk in iter_script(str(self.path), encoding=self.encoding, rows_per_chunk=rows, table=self.target):
                frames.append(chunk.frame)
                have += chunk.frame.height
                if have >= rows:
                    break
        if not frames:
            return pl.DataFrame({c: pl.Series(c, [], dtype=pl.String) for c in self._columns})
        frame = pl.concat(frames) if len(frames) > 1 else frames[0]
        return frame.head(rows).rename(dict(zip(frame.columns, self._columns)))

    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        row = 0
        for chunk in self.chunks(batch_rows):
            n = len(chunk.lines)
            if row + n <= skip_rows:
                row += n
                continue
            frame = chunk.frame.rename(dict(zip(chunk.frame.columns, self._columns)))
            lines = chunk.lines
            if row < skip_rows:
                cut = skip_rows - row
                frame, lines, row = frame.slice(cut), lines[cut:], skip_rows
            for start in range(0, frame.height, max(1, batch_rows)):
                part = frame.slice(start, batch_rows)
                yield Batch(part, row, chunk.bytes_end, lines[start : start + batch_rows])
                row += part.height

    def locate(self, row: int) -> tuple[int | None, str | None]:
        seen = 0
        for chunk in self.chunks(10_000):
            n = len(chunk.lines)
            if seen + n > row:
                line = chunk.lines[row - seen]
                return line, _line_text(str(self.path), line, self.encoding)
            seen += n
        return None, None


_LAST: dict[tuple[str, str, int, int], tuple[list[TableInfo], list[Chunk] | None]] = {}


def _read(path: str, encoding: str, size: int, mtime_ns: int) -> tuple[list[TableInfo], list[Chunk] | None]:
    """Check the whole script once; the last script read is kept, so opening it again costs nothing."""
    key = (path, encoding, size, mtime_ns)
    if key in _LAST:
        return _LAST[key]
    tables: list[TableInfo] = []
    cache: list[Chunk] | None = [] if size <= CACHE_LIMIT else None
    with _ScriptErrors(path):
        for chunk in scan_script(path, encoding=encoding, tables=tables, csv=True, want=lambda _t: cache is not None):
            if cache is not None:
                cache.append(chunk)
    _LAST.clear()
    _LAST[key] = (tables, cache)
    return tables, cache


class _ScriptErrors:
    """Parser errors as SourceErrors naming the file and line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, ScriptError):
            raise SourceError(exc.message + (f": {exc.statement_excerpt}" if exc.statement_excerpt else ""),
                              path=self.path, line=exc.line) from None
        if isinstance(exc, (OSError, UnicodeError)):
            raise SourceError(f"cannot read the file: {exc}", path=self.path) from None


def _line_text(path: str, line: int, encoding: str) -> str | None:
    try:
        with open(path, encoding=encoding, errors="replace") as f:
            for n, text in enumerate(f, start=1):
                if n == line:
                    return text.rstrip("\r\n")
    except OSError:
        return None
    return None


__all__ = ["CopyChunk", "CsvChunk", "ParsedChunk", "SqlScriptSource"]
