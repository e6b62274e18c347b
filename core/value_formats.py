"""Value formats: dates, times and numbers as spreadsheets and regional settings write them.

A format names how one text column spells its values (`MM/DD/YYYY`, `DD.MM.YYYY HH:MM`,
`hh:MM AM/PM`, `1.234,56`, ...). It turns each value into PostgreSQL's ISO input text
column-wise, with polars expressions (Rust's linear-time regex, no per-value Python); a
value that does not fit comes out null, and the caller tells it apart from a real NULL.

Inference takes a format only when every sampled value fits it and no other reading of
the same values would give other data: `03/04/2024` alone could be March or April, so a
column of such dates stays text until a day above 12 shows which position is the day.
Values that today's rules already type (ISO dates, plain numbers) get no format.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import polars as pl

from core.errors import ConfigError

DATE_ORDERS = {"MDY": ("MM", "DD", "YYYY"), "DMY": ("DD", "MM", "YYYY"), "YMD": ("YYYY", "MM", "DD")}
DATE_SEPARATORS = ("/", ".", "-")
# Thousands separator, decimal mark: the number formats a file may use, simplest first.
NUMBER_STYLES = (("", ","), (",", "."), (".", ","), (" ", ","), (" ", "."), ("'", "."))
_SPACES = " \u00a0\u202f"  # a space, a no-break space, a narrow no-break space (French, Excel)
_GROUP = {
    "m": r"(?P<m>\d{1,2})", "d": r"(?P<d>\d{1,2})", "y": r"(?P<y>\d{4})",
}
_TIME = r"(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?P<f>\.\d{1,6})?)?"
_AMPM = r"\s*(?P<p>[AaPp])\.?[Mm]\.?"
EXAMPLES = ("MM/DD/YYYY", "DD/MM/YYYY", "DD.MM.YYYY", "YYYY/MM/DD", "MM/DD/YYYY hh:MM AM/PM",
            "DD.MM.YYYY HH:MM:SS", "hh:MM AM/PM", "HH:MM", "1,234.56", "1.234,56", "1 234,56", "1234,56")


@dataclass(frozen=True)
class ValueFormat:
    """One column's value format. `kind`: date, timestamp, time or number; `pattern` matches a whole value."""

    name: str
    kind: str
    pattern: str  # the whole value (stripped), with named groups
    twelve_hour: bool = False
    thousands: str = ""
    decimal: str = "."

    def expected(self) -> str:
        """The format in words, for a bad row's reason."""
        return f"a {self.kind} written {self.name}" if self.kind != "number" else f"a number written like {self.name}"

    def apply(self, values: pl.Series) -> pl.Series:
        """The values as PostgreSQL ISO text; null where a value does not fit (and for NULL).

        Each value is matched whole by the format's pattern (Rust's regex: linear time). Dates and
        times are read by polars' strptime in the format's usual layout; only the values it leaves
        (one-digit hours, no seconds, a fraction, a date without its time) take the slower way,
        the pattern's groups put together column-wise.
        """
        text = values.cast(pl.String).str.strip_chars(_SPACES)
        fits = text.str.contains(self.pattern).fill_null(value=False)
        if self.kind == "number":
            out = self._number(text)
        else:
            out = self._fast(text)
            rest = fits & out.is_null()
            if rest.any():
                at = rest.arg_true()
                out = out.scatter(at, self._slow(text.gather(at)))
        return pl.select(pl.when(fits).then(out).otherwise(None)).to_series().alias(values.name)

    def _number(self, text: pl.Series) -> pl.Series:
        if self.thousands:
            sep = "[" + _SPACES + "]" if self.thousands == " " else re.escape(self.thousands)
            text = text.str.replace_all(sep, "")
        return text.str.replace(",", ".", literal=True) if self.decimal == "," else text

    def _layout(self) -> str:
        """The format's usual layout for strptime (chrono): two-digit fields, seconds as named."""
        clock = ("%I" if self.twelve_hour else "%H") + ":%M" + (":%S" if ":SS" in self.name else "") + (
            " %p" if self.twelve_hour else "")
        if self.kind == "time":
            return clock
        date = self.name.split(" ")[0].replace("YYYY", "%Y").replace("MM", "%m").replace("DD", "%d")
        return date if self.kind == "date" else date + " " + clock

    def _fast(self, text: pl.Series) -> pl.Series:
        layout = self._layout()
        if self.kind == "date":
            return text.str.strptime(pl.Date, layout, strict=False).dt.strftime("%Y-%m-%d")
        if self.kind == "time":
            return text.str.strptime(pl.Time, layout, strict=False).dt.strftime("%H:%M:%S")
        return text.str.strptime(pl.Datetime("us"), layout, strict=False).dt.strftime("%Y-%m-%d %H:%M:%S")

    def _slow(self, text: pl.Series) -> pl.Series:
        groups = pl.DataFrame({"v": text}).select(pl.col("v").str.extract_groups(self.pattern)).unnest("v")
        return groups.select(self._temporal()).to_series()

    def _temporal(self) -> pl.Expr:
        f = pl.col
        parts: list[pl.Expr] = []
        ok = pl.lit(value=True)
        if self.kind != "time":
            iso = pl.concat_str([f("y"), pl.lit("-"), f("m").str.zfill(2), pl.lit("-"), f("d").str.zfill(2)])
            ok = ok & iso.str.to_date("%Y-%m-%d", strict=False).is_not_null()
            parts.append(iso)
        if self.kind != "date":
            hour = f("H").cast(pl.Int32, strict=False)
            if self.twelve_hour:
                # A time needs its AM/PM in a 12-hour format; a date alone (timestamp) is midnight.
                ok = ok & (f("H").is_null() | (f("p").is_not_null() & hour.is_between(1, 12)))
                pm = f("p").str.to_uppercase() == "P"
                hour = (hour % 12) + pl.when(pm).then(12).otherwise(0)
            else:
                ok = ok & (f("H").is_null() | hour.is_between(0, 23))
            ok = ok & (f("M").is_null() | f("M").cast(pl.Int32, strict=False).is_between(0, 59))
            ok = ok & (f("S").is_null() | f("S").cast(pl.Int32, strict=False).is_between(0, 59))
            clock = pl.concat_str([hour.cast(pl.String).str.zfill(2), pl.lit(":"), f("M"), pl.lit(":"),
                                   f("S").fill_null("00"), f("f").fill_null("")])
            if self.kind == "timestamp":
                clock = pl.when(f("H").is_null()).then(pl.lit("00:00:00")).otherwise(clock)
                parts.append(pl.lit(" "))
            parts.append(clock)
        out = pl.concat_str(parts)
        anchor = f("y") if self.kind != "time" else f("H")
        return pl.when(anchor.is_not_null() & ok).then(out).otherwise(None).alias("v")


