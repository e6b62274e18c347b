"""Dates and timestamps of one fixed width, typed from their digits with numpy.

Most files write a date or timestamp column in one shape (`2024-01-05`, or
`2024-01-05 10:00:00.000000` with the same number of decimals on every row). Then the
column's text is one contiguous buffer of equal records: numpy reads each field's digits at
its fixed offset and computes the value in a few vectorised passes, where polars' string
slicing and date parsing take five to ten times as long (measured on the bench's 1M rows).

Only the exact shape is typed: four-digit years 0001-9999, real calendar days, hours 0-23,
minutes and seconds 0-59, and 1-6 decimals. Any other row comes back null, so its batch
goes to the server as text, as arrow_binary's polars path does. A column whose rows differ
in width returns None: the caller takes the polars path.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import polars as pl

_DATE_WIDTH = 10
_TS_WIDTHS = (19, 21, 22, 23, 24, 25, 26)  # no decimals, or a dot and 1-6 of them


def fixed_dates(s: pl.Series) -> pl.Series | None:
    """`yyyy-mm-dd` as dates, null where not exactly that; None when widths differ."""
    rows = _rows(s, (_DATE_WIDTH,))
    if rows is None:
        return None
    d, valid = rows
    days, ok = _days(d)
    return _series(s, days, valid & ok, pl.Date)


def fixed_timestamps(s: pl.Series) -> pl.Series | None:
    """`yyyy-mm-dd hh:mm:ss[.f]` (space or T) as microseconds, null where not exactly that;
    None when widths differ."""
    rows = _rows(s, _TS_WIDTHS)
    if rows is None:
        return None
    d, valid = rows
    width = d.shape[0]
    days, ok = _days(d)
    ok &= ((d[10] == _sep(" ")) | (d[10] == _sep("T"))) & (d[13] == _sep(":")) & (d[16] == _sep(":"))
    ok &= _digits(d, (11, 12, 14, 15, 17, 18))
    hour, minute, second = _number(d, 11, 2), _number(d, 14, 2), _number(d, 17, 2)
    ok &= (hour <= 23) & (minute <= 59) & (second <= 59)
    instant = ((days.astype(np.int64) * 24 + hour) * 60 + minute) * 60 + second
    micros = instant * 1_000_000
    if width > 19:
        places = width - 20
        ok &= (d[19] == _sep(".")) & _digits(d, range(20, width))
        micros += _number(d, 20, places) * 10 ** (6 - places)
    return _series(s, micros, valid & ok, pl.Datetime("us"))


def fixed_timestamptz(s: pl.Series) -> pl.Series | None:
    """`yyyy-mm-dd hh:mm:ss[.f]` of one width, then an offset (`+05:30`, `-0800`, `+09`, `Z`),
    as the UTC instant in microseconds, null where not exactly that (or an offset past 15:59,
    which PostgreSQL judges itself); None when the timestamps' widths differ. A column holds
    few distinct offsets (its time zones): each is read once, and the rows look theirs up."""
    first = s.drop_nulls().head(1)
    if not len(first):
        return None
    text = first[0]
    width = next((i for i in range(19, len(text)) if text[i] in "+-Z"), -1)
    if width not in _TS_WIDTHS:
        return None
    local = fixed_timestamps(s.str.slice(0, width))
    if local is None:
        return None
    off = s.str.slice(width)
    kinds = off.unique().drop_nulls()
    if len(kinds) > _MAX_OFFSETS:
        return None
    shifts = {k: _offset_micros(k) for k in kinds.to_list()}
    known = {k: v for k, v in shifts.items() if v is not None}
    shift = off.replace_strict(list(known), list(known.values()), default=None, return_dtype=pl.Int64)
    return (local.cast(pl.Int64) - shift).cast(pl.Datetime("us")).alias(s.name)


_MAX_OFFSETS = 4096  # more distinct offsets than time zones exist: not this column's shape
_OFFSET = re.compile(r"([+-])(\d\d)(?::?(\d\d))?")


def _offset_micros(text: str) -> int | None:
    """`+05:30`, `-0800`, `+09` or `Z` as microseconds east of UTC; None for anything else, or
    past 15:59 (left to PostgreSQL)."""
    if text == "Z":
        return 0
    m = _OFFSET.fullmatch(text)
    if m is None:
        return None
    hours, minutes = int(m.group(2)), int(m.group(3) or 0)
    if hours > 15 or minutes > 59:
        return None
    micros = (hours * 60 + minutes) * 60_000_000
    return -micros if m.group(1) == "-" else micros


def _rows(s: pl.Series, widths: tuple[int, ...]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """The column's bytes minus '0', one row per character position (width, n), and where
    it had values (null rows are blank); None unless every value has one of `widths`."""
    n = len(s)
    if not n or s.null_count() == n:
        return None
    lengths = s.str.len_bytes().drop_nulls()
    width = lengths[0]
    # (min and max, not n_unique: no hashing, no trip to polars' thread pool; 15x cheaper)
    if width not in widths or lengths.min() != lengths.max():
        return None
    valid = s.is_not_null().to_numpy()
    arrow = s.fill_null(" " * width).to_arrow()
    if str(arrow.type) != "large_string":
        return None
    offsets = np.frombuffer(arrow.buffers()[1], dtype=np.int64, count=n + 1, offset=arrow.offset * 8)
    start = int(offsets[0])
    if int(offsets[-1]) - start != n * width:
        return None  # (not contiguous: cannot happen for equal widths, but never guess)
    data = np.frombuffer(arrow.buffers()[2], dtype=np.uint8, count=n * width, offset=start)
    # Digits become 0-9 and everything else 10-255 (uint8 wraps); positions as rows, so each
    # field's digits are contiguous arrays.
    return np.ascontiguousarray((data - _ZERO).reshape(n, width).T), valid


_ZERO = np.uint8(ord("0"))


def _sep(ch: str) -> np.uint8:
    return np.uint8((ord(ch) - ord("0")) & 0xFF)


def _digits(d: np.ndarray[Any, Any], positions: Any) -> np.ndarray[Any, Any]:
    out: np.ndarray[Any, Any] = np.all(d[list(positions)] <= 9, axis=0)
    return out


def _number(d: np.ndarray[Any, Any], at: int, digits: int) -> np.ndarray[Any, Any]:
    out: np.ndarray[Any, Any] = d[at].astype(np.int32)
    for i in range(at + 1, at + digits):
        out *= 10
        out += d[i]
    return out


def _year_tables() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    years = np.arange(10_000, dtype=np.int64)
    leap = (years % 4 == 0) & ((years % 100 != 0) | (years % 400 == 0))
    # Days from 1970-01-01 to January 1st of each year 0-9999 (proleptic Gregorian).
    before = np.concatenate(([0], np.cumsum(365 + leap[:-1])))
    return (before - before[1970]).astype(np.int32), leap


_YEAR_START, _LEAP = _year_tables()
_MONTH_DAYS = np.array([[0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31],
                        [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]], dtype=np.int32)
_MONTH_START = np.concatenate((np.zeros((2, 1), dtype=np.int32), np.cumsum(_MONTH_DAYS, axis=1)[:, :-1]), axis=1)


def _days(d: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Days since 1970-01-01 of the leading `yyyy-mm-dd`, and where it is a real day."""
    ok = _digits(d, (0, 1, 2, 3, 5, 6, 8, 9)) & (d[4] == _sep("-")) & (d[7] == _sep("-"))
    # Non-digits make numbers out of range: clipped, so the tables can be indexed (ok is False there).
    year, month, day = _number(d, 0, 4), _number(d, 5, 2), _number(d, 8, 2)
    ok &= (year >= 1) & (year <= 9999) & (month >= 1) & (month <= 12) & (day >= 1)
    year, month = np.clip(year, 0, 9999), np.clip(month, 0, 12)
    leap = _LEAP[year].astype(np.int32)
    ok &= day <= _MONTH_DAYS[leap, month]
    return _YEAR_START[year] + _MONTH_START[leap, month] + day - 1, ok


def _series(s: pl.Series, values: np.ndarray[Any, Any], ok: np.ndarray[Any, Any], dtype: Any) -> pl.Series:
    """The values as a typed column, null where not `ok`, built from the buffers. Handed to
    polars through the Arrow C data interface: given a numpy array, polars imports numpy.ma,
    and given a pyarrow one, pyarrow.compute (16 and 50 ms, on the first batch's path)."""
    import pyarrow as pa

    date = dtype == pl.Date
    data = np.ascontiguousarray(values, dtype=np.int32 if date else np.int64)
    nulls = len(ok) - int(np.count_nonzero(ok))
    validity = pa.py_buffer(np.packbits(ok, bitorder="little")) if nulls else None
    arrow = pa.Array.from_buffers(pa.date32() if date else pa.timestamp("us"), len(data),
                                  [validity, pa.py_buffer(data)], null_count=nulls)
    return pl.Series(s.name, _CData(arrow)).alias(s.name)


class _CData:
    """An Arrow array seen only through `__arrow_c_array__` (the PyCapsule interface)."""

    def __init__(self, array: Any) -> None:
        self._array = array

    def __arrow_c_array__(self, requested_schema: object | None = None) -> Any:
        return self._array.__arrow_c_array__(requested_schema)
