"""numpy's fixed-width dates and timestamps agree with the polars path on every shape.

The polars path (arrow_binary's regex + parse) is itself checked against the server in
test_binary_typing.py; here the fast path must give the same value, or the same null
(the batch then goes as text), on random values of every kind, valid or not.
"""

from __future__ import annotations

import datetime as dt
import random

import polars as pl
import pytest

from core.strategies import arrow_binary as ab
from core.strategies.fixed_width_times import fixed_dates, fixed_timestamps, fixed_timestamptz


def _polars_path(monkeypatch: pytest.MonkeyPatch, kind: str, s: pl.Series) -> pl.Series:
    with monkeypatch.context() as m:
        m.setattr("core.strategies.fixed_width_times.fixed_timestamps", lambda _s: None)
        m.setattr("core.strategies.fixed_width_times.fixed_dates", lambda _s: None)
        return ab._timestamp(s) if kind == "ts" else ab._date(s)


def _value(rng: random.Random, width: int) -> str:
    year = rng.choice(["0000", "0001", "1582", "1900", "2000", "2023", "2024", "9999", "12a4", "-123"])
    month = rng.choice(["00", "01", "02", "04", "12", "13", "1a", " 1"])
    day = rng.choice(["00", "01", "28", "29", "30", "31", "32", "3 "])
    text = f"{year}-{month}-{day}"
    if width > 10:
        sep = rng.choice([" ", "T", "t", "_"])
        hour, minute, second = (rng.choice(["00", "09", "23", "24", "59", "60", "9x"]) for _ in range(3))
        text += f"{sep}{hour}:{minute}" + (f":{second}" if width > 16 else "")  # (16: no seconds)
        if width > 19:
            text += rng.choice([".", ".", ","]) + "".join(rng.choice("0123456789a") for _ in range(width - 20))
    if rng.random() < 0.05:
        text = text.replace("-", "/", 1)
    assert len(text) == width
    return text