def _date_pattern(order: str, sep: str, time: str) -> str:
    """`time`: '' (a date), 'optional' (a timestamp), 'only' (a time); 12-hour when it ends in '12'."""
    twelve = time.endswith("12")
    clock = _TIME + (_AMPM if twelve else "")
    if time.startswith("only"):
        return "^" + clock + "$"
    s = re.escape(sep)
    date = s.join(_GROUP[c.lower()] for c in order)
    if not time:
        return "^" + date + "$"
    return "^" + date + r"(?:(?:[ T]|\s+)" + clock + ")?$"


def _number_pattern(thousands: str, decimal: str) -> str:
    d = re.escape(decimal)
    if not thousands:
        return r"^(?P<s>[+-]?)(?P<i>\d+)(?:" + d + r"(?P<f>\d+))?$"
    t = "[" + _SPACES + "]" if thousands == " " else re.escape(thousands)
    return r"^(?P<s>[+-]?)(?P<i>\d{1,3}(?:" + t + r"\d{3})+|\d+)(?:" + d + r"(?P<f>\d+))?$"


def number_format(thousands: str, decimal: str) -> ValueFormat:
    name = f"1{thousands}234{decimal}56" if thousands else f"1234{decimal}56"
    return ValueFormat(name, "number", _number_pattern(thousands, decimal), thousands=thousands, decimal=decimal)


