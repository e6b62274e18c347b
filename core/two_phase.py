"""One transaction over several connections: each is a branch of a two-phase commit group.

The sequence both users share (parallel-copy's streams, a script's COPY block cut in two):
each connection joins before its first statement (`tpc_begin` with the group's gtrid); at
the end every branch is prepared, the decision to commit is recorded, then every branch
commits. While this session lives it holds the group's advisory lock, so another process's
janitor leaves the prepared branches alone; if this process dies between the two phases,
the janitor finishes the group the way it was decided (core/janitor.py).
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg

from core import janitor
from core.db import connect

LOCK_WAIT = "5s"
LOCK_TIMEOUT = f"-c lock_timeout={LOCK_WAIT}"
"""For every branch: in one open transaction per branch, a key repeated across branches makes one
branch wait on another's open transaction, which only ends at our commit: a wait no server sees
as a deadlock. A lock timeout turns it into an error."""


class TwoPhaseGroup:
    """Branches of one transaction; `size` names them `i/size` (janitor reads only the gtrid)."""

    def __init__(self, dsn: str, schema: str | None, size: int) -> None:
        self.dsn, self.schema, self.size = dsn, schema, size
        self.gtrid = f"sluice-{uuid.uuid4().hex[:16]}"
        self.branches: list[psycopg.Connection[Any]] = []
        self._lock_conn: psycopg.Connection[Any] | None = None
        self._joining = threading.Lock()

    def join(self, conn: psycopg.Connection[Any]) -> None:
        """`conn` (idle, no statement sent yet) becomes the next branch."""
        with self._joining:
            if self.branches and self._lock_conn is None:
                # From the second branch on, a prepared branch can outlive us: hold the group.
                self._lock_conn = connect(self.dsn, autocommit=True)
                janitor.hold(self._lock_conn, self.gtrid)
            conn.tpc_begin(conn.xid(1, self.gtrid, f"{len(self.branches)}/{self.size}"))
            self.branches.append(conn)

    def commit(self) -> None:
        if len(self.branches) == 1:
            self.branches[0].tpc_commit()  # one branch: a plain commit, nothing to coordinate
            return
        for c in self.branches:
            c.tpc_prepare()
        # The decision is durable before the first branch commits, so a janitor finishing
        # after a crash knows to commit the rest rather than roll back what is left.
        assert self._lock_conn is not None
        janitor.record_commit_decision(self._lock_conn, self.schema, self.gtrid)
        for c in self.branches:
            c.tpc_commit()
        janitor.forget_decision(self._lock_conn, self.schema, self.gtrid)

    def rollback(self) -> None:
        """Every branch rolled back, prepared or not; a closed or broken one is left to the server."""
        for c in self.branches:
            if c.closed:
                continue
            try:
                c.tpc_rollback()
            except psycopg.Error:
                pass

    def close(self) -> None:
        """Let go of the group's lock (the branches are their owner's to close)."""
        lock, self._lock_conn = self._lock_conn, None
        if lock is not None:
            lock.close()
