"""Typed Arrow batches for binary COPY: text parsed column-wise by polars, encoded by pgpq.

Mapped batches are PostgreSQL input text. For each target column whose type has an exact
Arrow counterpart, polars parses the whole column at once (in Rust, without the GIL) and
pgpq (an Arrow-to-PostgreSQL binary COPY encoder written in Rust) encodes the batch.

A value is typed here only where polars reads it exactly as PostgreSQL would: strict
shapes (ISO dates, timestamps with at most microseconds, plain integers and decimals)
and nothing the server would round, clamp or refuse. Any other value (`infinity` dates,
`1e400`, a boolean spelled `tr`, an hour `24:00`) leaves the parsed column with a null
where the text had a value, and that batch goes as text COPY instead, for the server to
parse (core.strategies.copy.CopyBinary).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

# Shapes polars parses exactly as PostgreSQL does (anything else goes to the text converters).
# Year 0000 is refused by PostgreSQL but read by polars as 1 BC, hence the year's shape.
_YEAR = r"([1-9]\d{3}|0[1-9]\d{2}|00[1-9]\d|000[1-9])"
# Seconds may be left out (`2024-01-05 10:02`, as spreadsheets and strftime("%H:%M") write it):
# PostgreSQL reads the time as 10:02:00.
_TS = r"^" + _YEAR + r"-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?$"
_TSTZ = r"^" + _YEAR + r"-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?([+-]\d{2}(:?\d{2})?|Z)$"
_DATE = r"^" + _YEAR + r"-\d{2}-\d{2}$"
_TIME = r"^\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?$"
_UUID = r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
_FLOAT_WORD = r"(?i)^[+-]?(inf|infinity|nan)$"
_NONZERO_MANTISSA = r"^[^eE]*[1-9]"
_SPACE = " \t\n\r\v\f"  # C isspace
_BOOL = {"t": True, "true": True, "yes": True, "y": True, "on": True, "1": True,
         "f": False, "false": False, "no": False, "n": False, "off": False, "0": False}
_BASE = re.compile(r"^([a-z ]+?)\s*(\((\d+)(?:\s*,\s*(\d+))?\))?$")


def _where(s: pl.Series, pattern: str, parsed: pl.Series) -> pl.Series:
    """`parsed` where the text has the exact shape, null elsewhere."""
    return pl.select(pl.when(s.str.contains(pattern)).then(parsed).otherwise(None)).to_series()


def _strip(s: pl.Series) -> pl.Series:
    """Without the spaces PostgreSQL's number and boolean input skips (C isspace): polars'
    own strip_chars() would also drop Unicode spaces such as U+00A0, which the server refuses."""
    return s.str.strip_chars(_SPACE)


def _cast(s: pl.Series, dtype: pl.DataType | type[pl.DataType]) -> pl.Series:
    v = s.cast(dtype, strict=False)
    if v.null_count() == s.null_count():
        return v  # the usual column: no value has spaces around it, nothing to strip
    return _strip(s).cast(dtype, strict=False)


def _ints(dtype: pl.DataType | type[pl.DataType]) -> Callable[[pl.Series], pl.Series]:
    return lambda s: _cast(s, dtype)


def _floats(dtype: type[pl.Float32] | type[pl.Float64]) -> Callable[[pl.Series], pl.Series]:
    """double precision or real. polars parses straight to the width asked (a string read as
    Float32 is rounded once, as PostgreSQL's strtof does, not first to a double and then again)."""
    def parse(s: pl.Series) -> pl.Series:
        v = _cast(s, dtype)
        odd = v.is_infinite() | (v == 0)
        if not odd.any():
            return v
        # polars turns 1e400 (1e39 as real) into inf and 1e-400 into 0, where PostgreSQL refuses
        # both. Only those values' text is looked at: zeros are common (0.0 in a file of fares),
        # and the whole column's took 0.15 CPU-s per 1M values.
        at = odd.arg_true()
        v_odd, t = v.gather(at), _strip(s.gather(at))
        refused = ((v_odd.is_infinite() & ~t.str.contains(_FLOAT_WORD))
                   | ((v_odd == 0) & t.str.contains(_NONZERO_MANTISSA)))
        if not refused.any():
            return v
        return v.scatter(at.filter(refused), None)
    return parse


def _bool(s: pl.Series) -> pl.Series:
    # Most files spell booleans `true`/`false`: two comparisons; other spellings take the table.
    fast = pl.select(pl.when(s == "true").then(True).when(s == "false").then(False)
                     .otherwise(None).alias(s.name)).to_series()
    if fast.null_count() == s.null_count():
        return fast
    return _strip(s).str.to_lowercase().replace_strict(_BOOL, default=None, return_dtype=pl.Boolean)


def _date(s: pl.Series) -> pl.Series:
    from core.strategies.fixed_width_times import fixed_dates  # numpy: not on the raw path's start-up

    fixed = fixed_dates(s)
    if fixed is not None:
        return fixed
    return _where(s, _DATE, s.str.to_date("%Y-%m-%d", strict=False))


def _timestamp(s: pl.Series) -> pl.Series:
    from core.strategies.fixed_width_times import fixed_timestamps

    fixed = fixed_timestamps(s)  # one width on every row (the usual file): numpy, from the digits
    if fixed is not None:
        return fixed
    # Where the regex holds, the fields sit at fixed offsets: the date part goes through
    # polars' fast ISO-date path and the time of day is summed from its digits, which takes
    # half the time of str.to_datetime (chrono's format-driven parser). Hours past 23 and
    # leap seconds stay null, so PostgreSQL reads them (24:00 is next midnight there).
    c = pl.col("s")
    hour, minute = (c.str.slice(i, 2).cast(pl.Int64, strict=False) for i in (11, 14))
    second = pl.when(c.str.len_bytes() == 16).then(0).otherwise(c.str.slice(17, 2).cast(pl.Int64, strict=False))
    micros = pl.when(c.str.len_bytes() <= 19).then(0).otherwise(
        c.str.slice(20).str.pad_end(6, "0").cast(pl.Int64, strict=False))
    day = c.str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False).cast(pl.Datetime("us")).cast(pl.Int64)
    instant = day + ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros
    ok = c.str.contains(_TS) & (hour <= 23) & (minute <= 59) & (second <= 59)
    return (pl.DataFrame({"s": s}).lazy()
            .select(pl.when(ok).then(instant).otherwise(None).cast(pl.Datetime("us")).alias(s.name))
            .collect().to_series())