def date_format(order: str, sep: str, time: str = "", seconds: bool = False) -> ValueFormat:
    """`time`: '' (a date), '24' or '12' (a timestamp: a date and a time of day), 'only24' or 'only12'."""
    clock = ""
    if time:
        twelve = time.endswith("12")
        clock = ("hh" if twelve else "HH") + ":MM" + (":SS" if seconds else "") + (" AM/PM" if twelve else "")
    if time.startswith("only"):
        return ValueFormat(clock, "time", _date_pattern(order, sep, time), twelve_hour=time.endswith("12"))
    name = sep.join(DATE_ORDERS[order]) + (" " + clock if clock else "")
    kind = "timestamp" if time else "date"
    pattern = _date_pattern(order, sep, "optional" + time if time else "")
    return ValueFormat(name, kind, pattern, twelve_hour=time.endswith("12"))


_DATE_NAME = re.compile(r"(?i)^(y{4}|m{1,2}|d{1,2})([/.\-])(y{4}|m{1,2}|d{1,2})\2(y{4}|m{1,2}|d{1,2})$")
_TIME_NAME = re.compile(r"(?i)^(h{1,2}):(m{1,2})(:(s{1,2}))?(\s*(am/pm|am|pm|tt|a/p))?$")


def parse_format(text: str) -> ValueFormat:
    """A format as a person writes it (`MM/DD/YYYY`, `DD.MM.YYYY HH:MM`, `1.234,56`); ConfigError if none."""
    name = " ".join(text.split())
    number = re.fullmatch(r"1([,. ']?)234([.,])56", name.replace("\u00a0", " ").replace("\u202f", " "))
    if number and number.group(1) != number.group(2):
        return number_format(number.group(1), number.group(2))
    date_part, _, time_part = name.partition(" ")
    if _TIME_NAME.match(name):
        date_part, time_part = "", name
    date = _DATE_NAME.match(date_part) if date_part else None
    clock = _TIME_NAME.match(time_part) if time_part else None
    if (date_part and date is None) or (time_part and clock is None) or not (date or clock):
        raise ConfigError(f"not a value format: {text!r}; for example {', '.join(EXAMPLES)}")
    time = ""
    seconds = False
    if clock is not None:
        twelve = bool(clock.group(5))
        time = ("" if date else "only") + ("12" if twelve else "24")
        seconds = bool(clock.group(3))
    if date is None:
        return date_format("YMD", "-", time, seconds)
    order = "".join(date.group(i)[0].upper() for i in (1, 3, 4))
    if order not in DATE_ORDERS:
        raise ConfigError(f"not a value format: {text!r}: the year comes first or last, with the month and day "
                          f"({', '.join(EXAMPLES[:4])})")
    return date_format(order, date.group(2), time, seconds)


def convert(frame: pl.DataFrame, formats: dict[str, ValueFormat]) -> tuple[pl.DataFrame, pl.Series | None]:
    """The frame with each formatted column as ISO text, and per row the first column whose value did
    not fit (null where every value fit; None when all rows fit)."""
    if not formats or not frame.height:
        return frame, None
    names = [c for c in formats if c in frame.columns]
    converted = frame.with_columns(formats[c].apply(frame.get_column(c)) for c in names)
    misses = [pl.when(frame[c].is_not_null() & converted[c].is_null()).then(pl.lit(c)) for c in names]
    first = frame.select(pl.coalesce(misses).alias("_miss")).to_series() if misses else None
    if first is None or first.null_count() == frame.height:
        return converted, None
    return converted, first


def infer(values: pl.Series, *, most: bool = False) -> ValueFormat | None:
    """The one format every value of a text column fits and none other reads differently; None otherwise.

    Only columns today's rules leave as text are asked: ISO dates and plain numbers need none.
    `most`: for a column that must be read as a date or a number anyway (an existing table's),
    the values no format reads at all (31.02.2024, 12x) are left out, if they are fewer than
    half: they become bad rows, where leaving the column to the server's DateStyle would read
    01.02.2024 as January 2 and refuse 15.02.2024.
    """
    from core.pgtypes import infer_pg_type

    s = values.drop_nulls()
    if s.dtype != pl.String:
        return None
    s = s.str.strip_chars(_SPACES)
    s = s.filter(s != "")
    if s.len() == 0 or (infer_pg_type(s) != "text" and not most):
        return None
    if most:
        readable = _readable(s)
        if readable.sum() * 2 <= s.len():
            return None
        s = s.filter(readable)
        if infer_pg_type(s) != "text":
            return None
    found = _temporal_candidates(s) or _number_candidates(s)
    if not found:
        return None
    readings = {tuple(_converted(s, f).to_list()) for f in found}
    if len(readings) != 1:
        return None  # the values read two ways (03/04: March or April; 1,234: 1234 or 1.234)
    chosen = found[0]
    converted = _converted(s, chosen)
    return chosen if infer_pg_type(converted) != "text" else None