@pytest.mark.parametrize("width", [10, 16, 19, 20, 21, 23, 26])
def test_every_shape_types_as_the_polars_path(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    rng = random.Random(width)
    values = [_value(rng, width) if rng.random() > 0.1 else None for _ in range(20_000)]
    s = pl.Series("v", values)
    kind = "date" if width == 10 else "ts"
    fast = fixed_dates(s) if kind == "date" else fixed_timestamps(s)
    if width == 20:  # a dot with no decimals is not a shape either path types
        assert fast is not None and fast.null_count() == len(s)
        return
    assert fast is not None
    expected = _polars_path(monkeypatch, kind, s)
    assert fast.dtype == expected.dtype
    assert fast.to_list() == expected.to_list()
    assert fast.null_count() > s.null_count()  # the random values do hold untypable ones


def test_calendar_edges() -> None:
    days = ["0001-01-01", "1900-02-28", "2000-02-29", "2024-02-29", "1969-12-31", "1970-01-01", "9999-12-31"]
    assert fixed_dates(pl.Series(days)).to_list() == [dt.date.fromisoformat(d) for d in days]  # type: ignore[union-attr]
    bad = ["1900-02-29", "2023-02-29", "2024-04-31", "0000-01-01", "2024-00-10"]
    assert fixed_dates(pl.Series(bad)).null_count() == len(bad)  # type: ignore[union-attr]
    stamps = ["0001-01-01 00:00:00.000001", "1969-12-31T23:59:59.999999", "9999-12-31 23:59:59.123456"]
    assert fixed_timestamps(pl.Series(stamps)).to_list() == [  # type: ignore[union-attr]
        dt.datetime.fromisoformat(t) for t in stamps
    ]
    assert fixed_timestamps(pl.Series(["2024-01-01 24:00:00", "2024-01-01 23:59:60"])).null_count() == 2  # type: ignore[union-attr]
    assert fixed_timestamps(pl.Series(["2024-01-01 10:00:00.5"])).to_list() == [dt.datetime(2024, 1, 1, 10, 0, 0, 500000)]  # type: ignore[union-attr]


def test_timestamps_of_several_widths_type_as_the_polars_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL's own output and isoformat() leave out trailing zeros: 19 to 26 characters in one
    column (16 without seconds), junk of every width among them."""
    rng = random.Random(5)
    s = pl.Series("v", [_value(rng, rng.choice([16, 19, 20, 21, 22, 23, 24, 25, 26])) if rng.random() > 0.1 else None
                        for _ in range(20_000)] + ["2024-01-01 10:00:00", "2024-01-01 10:00:00.5", "2024-01-01 10:0"])
    fast = fixed_timestamps(s)
    assert fast is not None
    assert fast.to_list() == _polars_path(monkeypatch, "ts", s).to_list()
    assert fast.tail(3).to_list() == [dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 10, 0, 0, 500000), None]


def test_a_column_of_several_widths_is_left_to_polars() -> None:
    assert fixed_dates(pl.Series(["2024-01-01", "2024-1-01"])) is None
    assert fixed_dates(pl.Series([None, None], dtype=pl.String)) is None


def test_a_slice_of_a_larger_column_reads_its_own_rows() -> None:
    s = pl.Series([f"2024-01-0{i}" for i in range(1, 10)])
    assert fixed_dates(s.slice(3, 4)).to_list() == [dt.date(2024, 1, i) for i in range(4, 8)]  # type: ignore[union-attr]


@pytest.mark.parametrize("start", [0, 1, 5, 11])
def test_a_slice_with_nulls_reads_its_own_rows_and_nulls(start: int) -> None:
    """The values and the nulls come from the Arrow buffers (offsets and validity bits): a slice
    that starts inside a byte of the validity bitmap keeps each row's own."""
    days = [f"2024-02-{i:02d}" if i % 3 else None for i in range(1, 29)]
    stamps = [None if d is None else f"{d} 10:00:0{i % 10}.25" for i, d in enumerate(days)]
    zoned = [None if t is None else f"{t}+05:30" for t in stamps]
    end = start + 15
    expect_days = [None if d is None else dt.date.fromisoformat(d) for d in days[start:end]]
    assert fixed_dates(pl.Series(days).slice(start, 15)).to_list() == expect_days  # type: ignore[union-attr]
    expect = [None if t is None else dt.datetime.fromisoformat(t) for t in stamps[start:end]]
    assert fixed_timestamps(pl.Series(stamps).slice(start, 15)).to_list() == expect  # type: ignore[union-attr]
    utc = [None if t is None else t - dt.timedelta(hours=5, minutes=30) for t in expect]
    assert fixed_timestamptz(pl.Series(zoned).slice(start, 15)).to_list() == utc  # type: ignore[union-attr]


def _tz_value(rng: random.Random, width: int) -> str:
    offset = rng.choice(["+00", "-08", "+05:30", "-03:30", "+0930", "Z", "+15:59", "+16", "-16:00", "+05:60",
                         "+5", "+05:3", "05:30", "+05:30:00", "+ab", "z", "", "+09 "])
    if rng.random() < 0.6:  # a real instant, most of the time
        moment = dt.datetime(1900, 1, 1) + dt.timedelta(seconds=rng.randrange(200 * 365 * 86400),
                                                        microseconds=rng.randrange(10**6))
        text = moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:width]
        return text + offset
    return _value(rng, width) + offset


