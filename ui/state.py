"""The Load tab's shared state: the opened file, the server and its tables, the target's size, the run.

The window makes one LoadState and hands it to its controllers. A controller writes the fields it
owns (the source controller the source, the target controller the connection and the database, the
mapping controller the target's size, the run controller the job) and reads the others here, instead
of asking another controller; each field says when it changes, so a part that must follow a change
connects to the signal (in MainWindow._connect), never to the part that made it.

The DSN is not a copy: it is read fresh from the target controller's fields (the connection field,
its saved connection, a password typed this session) each time, so a saved connection edited any
way is the one a run uses; `recheck_connection()` says connection_changed when it differs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    from core.preview import DatabaseInfo, SourceInfo
    from core.target_facts import TableSize
    from ui.worker import Job


class LoadState(QObject):
    """Signals, each emitted when its field is given another value:

    - source_changed(object SourceInfo | None): the opened file as read (its preview, columns, rows).
    - source_counted(object SourceInfo before, object SourceInfo after): the same read, its rows now counted
      by a run or a check (not a source_changed: the file's columns and sample are the same).
    - connection_changed(object str | None): the DSN in use (None: the embedded server), said by
      recheck_connection() once it differs from the last one said.
    - database_changed(object DatabaseInfo | None): the server's schemas and tables, as last read.
    - target_size_changed(object TableSize | None): the existing target table's rows (None: not known).
    - job_changed(object Job | None): the load or check running (None: none).
    - error_changed(str): the last error said to the user.
    """

    source_changed = Signal(object)
    source_counted = Signal(object, object)
    connection_changed = Signal(object)
    database_changed = Signal(object)
    target_size_changed = Signal(object)
    job_changed = Signal(object)
    error_changed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._source_info: SourceInfo | None = None
        self._dsn_of: Callable[[], str | None] = lambda: None  # until the target controller says where
        self._dsn_said: str | None = None
        self._database: DatabaseInfo | None = None
        self._target_size: TableSize | None = None
        self._job: Job | None = None
        self._last_error = ""

    @property
    def source_info(self) -> SourceInfo | None:
        return self._source_info

    @source_info.setter
    def source_info(self, info: SourceInfo | None) -> None:
        if info is not self._source_info:  # by identity: a SourceInfo holds a polars frame
            self._source_info = info
            self.source_changed.emit(info)

    def count_source_rows(self, rows: int) -> None:
        """A run or a check read the file through: its rows are `rows`, exactly (source_counted)."""
        before = self._source_info
        if before is None:
            return
        self._source_info = after = before.counted(rows)
        self.source_counted.emit(before, after)

    @property
    def dsn(self) -> str | None:
        """The connection in use, read now, a password typed this session included (kept in memory only)."""
        return self._dsn_of()

    def read_dsn_with(self, dsn_of: Callable[[], str | None]) -> None:
        """Where the DSN is read from (the target controller's fields); said at once if it differs."""
        self._dsn_of = dsn_of
        self.recheck_connection()

    def recheck_connection(self) -> None:
        """Something the DSN is made of may have changed: connection_changed if it differs from the last said."""
        dsn = self._dsn_of()
        if dsn != self._dsn_said:
            self._dsn_said = dsn
            self.connection_changed.emit(dsn)

    @property
    def database(self) -> DatabaseInfo | None:
        return self._database

    @database.setter
    def database(self, info: DatabaseInfo | None) -> None:
        if info is not self._database:
            self._database = info
            self.database_changed.emit(info)

    @property
    def target_size(self) -> TableSize | None:
        return self._target_size

    @target_size.setter
    def target_size(self, size: TableSize | None) -> None:
        if size is not self._target_size:
            self._target_size = size
            self.target_size_changed.emit(size)

    @property
    def job(self) -> Job | None:
        return self._job

    @job.setter
    def job(self, job: Job | None) -> None:
        if job is not self._job:
            self._job = job
            self.job_changed.emit(job)

    @property
    def last_error(self) -> str:
        return self._last_error

    @last_error.setter
    def last_error(self, message: str) -> None:
        if message != self._last_error:
            self._last_error = message
            self.error_changed.emit(message)

    def lists_table(self, table: str, schema: str) -> bool:
        """Whether `schema.table` is in the database's list (as last read from the server)."""
        db = self._database
        return bool(db and table and table in db.tables.get(schema, []))
