"""What the target server can do, and the transaction protocol a multi-connection load takes there.

Several COPY streams are all-or-nothing only through something the server offers:
client two-phase commit (`max_prepared_transactions > 0`, and never on a Citus distributed
table, which refuses a client's PREPARE TRANSACTION), a new table renamed into place, or a
staging table moved into the target in one transaction (distributed and co-located with
the target on Citus, so that move runs on the workers). The plan picks one before a byte
is sent and says why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import psycopg
from psycopg import sql

from core.db import TableRef
from core.errors import ConfigError
from core.janitor import DECISIONS
from core.spec import CommitMode, ErrorPolicy, LoadMode


@dataclass(frozen=True)
class TargetInfo:
    two_phase: bool  # the server takes a client's PREPARE TRANSACTION
    citus: bool  # the Citus extension is installed in this database
    distributed: bool = False  # the target is a Citus distributed (hash/range/append) table
    reference: bool = False  # the target is a Citus reference table
    dist_column: str | None = None
    prepared_free: int = 1 << 30  # prepared-transaction slots not taken (max_prepared_transactions - used)
    decision_ok: bool = True  # this user may write the commit decision beside the target (janitor.DECISIONS)

    def two_phase_blocker(self, branches: int) -> str | None:
        """Why a group of `branches` prepared branches cannot commit here, or None when it can.

        Checked before anything is sent: PREPARE fails when the server's slots are taken, and
        the decision (written between the two phases) fails without the right to write it;
        either would roll back a whole load at its very end.
        """
        if not self.two_phase:
            return "the server has no two-phase commit (max_prepared_transactions = 0)"
        if self.prepared_free < branches:
            return (f"only {max(0, self.prepared_free)} of the server's prepared-transaction slots are free "
                    f"(max_prepared_transactions), and {branches} branches need one each")
        if not self.decision_ok:
            return ("this user may not write the two-phase commit's decision beside the table "
                    f"({DECISIONS}: CREATE on the schema, or INSERT and DELETE on it)")
        return None


class Protocol(StrEnum):
    SINGLE = "single"  # one connection, one transaction
    TWO_PHASE = "two-phase"  # one branch per stream, PREPARE then COMMIT PREPARED
    RENAME = "create-then-rename"  # a new table under a private name, renamed into place
    STAGED = "staged"  # a staging table, moved into the target in one transaction
    CHUNKS = "chunk-commits"  # per-batch: each chunk commits with its own checkpoint row


def inspect(conn: psycopg.Connection[Any], ref: TableRef) -> TargetInfo:
    """Two round trips at most: 2PC and the extension; the partition row only on Citus."""
    book = TableRef(DECISIONS, ref.schema).ident().as_string(conn)
    row = conn.execute(
        "SELECT current_setting('max_prepared_transactions')::int > 0,"
        " EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus'), to_regclass(%s)::oid,"
        " current_setting('max_prepared_transactions')::int - (SELECT count(*) FROM pg_prepared_xacts),"
        " COALESCE(has_table_privilege(to_regclass(%s), 'INSERT') AND has_table_privilege(to_regclass(%s), 'DELETE'),"
        "          has_schema_privilege(COALESCE(%s, current_schema()), 'CREATE'))",
        [ref.ident().as_string(conn), book, book, ref.schema],
    ).fetchone()
    assert row is not None
    two_phase, citus, oid = bool(row[0]), bool(row[1]), row[2]
    base = TargetInfo(two_phase, citus, prepared_free=int(row[3]), decision_ok=bool(row[4]))
    if not citus or oid is None:
        return base
    part = conn.execute(
        "SELECT partmethod::text, CASE WHEN partmethod <> 'n' THEN column_to_column_name(logicalrelid, partkey) END"
        " FROM pg_dist_partition WHERE logicalrelid = %s",
        [oid],
    ).fetchone()
    if part is None:
        return base
    method, column = part
    if method == "n":
        return replace(base, reference=True)
    return replace(base, distributed=True, dist_column=column)


@dataclass(frozen=True)
class Choice:
    protocol: Protocol
    reason: str  # said before the run (log, --json `reason`, the window)
    once: str = ""  # through a staging table: what would write each row once instead

    @property
    def writes_twice(self) -> bool:
        """Every row written twice: into the staging table, then again by the one transaction that
        moves them into the target (said before the run; --json `writes_twice`)."""
        return self.protocol is Protocol.STAGED


TWICE = "every row is written twice (into the unlogged staging table, then into the target)"
ONE_CONNECTION = "a one-connection strategy such as copy-csv or copy-binary"


def _staged(why: str, once: str) -> Choice:
    """A staging table, and the reason in words: why, that it writes every row twice, what would not."""
    return Choice(Protocol.STAGED, f"{why}; {TWICE}. Written once instead: {once}", once)


def choose(
    *, multi_connection: bool, chunk_commits: bool, mode: LoadMode, commit: CommitMode, on_error: ErrorPolicy,
    info: TargetInfo, dry_run: bool = False, branches: int = 2,
) -> Choice | None:
    """The protocol for a multi-connection load, or None for a one-connection strategy.

    Raises ConfigError, naming the reason and an alternative, for a combination that
    cannot work; nothing has been sent then.
    """
    if not multi_connection:
        return None
    if commit is CommitMode.PER_BATCH:
        if not chunk_commits:
            raise ConfigError("per-batch commits need a strategy that commits chunk by chunk on every stream")
        if mode is LoadMode.UPSERT:
            raise ConfigError(
                "per-batch commits over several streams do not do upsert (each stream would need its own "
                "ON CONFLICT pass, and two streams could update the same key in either order); use "
                "--commit single, or a one-connection strategy such as copy-csv with --commit per-batch"
            )
        return Choice(Protocol.CHUNKS, "each stream commits its chunks one by one, each with its own "
                                       "checkpoint row; --resume loads exactly the chunks that are missing")
    skip = on_error is ErrorPolicy.SKIP
    if mode is LoadMode.CREATE:
        return Choice(Protocol.RENAME, "create mode: the streams load a new table under a private name, renamed "
                                       "into place in one short transaction at the end (dropped on failure)")
    per_batch = "--commit per-batch (each stream commits its own chunks)"
    if info.distributed:
        where = f"distributed by {info.dist_column!r}, " if info.dist_column else ""
        return _staged(f"the target is a Citus distributed table ({where}which refuses a client's PREPARE "
                       "TRANSACTION): the streams load a staging table distributed and co-located with it, and "
                       "INSERT ... SELECT moves the rows on the workers in one transaction",
                       f"{per_batch}, or {ONE_CONNECTION}")
    if mode is LoadMode.UPSERT:
        return _staged("upsert mode needs one final ON CONFLICT pass, so the streams load a staging table moved "
                       "into the target in one transaction",
                       "--mode append only (upsert on one connection goes through a table too)")
    if mode is LoadMode.TRUNCATE:
        return _staged("truncate mode empties the target and fills it in one final transaction, so the streams load "
                       "a staging table moved into the target by that transaction", f"{per_batch}, or {ONE_CONNECTION}")
    if skip:
        return _staged("the skip policy isolates bad rows chunk by chunk, so the streams load a staging table "
                       "moved into the target in one transaction",
                       f"{per_batch}, --on-error abort with --mode create or two-phase commit, or {ONE_CONNECTION}")
    if info.reference:
        return _staged("the target is a Citus reference table (no client PREPARE TRANSACTION): the streams load a "
                       "staging table moved into it in one transaction", f"{per_batch}, or {ONE_CONNECTION}")
    blocker = info.two_phase_blocker(branches)
    if blocker is None and not dry_run:
        return Choice(Protocol.TWO_PHASE, "the server allows two-phase commit: one prepared branch per stream, "
                                          "committed together, each row written once")
    if blocker is None:
        return _staged("a check prepares nothing, so the streams load a staging table kept until one transaction "
                       "moves it into the target, rolled back at the end",
                       "the load itself, not a check (two-phase commit here)")
    lift = ("max_prepared_transactions > 0 on the server (two-phase commit)" if not info.two_phase
            else "two-phase commit once that is lifted")
    return _staged(f"{blocker}, so the streams load a staging table kept until one transaction moves it into "
                   "the target", f"--mode create (a new table renamed into place), {per_batch}, {lift}, "
                   f"or {ONE_CONNECTION}")


def distribute_like(conn: psycopg.Connection[Any], stage: TableRef, target: TableRef, info: TargetInfo) -> None:
    """Make the staging table distributed and co-located with the target (Citus)."""
    if not info.distributed or info.dist_column is None:
        return
    conn.execute(
        "SELECT create_distributed_table(%s, %s, colocate_with => %s)",
        [stage.ident().as_string(conn), info.dist_column, target.ident().as_string(conn)],
    )


def rename_into_place(conn: psycopg.Connection[Any], private: TableRef, target: TableRef) -> None:
    """One short transaction: the loaded table takes the target's name (which must still be free)."""
    with conn.transaction():
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [target.ident().as_string(conn)]).fetchone()
        if row and row[0]:
            raise ConfigError(f"table {target.display()} appeared during the load; the loaded rows were dropped")
        conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(private.ident(), sql.Identifier(target.name)))
