"""Which value format each mapped column gets: the user's, or one the sample proves.

A new table's text columns get a format when every sampled value fits one (and then the type
its converted values come to); an existing table's date, time and number columns get one
when the file spells them otherwise (`15.03.2024` for a date). A mapping given whole (the
window's, a profile's) keeps its own formats. `--column-format col=FORMAT` is laid over any
of them, and `col=` (or `col=text`) clears one.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from core.errors import ConfigError, SourceError
from core.sources.base import Source
from core.spec import ColumnMap

if TYPE_CHECKING:
    from core.value_formats import ValueFormat

_CLEARED = ("", "none", "text")
_KIND_TYPE = {"date": "date", "timestamp": "timestamp", "time": "time", "number": "numeric"}
# Target types each kind of format may feed when it is inferred for an existing table.
_FEEDS = {
    "date": ("date", "timestamp", "timestamptz"),
    "timestamp": ("timestamp", "timestamptz"),
    "time": ("time", "timetz"),
    "number": ("numeric", "integer", "bigint", "smallint", "double precision", "real", "money"),
}
SAMPLE_ROWS = 500


def feeds(kind: str, pg_type: str) -> bool:
    """Whether a format of this kind converts to the target type (inference onto an existing table)."""
    from core.pgtypes import normalize_type

    return normalize_type(pg_type).split("(")[0] in _FEEDS[kind]


def typed_target(pg_type: str) -> bool:
    return any(feeds(kind, pg_type) for kind in _FEEDS)


def settle(
    maps: Sequence[ColumnMap], sample: pl.DataFrame | None, overrides: dict[str, str] | None, *,
    new_table: bool, explicit: bool,
) -> list[ColumnMap]:
    """The maps with their formats (and a new table's types) settled; `explicit`: the user's mapping."""
    overrides = dict(overrides or {})
    _check_names(maps, overrides)
    for m in maps:
        if m.source is None:
            continue
        given = overrides.get(m.source, overrides.get(m.target))
        values = sample[m.source] if sample is not None and m.source in sample.columns else None
        if given is not None:
            _give(m, given, values, new_table)
        elif not explicit and values is not None:
            _infer(m, values, new_table)
    return list(maps)


def _give(m: ColumnMap, text: str, values: pl.Series | None, new_table: bool) -> None:
    from core.value_formats import parse_format

    if text.strip().lower() in _CLEARED:
        if m.format and new_table and values is not None:
            from core.mapping import suggested_type

            m.type = suggested_type(values)
        m.format = None
        return
    fmt = parse_format(text)
    m.format = fmt.name
    if new_table:
        m.type = _type(values, fmt)


def _infer(m: ColumnMap, values: pl.Series, new_table: bool) -> None:
    from core.value_formats import infer

    if not new_table and not typed_target(m.type):
        return  # a text column takes the values as written
    fmt = infer(values, most=not new_table)  # an existing table's date is read as one anyway: misfits are bad rows
    if fmt is None or (not new_table and not feeds(fmt.kind, m.type)):
        return
    m.format = fmt.name
    if new_table:
        m.type = _type(values, fmt)


def _type(values: pl.Series | None, fmt: ValueFormat) -> str:
    """A new table's column type for formatted values: what they convert to, else the format's own."""
    from core.value_formats import type_for

    if values is not None and values.drop_nulls().len():
        found = type_for(values, fmt)
        if found != "text":
            return found
    return _KIND_TYPE[fmt.kind]


def _check_names(maps: Sequence[ColumnMap], overrides: dict[str, str]) -> None:
    known = {m.source for m in maps if m.source is not None} | {m.target for m in maps}
    unknown = [c for c in overrides if c not in known]
    if unknown:
        names = ", ".join(m.source for m in maps if m.source is not None)
        raise ConfigError(f"--column-format names {', '.join(unknown)}, which the file does not have "
                          f"(its columns: {names})")


def existing_sample(source: Source, maps: Sequence[ColumnMap], rows: int = 200) -> pl.DataFrame | None:
    """The first rows of the columns an existing table types (dates, numbers) that the file does
    not spell as PostgreSQL reads them; None when there is none (then polars is not even loaded:
    a CSV's first records are read with Python's csv module, the raw path never needs more)."""
    typed = [m for m in maps if m.include and m.source is not None and typed_target(m.type)]
    if not typed:
        return None
    texts = _first_values(source, rows)
    if texts is None:
        try:
            return source.sample(rows)
        except SourceError:
            return None
    odd = sorted({m.source for m in typed if m.source in texts and not _as_postgres_reads(texts[m.source], m.type)})
    if not odd:
        return None
    return pl.DataFrame({c: pl.Series(c, texts[c], dtype=pl.String) for c in odd})


def _as_postgres_reads(values: list[str | None], pg_type: str) -> bool:
    """Whether every value is in the form PostgreSQL's input reads for this type (ISO dates, plain
    numbers): then no format is asked for. One compiled pattern per column, not per value."""
    from core.pgtypes import _DATE, _DEC, _SPECIAL_FLOAT, _TIME, _TS, _TSTZ

    kind = next(k for k in _FEEDS if feeds(k, pg_type))
    patterns = [re.compile(p) for p in {"number": (_DEC, _SPECIAL_FLOAT), "time": (_TIME,)}.get(
        kind, (_DATE, _TS, _TSTZ))]
    return all(any(p.match(v.strip()) for p in patterns) for v in values if v)


def _first_values(source: Source, rows: int) -> dict[str, list[str | None]] | None:
    """A CSV's first records by column (its NULL marker as None); None for other sources."""
    import csv
    import io

    dialect = getattr(source, "dialect", None)
    raw = getattr(source, "raw_chunks", None)
    if dialect is None or raw is None:
        return None
    columns = source.columns()
    out: dict[str, list[str | None]] = {c: [] for c in columns}
    try:
        chunk = next(iter(raw(64 << 10, tolerant=True)), None)
    except SourceError:
        return out
    if chunk is None:
        return out
    text = chunk.data.decode("utf-8", errors="replace")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=dialect.delimiter, quotechar=dialect.quote or '"')
    try:
        for record in itertools.islice(reader, rows):
            if len(record) != len(columns):
                continue
            for c, v in zip(columns, record):
                out[c].append(None if v == "" or (dialect.null and v == dialect.null) else v)
    except csv.Error:
        pass
    return out


def parse_pairs(items: Sequence[str]) -> dict[str, str]:
    """`col=FORMAT` pairs from the command line (each format checked now)."""
    from core.value_formats import parse_format

    out: dict[str, str] = {}
    for item in items:
        column, eq, text = item.partition("=")
        if not eq or not column.strip():
            raise ConfigError(f"--column-format takes COLUMN=FORMAT (got {item!r}), e.g. order_date=MM/DD/YYYY")
        if text.strip().lower() not in _CLEARED:
            parse_format(text)
        out[column.strip()] = text.strip()
    return out
