"""The history of runs: every load, check and comparison, from the window and the command line.

One SQLite file in the data directory (`history.sqlite3`), so the history outlives the window
and a headless `python -m app load` shows in it. Several writers at once (a window and a CLI
run) are safe: each write is one short transaction, the file is in WAL mode and a writer waits
for a busy lock instead of failing. A file written by a newer Sluice (a higher schema version)
is read-only here. No Qt: the window and the CLI both use it.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import SluiceError

if TYPE_CHECKING:
    from core.result import LoadResult
    from core.spec import LoadSpec

SCHEMA_VERSION = 1
# A pragma takes no parameters: the statement is a fixed string, kept beside the number it sets.
_SET_VERSION = "PRAGMA user_version = 1"
assert _SET_VERSION.endswith(f" {SCHEMA_VERSION}")
FILE_NAME = "history.sqlite3"
BUSY_TIMEOUT_S = 10.0  # a writer waits this long for another's lock
_CORRUPT, _NOT_A_DATABASE = 11, 26  # SQLite's result codes for a broken file

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,                 -- local time, ISO 8601
    origin TEXT NOT NULL,             -- window or cli
    kind TEXT NOT NULL,               -- load, check or compare
    source TEXT NOT NULL,             -- the file's path
    target TEXT NOT NULL,             -- the table (schema.table), or a script's tables
    mode TEXT NOT NULL,
    strategy TEXT NOT NULL,           -- as asked, with auto's pick: "auto → copy-csv"
    rows_read INTEGER,
    rows_loaded INTEGER,
    rows_rejected INTEGER,
    seconds REAL,
    rows_per_s REAL,
    outcome TEXT NOT NULL,            -- loaded, checked, failed, cancelled, not started, compared
    note TEXT NOT NULL,               -- the error, or what else there is to say
    tables TEXT NOT NULL DEFAULT '[]',  -- JSON [[table, rows], ...] for a script that fills several
    reject_file TEXT
)
"""


class HistoryError(SluiceError):
    """The history file cannot be read or written (locked too long, corrupt, from a newer Sluice)."""


@dataclass(frozen=True)
class Entry:
    """One run as the history keeps it."""

    kind: str
    source: str
    target: str
    mode: str
    strategy: str
    outcome: str
    rows_read: int | None = None
    rows_loaded: int | None = None
    rows_rejected: int | None = None
    seconds: float | None = None
    rows_per_s: float | None = None
    note: str = ""
    tables: tuple[tuple[str, int], ...] = ()
    reject_file: str | None = None
    origin: str = "window"
    at: dt.datetime = field(default_factory=lambda: dt.datetime.now().replace(microsecond=0))
    id: int | None = None


def strategy_used(asked: str, chosen: str | None) -> str:
    """The strategy as the history says it: what auto picked, not just "auto" ("auto → copy-csv")."""
    from core.auto import AUTO

    return f"{AUTO} → {chosen}" if asked == AUTO and chosen and chosen != AUTO else asked


def target_of(spec: LoadSpec, tables: tuple[str, ...] = ()) -> str:
    """The table a run went into; a script that filled several names each."""
    if len(tables) > 1:
        return ", ".join(tables)
    from core.db import TableRef

    return TableRef(spec.target.table, spec.target.schema or "public").display()


def from_result(spec: LoadSpec, result: LoadResult, *, kind: str = "load", origin: str = "window",
                outcome: str = "loaded", note: str = "") -> Entry:
    """A run that finished: its counts, auto's pick, and each table's rows for a script of several."""
    chosen = str(result.chosen["strategy"]) if result.chosen and "strategy" in result.chosen else result.strategy
    return Entry(
        kind=kind, source=spec.source.path, target=target_of(spec, result.tables), mode=spec.target.mode.value,
        strategy=strategy_used(spec.strategy, chosen), outcome=outcome, rows_read=result.rows_read,
        rows_loaded=result.rows_loaded, rows_rejected=result.rows_rejected, seconds=result.seconds,
        rows_per_s=result.rows_per_s if result.seconds > 0 else None, note=note or (result.reject_file or ""),
        tables=result.table_rows, reject_file=result.reject_file, origin=origin,
    )


def from_failure(spec: LoadSpec, *, chosen: str | None, outcome: str, note: str, kind: str = "load",
                 origin: str = "window", rows_read: int | None = None, rows_loaded: int | None = None,
                 rows_rejected: int | None = None, seconds: float | None = None,
                 tables: tuple[str, ...] = ()) -> Entry:
    """A run that failed, was stopped or did not start: auto's pick when it was made, and the reason."""
    return Entry(
        kind=kind, source=spec.source.path, target=target_of(spec, tables), mode=spec.target.mode.value,
        strategy=strategy_used(spec.strategy, chosen), outcome=outcome, rows_read=rows_read,
        rows_loaded=rows_loaded, rows_rejected=rows_rejected, seconds=seconds,
        rows_per_s=rows_loaded / seconds if rows_loaded and seconds else None, note=note, origin=origin,
    )


