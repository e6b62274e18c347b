"""A polars text column's Arrow buffers as numpy arrays, without copying the values: what the
fixed-width readers of dates, times and uuids work on (core.strategies.fixed_width_times,
core.strategies.canonical_uuids)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl


def validity(arrow: Any, n: int, nulls: int) -> np.ndarray[Any, Any]:
    """Where the Arrow array's `n` values are not null (`nulls` of them are)."""
    if not nulls:
        return np.ones(n, dtype=bool)
    bits = np.unpackbits(np.frombuffer(arrow.buffers()[0], dtype=np.uint8), bitorder="little")
    return bits[arrow.offset:arrow.offset + n].astype(bool)


def string_buffers(s: pl.Series) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """(offsets, bytes, where not null) of a text column's Arrow buffers; None when it holds no
    value or is not plain text."""
    n = len(s)
    nulls = s.null_count()
    if not n or nulls == n:
        return None
    arrow = s.to_arrow()
    if str(arrow.type) != "large_string":
        return None
    offsets = np.frombuffer(arrow.buffers()[1], dtype=np.int64, count=n + 1, offset=arrow.offset * 8)
    return offsets, np.frombuffer(arrow.buffers()[2], dtype=np.uint8), validity(arrow, n, nulls)
