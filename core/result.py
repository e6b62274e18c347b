"""What a load reports when it ends (the CLI's --json line, the window's summary)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class LoadResult:
    strategy: str
    rows_read: int
    rows_loaded: int
    rows_rejected: int
    seconds: float
    bytes: int
    reject_file: str | None = None
    resumed_from: int = 0  # source rows an earlier per-batch run had committed
    load_seconds: float = 0.0  # from the first batch to the commit: no start-up, connecting or planning
    chosen: dict[str, Any] | None = None  # with --strategy auto: the strategy, batch_rows and workers picked
    reason: str = ""  # why auto chose it, and why several streams take their protocol (said before the run)
    writes_twice: bool = False  # several streams through a staging table: every row written twice (said in `reason`)
    rows_dropped: int = 0  # script rows ON CONFLICT DO NOTHING dropped: their key was already there
    tables: tuple[str, ...] = ()  # a script that filled several tables: each one, in the file's order
    table_rows: tuple[tuple[str, int], ...] = ()  # ... and the rows this load put into each
    columns_not_loaded: tuple[str, ...] = ()  # the file's columns that no target column takes
    loaded_before: int = 0  # of rows_loaded, those an earlier per-batch run had committed
    note: str = ""  # said once about the whole load (an empty file: what was done instead)
    # Many files into one table: each file's {file, rows_read, rows_loaded, rows_rejected} (core.sources.many)
    files: tuple[dict[str, Any], ...] = ()
    # The NULL marker in words (core.null_report): where it read as NULL and where it stayed text.
    null_marker: dict[str, Any] | None = None
    value_formats: dict[str, str] | None = None  # source column -> the value format its values were read with

    @property
    def rows_per_s(self) -> float:
        """This run's own rows per second (a resumed run's earlier rows took no time of it)."""
        return (self.rows_loaded - self.loaded_before) / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["rows_per_s"] = round(self.rows_per_s, 1)
        d["seconds"] = round(self.seconds, 4)
        return d
