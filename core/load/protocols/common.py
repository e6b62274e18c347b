"""What the commit protocols share: small helpers about sources, errors and the target table."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import mapping as mp
from core.db import TableRef, insert_into, table_columns
from core.diagnose import server_reason
from core.errors import ConfigError, ConnectError, SluiceError
from core.sources.base import Source
from core.spec import ColumnMap, LoadMode

if TYPE_CHECKING:
    from core.plan import Plan
    from core.strategies.base import Strategy


def is_format_error(error: psycopg.Error) -> bool:
    """COPY refused the shape of the data (line endings, field count), not a value."""
    return isinstance(error, psycopg.errors.BadCopyFileFormat)


def connection_lost(error: BaseException) -> bool:
    """A dropped or refused connection (worth a retry), as opposed to a refused statement."""
    if isinstance(error, ConnectError):
        return True
    if isinstance(error, psycopg.errors.QueryCanceled):
        return False
    return isinstance(error, psycopg.OperationalError)


def count_records(data: bytes, quote: bytes) -> int:
    """CSV records in `data` (whole records): newlines outside quoted fields, in linear time.

    Only quotes and newlines matter; a run of quotes counts by its parity (a doubled quote
    changes nothing), so what is left alternates outside/inside a quoted field.
    """
    return records_and_lines(data, quote)[0]


def records_and_lines(data: bytes, quote: bytes) -> tuple[int, int]:
    """count_records(), and the newlines `data` holds, in one pass over the bytes."""
    last = 1 if data and not data.endswith(b"\n") else 0  # the file's last record, with no newline
    if not quote or quote not in data:
        lines = data.count(b"\n")
        return lines + last, lines
    if len(quote) == 1:
        data = data.translate(None, _not_newline_or(quote))
    lines = data.count(b"\n")
    if len(quote) == 1:
        data = data.replace(quote + quote, b"")
    return sum(part.count(b"\n") for part in data.split(quote)[::2]) + last, lines


@functools.lru_cache(maxsize=8)
def _not_newline_or(quote: bytes) -> bytes:
    """Every byte but the newline and `quote`: what count_records drops before counting."""
    keep = b"\n" + quote
    return bytes(b for b in range(256) if b not in keep)


def raw_text_columns(plan: Plan) -> list[str]:
    """Target columns where the file's null marker is a value: COPY must not read it as NULL."""
    nulls = getattr(plan.source, "null_columns", None)
    if nulls is None:
        return []
    keep = set(nulls)
    return [m.target for m, s in zip(mp.included(plan.maps), plan.source.columns()) if s not in keep]


def source_is_csv(source: Source) -> bool:
    """A CSV whose own bytes COPY can read as Sluice does. Not one that writes NULL two ways
    (a marker, and empty fields in typed columns): COPY takes one NULL string."""
    return (source.format in ("csv", "tsv") and hasattr(source, "raw_chunks")
            and not getattr(source, "empty_null_columns", None))


def row_values(source: Source, row: int, maps: list[ColumnMap]) -> list[Any] | None:
    try:
        for batch in source.batches(1, skip_rows=row):
            return list(mp.apply(batch.frame, maps).row(0))
    except SluiceError:
        return None
    return None


def user_ddl(text: str) -> sql.SQL:
    """The edited CREATE TABLE runs as written, so it must be one CREATE TABLE statement."""
    import re

    body = text.strip().rstrip(";").strip()
    if not re.match(r"(?is)^CREATE\s+(UNLOGGED\s+)?TABLE\b", body) or ";" in _strip_literals(body):
        raise ConfigError("the new-table DDL must be a single CREATE TABLE statement")
    return sql.SQL(body)


def _strip_literals(text: str) -> str:
    import re

    return re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", "", text)


def drop_table(ctl: psycopg.Connection[Any], ref: TableRef) -> None:
    try:
        ctl.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(ref.ident()))
    except psycopg.Error:
        pass


def ensure_target(ctl: psycopg.Connection[Any], plan: Plan, mode: LoadMode, ddl: str | None) -> bool:
    """Create the table for mode create (True when made here; `ddl`: the user's edited CREATE
    TABLE), or check that it exists."""
    ref = plan.target
    if mode is LoadMode.CREATE:
        if plan.exists:
            raise ConfigError(f"table {ref.display()} already exists; choose append, truncate or upsert")
        create: sql.SQL | sql.Composed = user_ddl(ddl) if ddl else mp.create_table_sql(ref, plan.maps)
        try:
            ctl.execute(create)
        except psycopg.Error as exc:
            raise ConfigError(f"cannot create {ref.display()}: {server_reason(exc)}") from None
        return True
    if not plan.exists:
        raise ConfigError(f"table {ref.display()} does not exist; use mode create to make it")
    return False


def target_columns(ctl: psycopg.Connection[Any], plan: Plan) -> tuple[list[str], dict[str, str]]:
    """The mapped target columns, and every column's type as the table has it."""
    ref = plan.target
    # An existing table's columns were read once, by the plan; a new one is read as made.
    types = dict(plan.target_types) if plan.exists else {c.name: c.type for c in table_columns(ctl, ref) or []}
    targets = [m.target for m in mp.included(plan.maps)]
    missing = [t for t in targets if t not in types]
    if missing:
        raise ConfigError(f"table {ref.display()} has no column {', '.join(map(repr, missing))}")
    return targets, types


def rollback(strategy: Strategy | None) -> None:
    if strategy is not None:
        strategy.rollback()


def move_sql(stage: TableRef, ref: TableRef, cols: list[str], mode: LoadMode, keys: list[str]) -> sql.Composed:
    """INSERT ... SELECT from the staging table; ON CONFLICT on the key for upsert."""
    collist = sql.SQL(", ").join(sql.Identifier(c) for c in cols)
    move = sql.SQL("{} SELECT {} FROM {}").format(insert_into(ref, cols), collist, stage.ident())
    if mode is not LoadMode.UPSERT:
        return move
    rest = [c for c in cols if c not in keys]
    action = (
        sql.SQL("DO UPDATE SET {}").format(
            sql.SQL(", ").join(sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c)) for c in rest)
        )
        if rest
        else sql.SQL("DO NOTHING")
    )
    return sql.SQL("{} ON CONFLICT ({}) {}").format(
        move, sql.SQL(", ").join(sql.Identifier(k) for k in keys), action
    )