def _timestamptz(s: pl.Series, naive_utc: bool = False) -> pl.Series:
    """An instant in UTC (naive): binary timestamptz is microseconds since 2000-01-01 UTC. A value
    with no offset is a time in the session's TimeZone: typed here only when that is UTC
    (`naive_utc`), else left null, and its batch goes as text for the server to place."""
    from core.strategies.fixed_width_times import fixed_timestamptz

    fixed = fixed_timestamptz(s, naive_utc)  # timestamps of one width, any offsets: numpy and a few slices
    if fixed is not None:
        return fixed
    t = (s.str.replace("T", " ").str.replace(r"Z$", "+00:00")
         .str.replace(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2})([+-]|$)", "${1}:00${2}")  # no seconds: :00
         .str.replace(r"([+-]\d{2})$", "${1}:00").str.replace(r"([+-]\d{2})(\d{2})$", "${1}:${2}"))
    parsed = (t.str.to_datetime("%Y-%m-%d %H:%M:%S%.f%:z", time_unit="us", strict=False)
              .dt.convert_time_zone("UTC").dt.replace_time_zone(None))
    with_offset = _where(s, _TSTZ, parsed)
    if not naive_utc:
        return with_offset
    return pl.select(pl.coalesce(with_offset, _timestamp(s)).alias(s.name)).to_series()