def history_path() -> Path:
    from core.embedded import data_dir

    return data_dir() / FILE_NAME


class History:
    """The history file. Every call opens the file, does one thing and closes it: no connection is
    shared between threads or kept open between runs."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or history_path()

    @contextmanager
    def _connect(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)) as db:
                # No disk flush: a run's end costs 2 ms instead of 25 (a one-row CLI load would feel that), and
                # writers at once stay safe (that is locking, not syncing). Only a power cut or an OS crash right
                # after a run could break the file; then the next write puts it aside and starts anew.
                db.execute("PRAGMA synchronous=OFF")
                version = int(db.execute("PRAGMA user_version").fetchone()[0])
                if version > SCHEMA_VERSION:
                    if write:
                        raise HistoryError(f"{self.path} was written by a newer Sluice (history version {version}); "
                                           f"this one writes version {SCHEMA_VERSION}, so it leaves the file alone")
                elif version < SCHEMA_VERSION:
                    self._create(db)
                yield db
        except sqlite3.Error as exc:
            raise HistoryError(f"the history in {self.path} cannot be used: {exc}") from exc

    @staticmethod
    def _create(db: sqlite3.Connection) -> None:
        # WAL: a reader never blocks the writer (the window reading while a CLI load writes).
        db.execute("PRAGMA journal_mode=WAL")
        with db:
            db.execute(_SCHEMA)
            db.execute(_SET_VERSION)

    def add(self, entry: Entry) -> Entry:
        """Keep a run; returns it with its id. A broken file is put aside first (history.sqlite3.broken-…)."""
        try:
            return self._add(entry)
        except HistoryError as exc:
            if getattr(exc.__cause__, "sqlite_errorcode", None) not in (_CORRUPT, _NOT_A_DATABASE):
                raise
        stamp = f"{dt.datetime.now():%Y%m%d-%H%M%S}"
        for suffix in ("", "-wal", "-shm"):
            try:
                Path(f"{self.path}{suffix}").rename(f"{self.path}.broken-{stamp}{suffix}")
            except FileNotFoundError:
                pass  # another writer put it aside first
        return self._add(entry)

    def _add(self, entry: Entry) -> Entry:
        row = (entry.at.isoformat(sep=" "), entry.origin, entry.kind, entry.source, entry.target, entry.mode,
               entry.strategy, entry.rows_read, entry.rows_loaded, entry.rows_rejected, entry.seconds,
               entry.rows_per_s, entry.outcome, entry.note, json.dumps([list(t) for t in entry.tables]),
               entry.reject_file)
        with self._connect(write=True) as db, db:
            cur = db.execute(
                "INSERT INTO runs (at, origin, kind, source, target, mode, strategy, rows_read, rows_loaded, "
                "rows_rejected, seconds, rows_per_s, outcome, note, tables, reject_file) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            return replace(entry, id=cur.lastrowid)

    def entries(self, *, after: int = 0, limit: int | None = None) -> list[Entry]:
        """The runs kept, oldest first: the newest `limit` of them, or those after the run with id `after`."""
        if not self.path.exists():
            return []
        with self._connect(write=False) as db:
            cur = db.execute(
                "SELECT * FROM (SELECT id, at, origin, kind, source, target, mode, strategy, rows_read, rows_loaded,"
                " rows_rejected, seconds, rows_per_s, outcome, note, tables, reject_file FROM runs WHERE id > ?"
                " ORDER BY id DESC LIMIT ?) ORDER BY id", (after, -1 if limit is None else limit))
            return [_entry(r) for r in cur.fetchall()]

    def count(self) -> int:
        if not self.path.exists():
            return 0
        with self._connect(write=False) as db:
            return int(db.execute("SELECT count(*) FROM runs").fetchone()[0])

    def clear(self) -> int:
        """Forget every run; returns how many there were."""
        if not self.path.exists():
            return 0
        with self._connect(write=True) as db, db:
            return db.execute("DELETE FROM runs").rowcount


def _entry(r: tuple[Any, ...]) -> Entry:
    (id_, at, origin, kind, source, target, mode, strategy, read, loaded, rejected, seconds, rate, outcome,
     note, tables, reject_file) = r
    try:
        per_table = tuple((str(t), int(n)) for t, n in json.loads(tables))
    except (ValueError, TypeError):
        per_table = ()
    return Entry(kind=kind, source=source, target=target, mode=mode, strategy=strategy, outcome=outcome,
                 rows_read=read, rows_loaded=loaded, rows_rejected=rejected, seconds=seconds, rows_per_s=rate,
                 note=note, tables=per_table, reject_file=reject_file, origin=origin,
                 at=dt.datetime.fromisoformat(at), id=id_)


def record(entry: Entry, history: History | None = None) -> str | None:
    """Keep a run, never failing the caller because of the history: returns the reason it was not kept."""
    try:
        (history or History()).add(entry)
    except HistoryError as exc:
        return str(exc)
    return None
