"""Dates and timestamps typed from their digits with numpy.

Most files write a date or timestamp column in one shape (`2024-01-05`, or
`2024-01-05 10:00:00.000000` with the same number of decimals on every row). Then the
column's text is one contiguous buffer of equal records: numpy reads each field's digits at
its fixed offset and computes the value in a few vectorised passes, where polars' string
slicing and date parsing take five to ten times as long (measured on the bench's 1M rows).

Timestamps whose decimals differ in number from row to row (PostgreSQL's own `COPY ... TO`
and Python's isoformat() leave trailing zeros out), and timestamptz with offsets of any
length, have each row's bytes laid into the 26-character shape first, then the same
arithmetic reads them.

Only the exact shape is typed: four-digit years 0001-9999, real calendar days, hours 0-23,
minutes and seconds 0-59 (seconds may be left out: `10:02` is 10:02:00, as PostgreSQL reads it),
and 1-6 decimals. Any other row comes back null, so its batch
goes to the server as text, as arrow_binary's polars path does. Dates of several widths
return None: the caller takes the polars path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from core.strategies.arrow_buffers import string_buffers, validity

_DATE_WIDTH = 10
_TS_WIDTHS = (16, 19, 21, 22, 23, 24, 25, 26)  # no seconds; seconds; a dot and 1-6 decimals


def fixed_dates(s: pl.Series) -> pl.Series | None:
    """`yyyy-mm-dd` as dates, null where not exactly that; None when widths differ."""
    rows = _rows(s, (_DATE_WIDTH,))
    if rows is None:
        return None
    d, valid = rows
    days, ok = _days(d)
    return _series(s, days, valid & ok, pl.Date)


def fixed_timestamps(s: pl.Series) -> pl.Series | None:
    """`yyyy-mm-dd hh:mm[:ss[.f]]` (space or T) as microseconds, null where not exactly that;
    None when the column holds no value or is not plain text."""
    rows = _rows(s, _TS_WIDTHS)
    if rows is None:
        # Decimals of several widths, as PostgreSQL's own output and isoformat() write them
        # (trailing zeros left out): the same digits, gathered row by row.
        stamps = _stamp_rows(s, with_offset=False)
        return None if stamps is None else _series(s, stamps[0], stamps[1], pl.Datetime("us"))
    d, valid = rows
    micros, ok = _micros(d)
    return _series(s, micros, valid & ok, pl.Datetime("us"))


def _micros(d: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Microseconds since 1970 of `yyyy-mm-dd hh:mm[:ss[.f]]` rows (positions as rows), and where
    each row is exactly that."""
    width = d.shape[0]
    days, ok = _days(d)
    ok &= ((d[10] == _sep(" ")) | (d[10] == _sep("T"))) & (d[13] == _sep(":"))
    ok &= _digits(d, (11, 12, 14, 15))
    hour, minute = _number(d, 11, 2), _number(d, 14, 2)
    ok &= (hour <= 23) & (minute <= 59)
    instant = ((days.astype(np.int64) * 24 + hour) * 60 + minute) * 60
    if width > 16:  # (16: `yyyy-mm-dd hh:mm`, no seconds, which PostgreSQL reads as :00)
        ok &= (d[16] == _sep(":")) & _digits(d, (17, 18))
        second = _number(d, 17, 2)
        ok &= second <= 59
        instant += second
    micros = instant * 1_000_000
    if width > 19:
        places = width - 20
        ok &= (d[19] == _sep(".")) & _digits(d, range(20, width))
        micros += _number(d, 20, places) * 10 ** (6 - places)
    return micros, ok


def fixed_timestamptz(s: pl.Series, naive_utc: bool = False) -> pl.Series | None:
    """`yyyy-mm-dd hh:mm[:ss[.f]]` then an offset (`+05:30`, `-0800`, `+09`, `Z`), as the UTC instant
    in microseconds, null where not exactly that (or an offset past 15:59, which PostgreSQL
    judges itself); None when the column holds no value or is not plain text. With `naive_utc`
    (the session's TimeZone is UTC), a value with no offset is that time in UTC."""
    stamps = _stamp_rows(s, with_offset=True, naive_utc=naive_utc)
    return None if stamps is None else _series(s, stamps[0], stamps[1], pl.Datetime("us"))


