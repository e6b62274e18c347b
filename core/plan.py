"""A load's plan: the source opened, the target looked at, the mapping settled (no writes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from core import mapping as mp
from core import relative_dates
from core.db import TableRef, table_columns
from core.sources.base import Source
from core.sources.empty import EmptySource
from core.sources.factory import open_source
from core.sources.sqlscript.columns import positional_maps
from core.spec import ColumnMap, LoadSpec

if TYPE_CHECKING:
    import polars as pl


@dataclass
class Plan:
    """What the job resolved before sending anything; the window shows it too."""

    source: Source
    target: TableRef
    maps: list[ColumnMap]
    exists: bool
    target_types: dict[str, str]
    generated: tuple[str, ...] = ()  # the target's generated columns (read for SQL scripts only)


def plan_load(spec: LoadSpec, conn: psycopg.Connection[Any] | None = None) -> Plan:
    """Open the source, look at the target and settle the mapping (no writes)."""
    source = open_source(spec.source)
    ref = TableRef(spec.target.table, spec.target.schema)
    existing = table_columns(conn, ref) if conn is not None else None
    if isinstance(source, EmptySource):  # nothing to map (core.load.empty)
        return Plan(source, ref, [], existing is not None, {c.name: c.type for c in existing or []})
    # A script's INSERTs that name no columns fill the table's in order, generated ones included.
    everything = (table_columns(conn, ref, generated=True) or []
                  if conn is not None and existing and source.format == "sql" else [])
    positional = positional_maps(source.columns(), everything) if everything else None
    # Only a new table needs a sample (for its column types): an existing one has its own.
    sample = None if existing or spec.columns or positional else source.sample(500)
    maps = spec.columns or positional or mp.default_mapping(source.columns(), sample, existing)
    maps, source = _formats(spec, source, maps, sample, existing is None)
    mp.validate(maps, source.columns())
    if existing is not None:
        types = {c.name: c.type for c in existing}
    else:
        types = {m.target: m.type for m in mp.included(maps)}
    source.refuse = relative_dates.guard(source, maps, types)  # relative date words: bad values
    return Plan(source, ref, maps, existing is not None, types, tuple(c.name for c in everything if c.generated))


def _formats(spec: LoadSpec, source: Source, maps: list[ColumnMap], sample: pl.DataFrame | None,
             new_table: bool) -> tuple[list[ColumnMap], Source]:
    """Value formats settled on the mapping (core.column_formats), and the source that applies them."""
    from core import column_formats as cf

    if source.format == "sql":
        if spec.source.column_formats:
            from core.errors import ConfigError

            raise ConfigError("--column-format is for files of text values (CSV, JSON, Excel...); a SQL script's "
                              "literals are read as PostgreSQL reads them")
        return maps, source
    explicit = spec.columns is not None
    if sample is None and not explicit and not new_table and any(cf.typed_target(m.type) for m in mp.included(maps)):
        sample = cf.existing_sample(source, maps)  # an existing table's dates and numbers, as the file spells them
    maps = cf.settle(maps, sample, spec.source.column_formats, new_table=new_table, explicit=explicit)
    if not any(m.format for m in mp.included(maps)):
        return maps, source
    from core.sources.formatted import with_formats

    return maps, with_formats(source, maps)
