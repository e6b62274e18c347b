"""Clean up what a killed Sluice process leaves in the database, and only that.

A live job holds a session advisory lock on the name of every scratch object it owns
(staging and compare tables, two-phase commit groups). The lock goes away with the
session, so when the janitor can take it, the owner is gone and the object is garbage.

Two-phase commit groups are resolved the way their leader would have: if the leader
recorded its decision to commit (after every branch was prepared) the remaining
branches are committed; otherwise every branch is rolled back. A table is then either
fully loaded or untouched, never half.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import psycopg
from psycopg import Xid, sql

from core.db import TableRef

LOCK_SPACE = 4_242  # first key of every advisory lock Sluice takes
DECISIONS = "_sluice_2pc"  # beside the target table: gtrids whose commit was decided
SCRATCH_PREFIXES = ("_sluice_stage_", "_sluice_cmp_")


def hold(conn: psycopg.Connection[Any], name: str) -> None:
    """Mark `name` as owned by this session (until it ends)."""
    conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [LOCK_SPACE, name])


def release(conn: psycopg.Connection[Any], name: str) -> None:
    conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [LOCK_SPACE, name])


def _orphaned(conn: psycopg.Connection[Any], name: str) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", [LOCK_SPACE, name]).fetchone()
    return bool(row and row[0])


def record_commit_decision(conn: psycopg.Connection[Any], schema: str | None, gtrid: str) -> None:
    """Every branch is prepared: write down that this group commits (autocommit connection)."""
    book = TableRef(DECISIONS, schema).ident()
    conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} (gtrid text PRIMARY KEY, decided_at timestamptz "
                         "NOT NULL DEFAULT now())").format(book))
    conn.execute(sql.SQL("INSERT INTO {} (gtrid) VALUES (%s) ON CONFLICT DO NOTHING").format(book), [gtrid])


def forget_decision(conn: psycopg.Connection[Any], schema: str | None, gtrid: str) -> None:
    conn.execute(sql.SQL("DELETE FROM {} WHERE gtrid = %s").format(TableRef(DECISIONS, schema).ident()), [gtrid])


def sweep(conn: psycopg.Connection[Any]) -> list[str]:
    """Resolve orphaned prepared transactions and drop orphaned scratch tables; say what was done.

    `conn` must be in autocommit mode. One round trip when there is nothing to do (every load
    sweeps, and over a slow link each round trip counts). Errors (e.g. missing privileges)
    leave things as they are.
    """
    done: list[str] = []
    try:
        groups: dict[str, list[str]] = defaultdict(list)
        tables: list[tuple[str, str]] = []
        for kind, a, b in conn.execute(_CANDIDATES, [[p.replace("_", "\\_") + "%" for p in SCRATCH_PREFIXES]]):
            if kind == "xact":
                gtrid = _parse_gid(a)
                if gtrid is not None:
                    groups[gtrid].append(a)
            else:
                tables.append((a, b))
        if groups:
            done += _resolve_prepared(conn, groups)
        done += _drop_scratch(conn, tables)
    except psycopg.Error:
        pass
    return done


_CANDIDATES = (
    "SELECT 'xact', gid, NULL FROM pg_prepared_xacts WHERE database = current_database() "
    "UNION ALL SELECT 'table', n.nspname, c.relname FROM pg_class c JOIN pg_namespace n "
    "ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND c.relpersistence <> 't' AND c.relname LIKE ANY(%s)"
)


def _drop_scratch(conn: psycopg.Connection[Any], tables: list[tuple[str, str]]) -> list[str]:
    done = []
    for schema, name in tables:
        if not _orphaned(conn, name):
            continue  # its job is alive
        try:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(schema, name)))
            done.append(f"dropped {schema}.{name}, left by a load that did not finish")
        finally:
            release(conn, name)
    return done


def _resolve_prepared(conn: psycopg.Connection[Any], groups: dict[str, list[str]]) -> list[str]:
    done = []
    decided = _decisions(conn)
    for gtrid, gids in groups.items():
        if not _orphaned(conn, gtrid):
            continue  # its leader is alive and finishing it
        try:
            commit = gtrid in decided
            finish = sql.SQL("COMMIT PREPARED {}" if commit else "ROLLBACK PREPARED {}")
            for gid in gids:
                conn.execute(finish.format(sql.Literal(gid)))  # utility statement: no parameters
            if commit:
                forget_decision(conn, decided[gtrid], gtrid)
            done.append(
                f"{'committed' if commit else 'rolled back'} {len(gids)} prepared transaction(s) of {gtrid}, "
                "left by a load over several connections (parallel-copy, or a script's split COPY block) whose "
                "process ended between its two commit phases"
            )
        finally:
            release(conn, gtrid)
    return done


def _decisions(conn: psycopg.Connection[Any]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for (schema,) in conn.execute(
        "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relname = %s AND c.relkind = 'r'", [DECISIONS]
    ).fetchall():
        for (gtrid,) in conn.execute(sql.SQL("SELECT gtrid FROM {}").format(sql.Identifier(schema, DECISIONS))):
            out[gtrid] = schema
    return out


def _parse_gid(gid: str) -> str | None:
    """The gtrid of a psycopg XA-format gid made by parallel-copy, else None (not ours)."""
    try:
        xid = Xid.from_string(gid)
    except Exception:  # noqa: BLE001 - any other product's gid
        return None
    gtrid = xid.gtrid
    return gtrid if isinstance(gtrid, str) and gtrid.startswith("sluice-") else None