def _stamp_rows(s: pl.Series, *, with_offset: bool, naive_utc: bool = False
                ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """Microseconds (UTC where there is an offset) and where each row is exactly a timestamp.

    Each row's offset is read from its last six characters; its local part is laid into the
    26-character shape (`.000000` after whole seconds, zeros after fewer decimals), so one pass
    of the fixed-width arithmetic reads rows of every width. None when the column holds no
    value or is not plain text."""
    column = string_buffers(s)
    if column is None:
        return None
    offsets, raw, ok = column
    # The bytes minus '0' (digits 0-9, anything else 10-255), with blank room on both sides so
    # that 26 characters from any row's start, and 6 before any row's end, stay inside.
    data = np.full(_PAD + len(raw) + _FULL, _sep(" "), dtype=np.uint8)
    np.subtract(raw, _ZERO, out=data[_PAD:_PAD + len(raw)])
    windows = np.lib.stride_tricks.sliding_window_view(data, _FULL)  # a view: row p is data[p:p+26]
    starts, ends = offsets[:-1] + _PAD, offsets[1:] + _PAD
    length = ends - starts
    shift: np.ndarray[Any, Any] | int = 0
    if with_offset:
        kind, shift, ok_offset = _offsets(windows[ends - _PAD, :_PAD].T)
        ok &= (ok_offset | (kind == 0)) if naive_utc else ok_offset  # (no offset: kind 0, shift 0)
        length = length - kind
    # 16 (no seconds) or 19-26, not a dot with no decimals (20), nor a minute cut short (17, 18).
    ok &= (length >= 16) & (length <= _FULL) & (length != 17) & (length != 18) & (length != 20)
    d = np.ascontiguousarray(windows[starts].T)  # positions as rows, as _rows lays them out
    # Past a row's own end, the shape's own filler (rows shorter than 16 are not ok whatever they read).
    no_seconds = length <= 16
    d[16, no_seconds] = _sep(":")
    d[17:19, no_seconds] = 0
    d[19] = np.where(length > 19, d[19], _sep("."))
    for j in range(20, _FULL):
        d[j] = np.where(j < length, d[j], 0)
    micros, ok_local = _micros(d)
    return micros - shift, ok & ok_local


_FULL = 26  # yyyy-mm-dd hh:mm:ss.ffffff
_PAD = 6  # the longest offset, +05:30


def _offsets(t: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
    """Each row's trailing offset, from its last six characters `t` (positions as rows): its
    length (`Z` 1, `+09` 3, `-0800` 5, `+05:30` 6), microseconds east of UTC, and whether it is
    one that PostgreSQL and chrono read alike (a sign, hours up to 15, minutes up to 59)."""
    plus, minus = _sep("+"), _sep("-")
    sign = (t == plus) | (t == minus)
    zulu = t[5] == _sep("Z")
    k3 = ~zulu & sign[3]
    k5 = ~zulu & ~k3 & sign[1]
    k6 = ~zulu & ~k3 & ~k5 & sign[0] & (t[3] == _sep(":"))
    # The four kinds exclude each other: each row's hour digits are picked by multiplying with
    # its kind's flag and adding (bytes, one pair read after), where np.select over three pairs
    # read in full took most of this function's time.
    kind = zulu * np.uint8(1) + k3 * np.uint8(3) + k5 * np.uint8(5) + k6 * np.uint8(6)
    tens = t[4] * k3 + t[2] * k5 + t[1] * k6
    ones = t[5] * k3 + t[3] * k5 + t[2] * k6
    hours = _pair(tens, ones)  # (0 where no kind has hours: zulu, or no offset)
    has_minutes = k5 | k6
    minutes = _pair(t[4] * has_minutes, t[5] * has_minutes)
    ok = zulu | ((kind > 0) & (hours <= 15) & (minutes <= 59))
    east = (hours * 60 + minutes) * 60_000_000
    negative = (k3 & (t[3] == minus)) | (k5 & (t[1] == minus)) | (k6 & (t[0] == minus))
    east = np.where(zulu | ~ok, 0, np.where(negative, -east, east))
    return kind, east, ok


def _pair(tens: np.ndarray[Any, Any], ones: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Two digits as a number; 999 where either is not a digit (out of every range)."""
    out: np.ndarray[Any, Any] = np.where((tens <= 9) & (ones <= 9), tens.astype(np.int64) * 10 + ones, 999)
    return out


def _rows(s: pl.Series, widths: tuple[int, ...]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """The column's bytes minus '0', one row per character position (width, n), and where
    it had values (null rows hold no digits); None unless every value has one of `widths`.
    Read from the Arrow buffers: each polars call costs some 0.1 ms a batch, and asking it for
    the lengths, the nulls and a filled copy took a third of a date column's time."""
    if max(widths) <= _INLINE:
        inline = _inline(s)
        if inline is not None:
            data, lengths, valid = inline
            width = int(lengths[0])
            if width not in widths or lengths.min() != lengths.max():
                return None
            return np.ascontiguousarray((data[:, :width] - _ZERO).T), valid
    column = string_buffers(s)
    if column is None:
        return None
    offsets, raw, valid = column
    lengths = np.diff(offsets)[valid]
    width = int(lengths[0])
    if width not in widths or lengths.min() != lengths.max():
        return None
    n, start, count = len(valid), int(offsets[0]), len(lengths)
    if int(offsets[-1]) - start == count * width:  # the values end to end (nulls hold no bytes)
        data = raw[start:start + count * width].reshape(count, width)
        if count < n:  # each value into its row, blank rows between (a gather by index took 3 times as long)
            rows, data = data, np.full((n, width), ord(" "), dtype=np.uint8)
            data[valid] = rows
    else:
        blank = np.full(width, ord(" "), dtype=np.uint8)
        data = np.concatenate((raw, blank))[offsets[:-1, None] + np.arange(width)]  # (past the end: blank)
        data[~valid] = blank
    # Digits become 0-9 and everything else 10-255 (uint8 wraps); positions as rows, so each
    # field's digits are contiguous arrays.
    return np.ascontiguousarray((data - _ZERO).T), valid


_INLINE = 12  # an Arrow string view holds a value of up to 12 bytes itself, after its length


def _inline(s: pl.Series) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """(each row's 12 bytes in its view, as rows; the values' lengths; where not null), read in
    place from polars' own string views, exported without a copy (as large_string, every value
    was copied: a fifth of a date column's time); None unless every value is short enough to lie
    in its view (a date is), or when the column holds no value or is not plain text."""
    n = len(s)
    nulls = s.null_count()
    if not n or nulls == n:
        return None
    arrow = s.to_arrow(compat_level=pl.CompatLevel.newest())
    if str(arrow.type) != "string_view":
        return None
    # Each view: the value's length (int32), then the value itself when it fits in 12 bytes.
    views = np.frombuffer(arrow.buffers()[1], dtype=np.uint8).reshape(-1, 16)[arrow.offset:arrow.offset + n]
    valid = validity(arrow, n, nulls)
    lengths = views[:, :4].copy().view(np.int32).ravel()[valid]
    if lengths.max() > _INLINE:
        return None
    return views[:, 4:], lengths, valid


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
# By year * 13 + month (month 0 a filler): the days from 1970-01-01 to the month's first day, and
# the month's length. One lookup each, where the year's start, its leap flag and the month's
# start and length (two of them by [leap, month]) took a third of a date column's time.
_FIRST_DAY = (_YEAR_START[:, None] + _MONTH_START[_LEAP.astype(np.intp)]).astype(np.int32).ravel()
_MONTH_LENGTH = _MONTH_DAYS[_LEAP.astype(np.intp)].astype(np.uint8).ravel()


def _days(d: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Days since 1970-01-01 of the leading `yyyy-mm-dd`, and where it is a real day."""
    ok = _digits(d, (0, 1, 2, 3, 5, 6, 8, 9)) & (d[4] == _sep("-")) & (d[7] == _sep("-"))
    # Non-digits make numbers out of range (never negative: bytes minus '0' wrap to 10-255),
    # capped so the tables can be indexed (ok is False there).
    year, month, day = _number(d, 0, 4), _number(d, 5, 2), _number(d, 8, 2)
    ok &= (year >= 1) & (year <= 9999) & (month >= 1) & (month <= 12) & (day >= 1)
    at = np.minimum(year, 9999)
    at *= 13
    at += np.minimum(month, 12)
    ok &= day <= _MONTH_LENGTH[at]
    days = _FIRST_DAY[at]
    days += day
    days -= 1
    return days, ok


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
