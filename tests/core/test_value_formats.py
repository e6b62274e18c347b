"""Value formats: generated columns in each spelling are inferred and converted to the values
they spell; a column that could read two ways, or holds one value that fits nothing, stays text."""

from __future__ import annotations

import datetime as dt
import random
import time
from decimal import Decimal

import polars as pl
import pytest

from core.errors import ConfigError
from core.value_formats import convert, infer, parse_format, type_for

DATE_SPELLINGS = {
    "MM/DD/YYYY": "{m:02d}/{d:02d}/{y}",
    "DD/MM/YYYY": "{d:02d}/{m:02d}/{y}",
    "DD.MM.YYYY": "{d}.{m}.{y}",
    "YYYY/MM/DD": "{y}/{m:02d}/{d:02d}",
    "DD-MM-YYYY": "{d:02d}-{m:02d}-{y}",
}


def _dates(seed: int, n: int = 300) -> list[dt.date]:
    rng = random.Random(seed)
    out = [dt.date(1950, 1, 1) + dt.timedelta(days=rng.randrange(40_000)) for _ in range(n)]
    out.append(dt.date(2024, 2, 29))
    out.append(dt.date(2024, 1, 13))  # a day above 12: the sample proves which position is the day
    return out


@pytest.mark.parametrize("name", sorted(DATE_SPELLINGS))
@pytest.mark.parametrize("seed", [1, 2])
def test_dates_in_each_spelling_are_inferred_and_read_back(name: str, seed: int) -> None:
    days = _dates(seed)
    text = pl.Series("c", [DATE_SPELLINGS[name].format(y=d.year, m=d.month, d=d.day) for d in days] + [None])
    fmt = infer(text)
    assert fmt is not None and fmt.name == name
    assert type_for(text, fmt) == "date"
    out, misses = convert(pl.DataFrame({"c": text}), {"c": fmt})
    assert misses is None
    assert out["c"].to_list() == [d.isoformat() for d in days] + [None]


@pytest.mark.parametrize("twelve", [True, False])
def test_timestamps_with_12_and_24_hour_clocks(twelve: bool) -> None:
    rng = random.Random(7)
    stamps = [dt.datetime(2000, 1, 1) + dt.timedelta(seconds=rng.randrange(10**9)) for _ in range(200)]
    stamps += [dt.datetime(2024, 3, 15, 0, 5), dt.datetime(2024, 3, 15, 12, 0), dt.datetime(2024, 12, 31, 23, 59)]
    spell = "%m/%d/%Y %I:%M:%S %p" if twelve else "%d.%m.%Y %H:%M:%S"
    text = pl.Series("c", [s.strftime(spell) for s in stamps])
    fmt = infer(text)
    assert fmt is not None
    assert fmt.name == ("MM/DD/YYYY hh:MM:SS AM/PM" if twelve else "DD.MM.YYYY HH:MM:SS")
    assert type_for(text, fmt) == "timestamp"
    out, misses = convert(pl.DataFrame({"c": text}), {"c": fmt})
    assert misses is None
    assert out["c"].to_list() == [s.strftime("%Y-%m-%d %H:%M:%S") for s in stamps]


def test_time_of_day_with_am_pm() -> None:
    text = pl.Series("c", ["2:30 PM", "12:00 AM", "12:15 pm", "11:59:59 AM"])
    fmt = infer(text)
    assert fmt is not None and fmt.kind == "time"
    out, _ = convert(pl.DataFrame({"c": text}), {"c": fmt})
    assert out["c"].to_list() == ["14:30:00", "00:00:00", "12:15:00", "11:59:59"]


NUMBER_SPELLINGS = {  # (thousands, decimal) -> the format's name
    (",", "."): "1,234.56", (".", ","): "1.234,56", (" ", ","): "1 234,56", ("\u00a0", ","): "1 234,56",
    ("", ","): "1234,56", ("'", "."): "1'234.56",
}


def _spell(value: Decimal, thousands: str, decimal: str) -> str:
    sign = "-" if value < 0 else ""
    whole, _, frac = f"{abs(value):f}".partition(".")
    groups = f"{int(whole):,}".replace(",", thousands) if thousands else whole
    return sign + groups + (decimal + frac if frac else "")


@pytest.mark.parametrize(("thousands", "decimal"), sorted(NUMBER_SPELLINGS))
def test_numbers_in_each_spelling_keep_every_digit(thousands: str, decimal: str) -> None:
    rng = random.Random(hash((thousands, decimal)) & 0xFFFF)
    values = [Decimal(rng.randrange(-10**9, 10**9)) / Decimal(10 ** rng.randrange(0, 4)) for _ in range(300)]
    values += [Decimal("1234567.50"), Decimal("-0.001"), Decimal("12.5")]
    text = pl.Series("c", [_spell(v, thousands, decimal) for v in values])
    fmt = infer(text)
    assert fmt is not None and fmt.name == NUMBER_SPELLINGS[(thousands, decimal)]
    out, misses = convert(pl.DataFrame({"c": text}), {"c": fmt})
    assert misses is None
    assert [Decimal(v) for v in out["c"].to_list()] == values
    assert out["c"][-3] == "1234567.50"  # nothing rounded, the scale as written