def _time(s: pl.Series) -> pl.Series:
    seconds = s.str.to_time("%H:%M:%S%.f", strict=False)
    if seconds.null_count() == s.null_count():
        return _where(s, _TIME, seconds)
    minutes = s.str.to_time("%H:%M", strict=False)  # `10:02`: PostgreSQL reads 10:02:00
    return _where(s, _TIME, pl.select(pl.coalesce(seconds, minutes).alias(s.name)).to_series())


def _uuid(s: pl.Series) -> pl.Series:
    from core.strategies.canonical_uuids import canonical_uuids  # (numpy: never on the raw CSV path)

    canonical = canonical_uuids(s)
    if canonical is not None:
        return canonical
    raw = s.str.replace_all("-", "").str.decode("hex", strict=False)
    return _where(s, _UUID, raw)


def _numeric(precision: int, scale: int) -> Callable[[pl.Series], pl.Series]:
    # Only values the column holds without rounding: at most `scale` decimals and
    # `precision - scale` integer digits (PostgreSQL would round or refuse the others).
    whole = precision - scale
    shape = rf"^[+-]?\d{{1,{whole}}}(\.\d{{0,{scale}}})?$" if whole > 0 else rf"^[+-]?0?(\.\d{{0,{scale}}})?$"

    def parse(s: pl.Series) -> pl.Series:
        values = s.len() - s.null_count()
        shaped = s.str.contains(shape)
        t, fit = s, shaped.sum()
        if fit != values:  # spaces around some value (or no number at all)
            t = _strip(s)  # (the usual column has none: stripping every value took 40% of the parse)
            shaped = t.str.contains(shape)
            fit = shaped.sum()
        typed = t.cast(pl.Decimal(precision, scale), strict=False)  # exact for every value of the shape
        if fit == values:
            return typed  # the usual column: no selection (it took a third of the parse)
        return pl.select(pl.when(shaped).then(typed).otherwise(None)).to_series()

    return parse


def _text(s: pl.Series) -> pl.Series:
    return s


@dataclass(frozen=True)
class ArrowColumn:
    name: str
    parse: Callable[[pl.Series], pl.Series]  # text -> typed, null where not exactly typable
    arrow: Any  # pyarrow.DataType
    jsonb: bool = False


# The target types with an exact Arrow form (numeric only with a precision, up to 38 digits).
_FIXED_TYPES = frozenset({
    "smallint", "integer", "bigint", "double precision", "real", "boolean", "date", "timestamp without time zone",
    "timestamp with time zone", "time without time zone", "uuid", "text", "character varying", "character",
    "json", "jsonb",
})


def _binary_form(pg_type: str) -> bool:
    m = _BASE.match(pg_type.strip().lower())
    if not m:
        return False  # arrays, domains spelled with schema, anything unusual
    if m.group(1) == "numeric":
        return m.group(3) is not None and int(m.group(3)) <= 38
    return m.group(1) in _FIXED_TYPES


def untypable(columns: list[str], types: list[str]) -> list[tuple[str, str]]:
    """The (column, type) pairs with no exact Arrow form: what sends a load's rows as text."""
    return [(c, t) for c, t in zip(columns, types) if not _binary_form(t)]


def typable(types: list[str]) -> bool:
    """Whether arrow_columns() has a form for every type, asked without importing pyarrow: auto
    decides before the load starts, and pyarrow's import (0.1 s) is better spent beside the reader."""
    return all(_binary_form(t) for t in types)