def type_for(values: pl.Series, fmt: ValueFormat) -> str:
    """The PostgreSQL type a formatted column's values come to (text when they do not all fit)."""
    from core.pgtypes import infer_pg_type

    s = values.drop_nulls().cast(pl.String)
    converted = _converted(s, fmt)
    if converted.null_count():
        return "text"
    return infer_pg_type(converted)


def _converted(s: pl.Series, fmt: ValueFormat) -> pl.Series:
    return fmt.apply(s)


def _readable(s: pl.Series) -> pl.Series:
    """Per value (stripped, none null): whether any format reads it (a timestamp format reads a
    date alone too).

    A format reads only values its pattern matches, and a number format reads every one of them;
    a date format may still refuse one (31.02.2024, 25:00). So the patterns are matched in one
    pass, and only the date formats that match some value are applied: each application is
    a dozen polars calls, and applying all 26 took 40 ms for four values, a tenth of a small
    load's whole time, whenever a number column of an existing table held one odd value.
    """
    formats = _readers()
    matched = s.to_frame("v").select(
        pl.col("v").str.contains(f.pattern).alias(str(i)) for i, f in enumerate(formats))
    numbers = [str(i) for i, f in enumerate(formats) if f.kind == "number"]
    fits = matched.select(pl.any_horizontal(numbers)).to_series()
    for i, fmt in enumerate(formats):
        if fmt.kind != "number" and bool(matched[str(i)].any()) and not bool(fits.all()):
            fits = fits | fmt.apply(s).is_not_null()
    return fits


@functools.cache
def _readers() -> tuple[ValueFormat, ...]:
    """Every format inference knows, for _readable."""
    formats = [date_format(order, sep, clock) for order in DATE_ORDERS for sep in DATE_SEPARATORS
               for clock in ("24", "12")]
    formats += [date_format("YMD", "-", "only24"), date_format("YMD", "-", "only12")]
    formats += [number_format(t, d) for t, d in NUMBER_STYLES]
    return tuple(formats)


def _all_fit(s: pl.Series, fmt: ValueFormat) -> bool:
    return bool(s.str.contains(fmt.pattern).all()) and _converted(s, fmt).null_count() == 0


def _temporal_candidates(s: pl.Series) -> list[ValueFormat]:
    has_clock = s.str.contains(r"\d:\d\d")
    if not bool(has_clock.any()) and not bool(s.str.contains(r"\d[/.\-]\d").all()):
        return []
    ampm = s.str.contains(r"(?i)\d\s*[ap]\.?m\.?$")
    if bool((has_clock & ampm).any()) and not bool((~has_clock | ampm).all()):
        return []  # some times with AM/PM, some without
    twelve = bool(ampm.any())
    seconds = bool(s.str.contains(r"\d:\d\d:\d\d").any())
    if bool(has_clock.all()) and not bool(s.str.contains(r"\d[/.\-]\d").any()):
        fmt = date_format("YMD", "-", "only12" if twelve else "only24", seconds)
        return [fmt] if _all_fit(s, fmt) else []
    time = ("12" if twelve else "24") if bool(has_clock.any()) else ""
    found = []
    for sep in DATE_SEPARATORS:
        if not bool(s.str.contains(re.escape(sep), literal=False).all()):
            continue
        for order in DATE_ORDERS:
            fmt = date_format(order, sep, time, seconds)
            if _all_fit(s, fmt):
                found.append(fmt)
    return found


def _number_candidates(s: pl.Series) -> list[ValueFormat]:
    if not bool(s.str.contains(r"^[+-]?\d").all()):
        return []
    if bool(s.str.contains(r"^[+-]?0\d").any()):
        return []  # codes with leading zeros stay text
    return [f for f in (number_format(t, d) for t, d in NUMBER_STYLES) if _all_fit(s, f)]
