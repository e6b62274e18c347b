"""What the commit protocols share: small helpers about sources, errors and the target table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import mapping as mp
from core.db import TableRef, insert_into, table_columns
from core.diagnose import server_reason
from core.errors import ConfigError, ConnectError
from core.sources.abilities import RawCsvChunks
from core.spec import LoadMode

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


def raw_text_columns(plan: Plan) -> list[str]:
    """Target columns where the file's null marker is a value: COPY must not read it as NULL."""
    nulls = plan.source.null_columns if isinstance(plan.source, RawCsvChunks) else None
    if nulls is None:
        return []
    keep = set(nulls)
    return [m.target for m, s in zip(mp.included(plan.maps), plan.source.columns()) if s not in keep]


def raw_copy_options(source: RawCsvChunks) -> dict[str, str]:
    """COPY's options for the source's own bytes. The reader hands COPY UTF-8 whatever the
    file's encoding: ENCODING says so, so the server converts to the database's encoding
    (or refuses what it cannot store)."""
    d = source.dialect
    if source.format == "pgtext":  # COPY's own text format: no quote (core.sources.pgtext)
        return {"format": "text", "delimiter": d.delimiter, "null": d.null, "encoding": "UTF8"}
    return {"delimiter": d.delimiter, "quote": d.quote, "null": d.null, "encoding": "UTF8"}


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
