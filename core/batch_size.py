"""How many rows a batch holds when the user names no number.

The row-by-row and INSERT strategies keep the 10,000 rows they were measured with. For a
COPY stream a batch is only a unit of work (read, type, encode, send), so it is sized in
bytes: 10,000 short rows made copy-binary pay polars' fixed cost per call ten times per
megabyte (1M mixed rows on the embedded server: 1.05 s in 10,000-row batches, 0.85 s in
23,000-row ones; docs/benchmark-history.md).
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_BATCH_ROWS = 10_000
BATCH_BYTES = 8 << 20  # a batch of about this many bytes: few round trips, bounded memory


def byte_sized(width: int, stages: int = 1) -> int:
    """Rows in about BATCH_BYTES / stages of rows `width` bytes wide (0: unknown, taken as 100).
    A batch that sits in several stages at once (text, typed columns, encoded bytes) gets a
    share each, so a 1 GB file stays under 300 MB."""
    rows = max(1_000, min(100_000, BATCH_BYTES // max(1, width or 100)))
    return max(1_000, rows // max(1, stages))


def source_row_width(path: str | Path, size: int, fmt: str) -> int:
    """Bytes per row of a text source (CSV, TSV, an SQL script); 0 for the others, whose bytes
    (Parquet's compressed pages, JSON's keys) say little about a row's size in memory."""
    return row_width(path, size) if fmt in ("csv", "tsv", "sql", "pgtext") else 0


def row_width(path: str | Path, size: int) -> int:
    """Average bytes per line in the file's first megabyte (0 when it cannot tell)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 20)
    except OSError:
        return 0
    lines = head.count(b"\n")
    if not lines:
        return len(head) if size <= len(head) else size
    return len(head) // lines
