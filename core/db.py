"""Connections, names and table introspection. All SQL is composed with psycopg.sql."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from core.errors import ConfigError, ConnectError


class _QuietPipelineAbort(logging.Filter):
    """Drops psycopg's "error ignored terminating <Pipeline>: pipeline aborted" warning.

    A statement refused inside a pipeline (the skip policy's isolation, executemany) aborts the
    pipeline, and leaving its block then logs that warning although the statement's own error
    is already raised and handled: three lines on stderr per rejected row. The load says what
    happened once (its rejects); other warnings of psycopg's logger pass.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (record.msg == "error ignored terminating %r: %s" and args
                    and isinstance(args[-1], psycopg.errors.PipelineAborted))


logging.getLogger("psycopg").addFilter(_QuietPipelineAbort())


def strip_password(dsn: str) -> str:
    """The DSN without its password, for profiles, logs and messages."""
    if not dsn:
        return dsn
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"not a valid connection string: {exc}") from None
    params.pop("password", None)
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


def resolve_dsn(dsn: str | None) -> str:
    """The given DSN, or the embedded server's when none is given."""
    if dsn:
        return dsn
    from core.embedded import embedded_uri

    return embedded_uri()


def connect(dsn: str, *, autocommit: bool = False, **kwargs: Any) -> psycopg.Connection[Any]:
    # A name the server shows in pg_stat_activity, so an operator can see (or stop) a load.
    kwargs.setdefault("application_name", "sluice")
    # Every value Sluice sends is UTF-8 (sources are transcoded on reading): say so, so the
    # server converts it to the database's encoding, or refuses a character it cannot store,
    # instead of taking the bytes as its own encoding.
    kwargs.setdefault("client_encoding", "UTF8")
    if "options" in kwargs:
        # A keyword replaces the DSN's own `options` (a user's datestyle or timezone, which
        # decide how the server reads dates): ours go after theirs.
        merged = _merged_options(dsn, kwargs.pop("options") or "")
        if merged:
            kwargs["options"] = merged
    try:
        conn = psycopg.connect(dsn, autocommit=autocommit, **kwargs)
    except psycopg.ProgrammingError as exc:  # libpq could not read the string itself
        raise ConfigError(f"not a valid connection string: {str(exc).strip()}") from None
    except psycopg.OperationalError as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConnectError(f"cannot connect to {strip_password(dsn) or 'the server'}: {msg}") from None
    _widen_unix_send_buffer(conn)
    return conn


# The zone names PostgreSQL knows for UTC itself (no offset, no daylight saving, ever).
_UTC_ZONES = frozenset({"utc", "etc/utc", "uct", "etc/uct", "universal", "etc/universal", "zulu", "etc/zulu",
                        "gmt", "etc/gmt", "gmt0", "etc/gmt0", "gmt+0", "etc/gmt+0", "gmt-0", "etc/gmt-0",
                        "greenwich", "etc/greenwich"})


def session_is_utc(conn: psycopg.Connection[Any]) -> bool:
    """Whether the session reads a timestamptz with no offset as UTC: its TimeZone (which the server
    reports at connect, after the DSN's options and PGTZ) is UTC under one of its names."""
    return (conn.info.parameter_status("TimeZone") or "").lower() in _UTC_ZONES


def _merged_options(dsn: str, ours: str) -> str:
    try:
        given = conninfo_to_dict(dsn).get("options") or ""
    except psycopg.ProgrammingError:
        given = ""
    return f"{given} {ours}".strip()


UNIX_SEND_BUFFER = 4 << 20


def _widen_unix_send_buffer(conn: psycopg.Connection[Any]) -> None:
    """A larger kernel send buffer on a Unix-socket connection (the embedded server's).

    Loopback TCP grows its buffers by itself; a Unix socket keeps about 200 kB, so a COPY
    stream's sending thread blocks and wakes (taking the GIL back from the parsing and
    encoding threads) every few hundred rows. Measured on 1M mixed rows with copy-binary
    against the embedded server, interleaved: 1.53-1.68 s with the default, 1.43-1.56 s with
    4 MB (medians of 7: 1.57 and 1.49 s; the kernel caps it at net.core.wmem_max). TCP
    connections are left alone: setting the size would turn their autotuning off.
    """
    import socket

    try:
        sock = socket.socket(fileno=conn.fileno())
    except OSError:
        return
    try:
        if sock.family == getattr(socket, "AF_UNIX", None):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, UNIX_SEND_BUFFER)
    except OSError:
        pass  # a size the system refuses: the default still works
    finally:
        sock.detach()  # the descriptor stays libpq's


@dataclass(frozen=True)
class TableRef:
    """A table name taken literally: it may hold dots, quotes or spaces."""

    name: str
    schema: str | None = None

    def ident(self) -> sql.Identifier:
        return sql.Identifier(self.schema, self.name) if self.schema else sql.Identifier(self.name)

    def display(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # as format_type() spells it
    not_null: bool = False
    generated: bool = False  # GENERATED ALWAYS AS (...): the server computes it, nothing writes it


def insert_into(table: TableRef, columns: Sequence[str]) -> sql.Composed:
    """`INSERT INTO t (cols) OVERRIDING SYSTEM VALUE`: the file's values land in identity
    columns declared GENERATED ALWAYS too, as COPY (and pg_dump's own INSERTs) put them, so
    every strategy stores the same rows (the clause changes nothing on other tables)."""
    return sql.SQL("INSERT INTO {} ({}) OVERRIDING SYSTEM VALUE").format(
        table.ident(), sql.SQL(", ").join(sql.Identifier(c) for c in columns))


def table_columns(conn: psycopg.Connection[Any], ref: TableRef, *, generated: bool = False) -> list[Column] | None:
    """The table's columns in order, or None when there is no such table. Generated columns
    only with `generated` (a script's positional INSERTs count them: pg_dump writes DEFAULT there)."""
    # to_regclass takes the name as text: pass it quoted so dots and quotes stay literal.
    qualified = ref.ident().as_string(conn)
    rows = conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attgenerated <> ''"
        " FROM pg_attribute a WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0"
        " AND NOT a.attisdropped AND (%s OR a.attgenerated = '') ORDER BY a.attnum",
        (qualified, generated),
    ).fetchall()
    if not rows:
        exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (qualified,)).fetchone()
        return [] if exists and exists[0] else None
    return [Column(r[0], r[1], bool(r[2]), bool(r[3])) for r in rows]


def list_schemas(conn: psycopg.Connection[Any]) -> list[str]:
    rows = conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' "
        "AND nspname <> 'information_schema' ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def list_tables(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND c.relname NOT LIKE '\\_sluice\\_%%'"
        " ORDER BY 1",
        (schema,),
    ).fetchall()
    return [r[0] for r in rows]


def supports_two_phase(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SHOW max_prepared_transactions").fetchone()
    return bool(row and int(row[0]) > 0)


def server_version(conn: psycopg.Connection[Any]) -> int:
    return conn.info.server_version