def arrow_columns(columns: list[str], types: list[str], utc: bool = False) -> list[ArrowColumn] | None:
    """One typed column per target column, or None when some type has no exact Arrow form.
    `utc`: the load's sessions have TimeZone UTC (WriteContext.utc)."""
    if not typable(types):
        return None
    import pyarrow as pa

    fixed: dict[str, tuple[Callable[[pl.Series], pl.Series], Any]] = {
        "smallint": (_ints(pl.Int16), pa.int16()),
        "integer": (_ints(pl.Int32), pa.int32()),
        "bigint": (_ints(pl.Int64), pa.int64()),
        "double precision": (_floats(pl.Float64), pa.float64()),
        "real": (_floats(pl.Float32), pa.float32()),
        "boolean": (_bool, pa.bool_()),
        "date": (_date, pa.date32()),
        "timestamp without time zone": (_timestamp, pa.timestamp("us")),
        "timestamp with time zone": (functools.partial(_timestamptz, naive_utc=True) if utc else _timestamptz,
                                     pa.timestamp("us")),
        "time without time zone": (_time, pa.time64("us")),
        "uuid": (_uuid, pa.large_binary()),  # 16 bytes after their length, as uuid_recv reads them: no cast
        "text": (_text, pa.large_string()),
        "character varying": (_text, pa.large_string()),
        "character": (_text, pa.large_string()),
        "json": (_text, pa.large_string()),
        "jsonb": (_text, pa.large_string()),
    }
    assert set(fixed) == _FIXED_TYPES
    out: list[ArrowColumn] = []
    for name, pg_type in zip(columns, types):
        m = _BASE.match(pg_type.strip().lower())
        assert m is not None  # typable() said so
        base = m.group(1)
        if base == "numeric":  # (unconstrained numeric keeps each value's own scale: only text does that)
            p, sc = int(m.group(3)), int(m.group(4) or 0)
            out.append(ArrowColumn(name, _numeric(p, sc), pa.decimal128(p, sc)))
        else:
            parse, arrow = fixed[base]
            out.append(ArrowColumn(name, parse, arrow, jsonb=base == "jsonb"))
    return out


class ArrowEncoder:
    """Encodes mapped text batches as binary COPY tuples, or says a batch is not typable."""

    def __init__(self, columns: list[ArrowColumn]) -> None:
        import pyarrow as pa
        from pgpq import ArrowToPostgresBinaryEncoder
        from pgpq.encoders import LargeStringEncoderBuilder
        from pgpq.schema import Jsonb

        self.columns = columns
        self.schema = pa.schema([pa.field(c.name, c.arrow) for c in columns])
        encoders = {
            f.name: (LargeStringEncoderBuilder.new_with_output(f, Jsonb()) if c.jsonb
                     else ArrowToPostgresBinaryEncoder.infer_encoder(f))
            for f, c in zip(self.schema, columns)
        }
        self._encoders = encoders
        self._new = ArrowToPostgresBinaryEncoder.new_with_encoders
        self.untyped: tuple[str, str] | None = None  # the last batch sent as text: a column, and its first such value

    def header(self) -> bytes:
        return bytes(self._new(self.schema, self._encoders).write_header())

    def encode(self, frame: pl.DataFrame) -> memoryview | None:
        """The batch's tuples, or None when some value cannot be typed exactly here."""
        import pyarrow as pa

        arrays = []
        for col, name in zip(self.columns, frame.columns):
            text = frame.get_column(name)
            typed = col.parse(text) if text.dtype == pl.String else text
            if typed.null_count() != text.null_count():
                first = text.filter(typed.is_null() & text.is_not_null()).head(1).to_list()
                self.untyped = (name, str(first[0])[:60] if first else "")
                return None
            array = typed.to_arrow()
            # Most columns come out of polars in their Arrow type already: no cast (and no
            # import of pyarrow.compute, 40 ms) unless it differs (time64[ns], uuid bytes).
            arrays.append(array if array.type == col.arrow else array.cast(col.arrow))
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        # pgpq buffers tuples until finish(); one encoder per batch (2 µs) hands each batch
        # over whole, so batches from the text converters can sit between them in order.
        encoder = self._new(self.schema, self._encoders)
        encoder.write_header()  # its state machine wants one; the stream has its own
        head = encoder.write_batch(batch)  # (pgpq buffers: empty until finish)
        data = encoder.finish()
        if head:
            data = bytes(head) + bytes(data)
        return memoryview(data)[: -len(_TRAILER)]  # a view: the batch's bytes are not copied again


_TRAILER = b"\xff\xff"
