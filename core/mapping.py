"""Column mapping: which source column feeds which target column, applied column-wise.

Mapped batches are text in PostgreSQL's input syntax (None for NULL): the server
does the final conversion to each target type, so every strategy stores the same
values and no precision is lost on the way.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
from psycopg import sql

from core.db import Column, TableRef
from core.errors import ConfigError
from core.spec import ColumnMap


def pg_text(series: pl.Series) -> pl.Series:
    """A column of any polars type as PostgreSQL input text, column-wise."""
    dt = series.dtype
    if dt == pl.String:
        return series
    if dt == pl.Boolean:
        return series.cast(pl.String)
    if dt.is_integer() or dt.is_decimal():
        return series.cast(pl.String)
    if dt.is_float():
        # polars spells NaN/inf/-inf the way PostgreSQL's float input accepts them.
        return series.cast(pl.String)
    if isinstance(dt, pl.Datetime):
        if dt.time_zone:
            return series.dt.convert_time_zone("UTC").dt.to_string("%Y-%m-%d %H:%M:%S%.f+00:00")
        return series.dt.to_string("%Y-%m-%d %H:%M:%S%.f")
    if dt == pl.Date or dt == pl.Time:
        return series.cast(pl.String)
    if isinstance(dt, pl.Duration):
        return (series.dt.total_microseconds().cast(pl.String) + " microseconds").alias(series.name)
    if dt == pl.Binary:
        return ("\\x" + series.bin.encode("hex")).alias(series.name)
    if isinstance(dt, (pl.List, pl.Array, pl.Struct)):
        return (
            pl.DataFrame({series.name: series})
            .select(pl.col(series.name).map_elements(_json_text, return_dtype=pl.String))
            .to_series()
        )
    if dt == pl.Null:
        return series.cast(pl.String)
    return series.cast(pl.String)


def _json_text(value: object) -> str:
    import json

    return json.dumps(value.to_list() if isinstance(value, pl.Series) else value, default=str)


def suggested_type(series: pl.Series, dtype: pl.DataType | None = None) -> str:
    from core.pgtypes import infer_from_dtype, infer_pg_type

    dt = dtype if dtype is not None else series.dtype
    if isinstance(dt, (pl.List, pl.Array, pl.Struct)):
        return "jsonb"
    if dt == pl.String:
        return infer_pg_type(series)
    return infer_from_dtype(dt)


# PostgreSQL keeps this many bytes of a name (NAMEDATALEN - 1) and silently drops the rest: a new
# table's column made from a longer header was then not found by its full name, and the load failed.
NAME_BYTES = 63


def fitted_name(name: str, limit: int = NAME_BYTES) -> str:
    """The name as PostgreSQL keeps it: at most `limit` bytes of UTF-8, cut between characters."""
    raw = name.encode("utf-8")
    return name if len(raw) <= limit else raw[:limit].decode("utf-8", "ignore")


def new_column_names(source_columns: Sequence[str]) -> list[str]:
    """A new table's column names for the source's: each as PostgreSQL keeps it, and where two
    long names would end alike, the later ones numbered (`..._2`)."""
    names: list[str] = []
    taken: set[str] = set()
    for s in source_columns:
        name, n = fitted_name(s), 2
        while name in taken:
            suffix = f"_{n}"
            name, n = fitted_name(s, NAME_BYTES - len(suffix)) + suffix, n + 1
        taken.add(name)
        names.append(name)
    return names


def default_mapping(
    source_columns: Sequence[str],
    sample: pl.DataFrame | None,
    target_columns: Sequence[Column] | None = None,
) -> list[ColumnMap]:
    """Source columns onto an existing table (by name, else by position) or a new one."""
    if target_columns:
        by_name = {c.name.lower(): c for c in target_columns}
        maps: list[ColumnMap] = []
        # (a name longer than PostgreSQL keeps matches the column a new table would have made of it)
        made = dict(zip(source_columns, new_column_names(source_columns), strict=True))
        matched = [s for s in source_columns if made[s].lower() in by_name]
        if matched:
            for s in source_columns:
                col = by_name.get(made[s].lower())
                maps.append(
                    ColumnMap(
                        target=col.name if col else s, source=s, type=col.type if col else "text", include=bool(col)
                    )
                )
            return maps
        for i, s in enumerate(source_columns):
            col = target_columns[i] if i < len(target_columns) else None
            maps.append(
                ColumnMap(
                    target=col.name if col else s, source=s, type=col.type if col else "text", include=col is not None
                )
            )
        return maps
    return [
        ColumnMap(target=t, source=s,
                  type=suggested_type(sample[s]) if sample is not None and s in sample.columns else "text")
        for s, t in zip(source_columns, new_column_names(source_columns), strict=True)
    ]


def name_key(name: str) -> str:
    """How a person matches column names: case, spaces, underscores and hyphens do not count."""
    return "".join(c for c in name.casefold() if not (c.isspace() or c in "_-"))


def match_by_name(source_columns: Sequence[str], target_columns: Sequence[Column]) -> list[ColumnMap]:
    """Source columns onto an existing table by name only, never by position.

    A source column without a namesake keeps its own name and stays included, so it shows
    as unmatched (see `unmatched`) until the user picks a target column or skips it.
    """
    by_key: dict[str, Column] = {}
    for c in target_columns:
        by_key.setdefault(name_key(c.name), c)
    maps: list[ColumnMap] = []
    for s, made in zip(source_columns, new_column_names(source_columns), strict=True):
        col = by_key.get(name_key(s)) or by_key.get(name_key(made))
        maps.append(ColumnMap(target=col.name if col else s, source=s, type=col.type if col else "text"))
    return maps


def unmatched(maps: Sequence[ColumnMap], target_columns: Sequence[Column] | None) -> list[ColumnMap]:
    """Included columns whose target the existing table does not have (none for a new table)."""
    if target_columns is None:
        return []
    names = {c.name for c in target_columns}
    return [m for m in included(maps) if m.target not in names]


def included(maps: Sequence[ColumnMap]) -> list[ColumnMap]:
    return [m for m in maps if m.include]


def validate(maps: Sequence[ColumnMap], source_columns: Sequence[str]) -> None:
    inc = included(maps)
    if not inc:
        raise ConfigError("the mapping includes no column")
    names = [m.target for m in inc]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"target column named twice in the mapping: {', '.join(dupes)}")
    known = set(source_columns)
    for m in inc:
        if m.source is not None and m.source not in known:
            raise ConfigError(f"mapping names source column {m.source!r}, which the file does not have")
        if not m.target:
            raise ConfigError("a mapped column has an empty target name")


def apply(frame: pl.DataFrame, maps: Sequence[ColumnMap]) -> pl.DataFrame:
    """The batch as target columns of PostgreSQL text, column-wise (no per-row Python)."""
    cols: list[pl.Series] = []
    for m in included(maps):
        if m.source is None:
            cols.append(pl.Series(m.target, [m.constant] * frame.height, dtype=pl.String))
        else:
            cols.append(pg_text(frame.get_column(m.source)).alias(m.target))
    return pl.DataFrame(cols) if cols else pl.DataFrame()


def is_identity(maps: Sequence[ColumnMap], source_columns: Sequence[str]) -> bool:
    """True when every source column goes, in file order, to one target column.

    Then COPY can take the file's own bytes: fields map to target columns by position.
    """
    inc = included(maps)
    return (len(inc) == len(source_columns) and all(m.source == s for m, s in zip(inc, source_columns))
            and not any(m.format for m in inc))  # a value format converts values: the bytes are not the rows


def create_table_sql(ref: TableRef, maps: Sequence[ColumnMap]) -> sql.Composed:
    cols = [sql.SQL("{} {}").format(sql.Identifier(m.target), sql.SQL(_checked_type(m.type))) for m in included(maps)]
    return sql.SQL("CREATE TABLE {} ({})").format(ref.ident(), sql.SQL(", ").join(cols))


def _checked_type(name: str) -> str:
    """Type names go into DDL as SQL text, so only type-name characters pass."""
    import re

    text = name.strip()
    if not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_ ."]*(\(\s*\d+\s*(,\s*-?\d+\s*)?\))?(\s*\[\s*\])*', text):
        raise ConfigError(f"not a type name: {name!r}")
    return text