@pytest.mark.parametrize("width", [16, 19, 21, 26, 0])
def test_timestamptz_of_any_offsets_types_as_the_polars_path(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    """The same instant as the polars path (chrono's %:z), or null (the batch goes as text, and the
    server judges it): never a different value, and never a value where the polars path has none.
    Width 0: every row its own number of decimals, as PostgreSQL writes them."""
    rng = random.Random(width * 7)
    widths = [width] if width else [16, 19, 21, 22, 23, 24, 25, 26]
    s = pl.Series("v", [None if rng.random() < 0.03 else _tz_value(rng, rng.choice(widths)) for _ in range(5000)])
    fast = ab._timestamptz(s)
    with monkeypatch.context() as m:
        m.setattr("core.strategies.fixed_width_times.fixed_timestamptz", lambda _s, _naive_utc=False: None)
        m.setattr("core.strategies.fixed_width_times.fixed_timestamps", lambda _s: None)
        slow = ab._timestamptz(s)
    typed = 0
    for text, f, p in zip(s.to_list(), fast.to_list(), slow.to_list(), strict=True):
        if f is not None:  # (a null is always safe: the batch goes as text, read by the server)
            typed += 1
            assert f == p, text
        elif p is not None:  # what the fast path leaves to the server: a leap second, or an offset past 15:59
            offset = text[16:].lstrip(":.0123456789") if text is not None else ""
            assert text is not None and (":60" in text or int(offset[1:3]) > 15), (text, p)
    assert typed > 500


def test_timestamptz_offsets_turn_to_utc() -> None:
    from core.strategies.fixed_width_times import fixed_timestamptz

    s = pl.Series("v", ["2021-03-04 05:06:07.000001+05:30", "2021-03-04 05:06:07.000001-0800",
                        "2021-03-04 05:06:07.000001Z", "2021-03-04 05:06:07.000001+16", None])
    got = fixed_timestamptz(s)
    assert got is not None
    assert got.to_list() == [dt.datetime(2021, 3, 3, 23, 36, 7, 1), dt.datetime(2021, 3, 4, 13, 6, 7, 1),
                             dt.datetime(2021, 3, 4, 5, 6, 7, 1), None, None]


@pytest.mark.parametrize("widths", [(19,), (26,), (19, 21, 26)])
def test_no_offset_is_utc_only_where_the_session_says_so(widths: tuple[int, ...]) -> None:
    """A timestamptz with no offset is a time in the session's TimeZone: typed (as that time in UTC)
    only with naive_utc, by the fixed-width path and by polars' path for several widths alike;
    values with offsets read as before."""
    rng = random.Random(len(widths))
    texts = [None if i % 37 == 0 else rng.choice(["1966-02-15 05:49:13", "2021-03-14 02:30:00", "1899-12-31 23:59:59"])
             + ("." + "123456"[:w - 20] if w > 19 else "") + ("+05:30" if i % 5 == 0 else "")
             for i, w in enumerate(rng.choice(widths) for _ in range(400))]
    s = pl.Series("v", texts)
    naive = [t is not None and "+" not in t for t in texts]
    assert all(v is None for v, n in zip(ab._timestamptz(s).to_list(), naive, strict=True) if n)  # the server's
    got = ab._timestamptz(s, naive_utc=True).to_list()
    for text, value in zip(texts, got, strict=True):
        if text is None:
            assert value is None
            continue
        local = dt.datetime.fromisoformat(text.removesuffix("+05:30"))
        assert value == (local - dt.timedelta(hours=5, minutes=30) if text.endswith("+05:30") else local), text


def test_postgres_own_output_types() -> None:
    """`COPY ... TO` writes timestamptz in the session's zone with as few decimals as it needs."""
    from core.strategies.fixed_width_times import fixed_timestamptz

    s = pl.Series("v", ["1966-02-15 05:49:13.131292+00", "1966-02-15 05:49:13.13129+00", "1966-02-15 05:49:13+00",
                        "2021-03-04 05:06:07.5-03:30", "2021-03-04 05:06:07.25+0530"])
    assert fixed_timestamptz(s).to_list() == [  # type: ignore[union-attr]
        dt.datetime(1966, 2, 15, 5, 49, 13, 131292), dt.datetime(1966, 2, 15, 5, 49, 13, 131290),
        dt.datetime(1966, 2, 15, 5, 49, 13), dt.datetime(2021, 3, 4, 8, 36, 7, 500000),
        dt.datetime(2021, 3, 3, 23, 36, 7, 250000)]