@pytest.mark.parametrize("values", [
    ["03/04/2024", "05/06/2024", "12/12/2024"],  # month or day first: nothing proves which
    ["1,234", "2,500"],  # 1234 or 1.234
    ["007,5", "1,5"],  # a leading-zero code
    ["1,5", "n/a here"],  # one value fits nothing
    ["02/30/2024", "12/13/2024"],  # no reading makes every value a date
    ["3/1/2024 2:30 PM", "3/1/2024 14:30"],  # a clock with AM/PM and one without
    ["2024-03-15", "2024-03-16"],  # ISO: today's rules type it, no format needed
    ["1234.5", "-2"],
])
def test_columns_that_prove_nothing_get_no_format(values: list[str]) -> None:
    assert infer(pl.Series("c", values)) is None


def test_a_value_that_does_not_fit_is_reported_by_column() -> None:
    frame = pl.DataFrame({"a": ["15.03.2024", "31.02.2024", None, "1.1.2024"], "b": ["1,5", "2", "x", None]})
    out, misses = convert(frame, {"a": parse_format("DD.MM.YYYY"), "b": parse_format("1234,56")})
    assert misses is not None
    assert misses.to_list() == [None, "a", "b", None]  # a NULL is no miss
    assert out["a"].to_list() == ["2024-03-15", None, None, "2024-01-01"]


@pytest.mark.parametrize(("text", "name"), [
    ("mm/dd/yyyy", "MM/DD/YYYY"), ("D.M.YYYY", "DD.MM.YYYY"), ("dd/mm/yyyy hh:mm am/pm", "DD/MM/YYYY hh:MM AM/PM"),
    ("YYYY-MM-DD HH:MM:SS", "YYYY-MM-DD HH:MM:SS"), ("1.234,56", "1.234,56"), ("1 234,56", "1 234,56"),
    ("HH:MM", "HH:MM"),
])
def test_format_names_as_people_write_them(text: str, name: str) -> None:
    assert parse_format(text).name == name


@pytest.mark.parametrize("text", ["", "YYYY", "MM/YYYY/DD", "1.234.56", "DD/MM/YY", "dd-mm/yyyy"])
def test_not_a_format_is_refused_with_examples(text: str) -> None:
    with pytest.raises(ConfigError, match="not a value format"):
        parse_format(text)


def test_relative_words_are_not_dates() -> None:
    fmt = parse_format("MM/DD/YYYY")
    _, misses = convert(pl.DataFrame({"c": ["today", "now", "01/02/2024"]}), {"c": fmt})
    assert misses is not None and misses.to_list() == ["c", "c", None]


@pytest.mark.alone
def test_conversion_time_grows_linearly() -> None:
    """Linear-time matching (Rust regex through polars): 8x the values, well under 8x squared the time."""
    fmt = parse_format("MM/DD/YYYY hh:MM:SS AM/PM")

    def timed(n: int) -> float:
        frame = pl.DataFrame({"c": ["12/31/2024 11:59:59 PM", "1" * 200 + "/1/2024"] * (n // 2)})
        t = time.perf_counter()
        convert(frame, {"c": fmt})
        return time.perf_counter() - t

    timed(1000)
    small, big = min(timed(20_000) for _ in range(3)), min(timed(160_000) for _ in range(3))
    assert big < small * 30


def test_which_values_some_format_reads_matches_applying_every_format() -> None:
    """_readable applies only the formats whose patterns a value matches: the same answer as all."""
    from core.value_formats import _readable, _readers

    pool = ["x", "2", "31.02.2024", "01.02.2024", "1,5", "2024-01-02", "3,25", "12:30 pm", "1:00 AM", "25:00",
            "1.234,5", "12x", "4,5", "03/04/2024 10:00", "13/04/2024", "99/99/9999", "2024-13-01", "1 234,5",
            "1'234.5", "+3", "-0.5", "12:61", "00:00", "2024/02/29", "2023/02/29", "1e5", "7/4/2024 3:04:05 PM"]
    rng = random.Random(7)
    for _ in range(60):
        s = pl.Series(rng.sample(pool, rng.randint(1, 8)))
        every = pl.Series([False] * s.len())
        for fmt in _readers():
            every = every | fmt.apply(s).is_not_null()
        assert _readable(s).to_list() == every.to_list(), s.to_list()
