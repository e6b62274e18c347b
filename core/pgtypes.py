"""PostgreSQL type names: inference from text or polars types, and quick conversion checks."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal, InvalidOperation

import polars as pl

_BOOL = r"(?i)^(t|f|true|false|yes|no|y|n|on|off)$"
_INT = r"^[+-]?\d+$"
_DEC = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
_SPECIAL_FLOAT = r"(?i)^[+-]?(nan|inf|infinity)$"
_DATE = r"^\d{4}-\d{2}-\d{2}$"
_TS = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$"
_TSTZ = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)$"
_TIME = r"^\d{2}:\d{2}(:\d{2}(\.\d+)?)?$"
_UUID = r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
_FIXED_TIME = r"(?i)^([+-]?infinity|epoch)$"  # PostgreSQL's fixed special dates: values, not words
_RELATIVE = r"(?i)(?-u:\b)(?:now|today|tomorrow|yesterday)(?-u:\b)"  # see core.relative_dates
INT4 = 2**31
INT8 = 2**63


def _all(s: pl.Series, pattern: str) -> bool:
    return bool(s.str.contains(pattern).all())


_LEADING_ZERO = r"^[+-]?0\d"  # 007, 02134: a code, not a number ("0" and "0.5" are numbers)
_SUB_MICRO = r"\.\d{7,}"  # fractions of a second finer than PostgreSQL keeps


def _float_keeps(text: str) -> bool:
    """True when a double holds this number exactly as written (its value, not its spelling)."""
    try:
        value = float(text)
        return not math.isfinite(value) or Decimal(text) == Decimal(repr(value))
    except (ValueError, InvalidOperation):
        return False


def infer_pg_type(values: pl.Series) -> str:
    """The type that stores every value of a text column without losing information.

    Codes with leading zeros stay text; integers beyond int64 and decimals go to numeric,
    which keeps every digit and the scale as written (10.50); only exponent notation and
    NaN/Infinity become double precision, when no value has more digits than it keeps.
    """
    s = values.drop_nulls().cast(pl.String).str.strip_chars()
    s = s.filter(s != "")
    if s.len() == 0:
        return "text"
    if _all(s, _BOOL):
        return "boolean"
    numeric_like = s.str.contains(_INT) | s.str.contains(_DEC) | s.str.contains(_SPECIAL_FLOAT)
    if bool(numeric_like.all()) and bool(s.str.contains(_LEADING_ZERO).any()):
        return "text"
    if _all(s, _INT):
        ints = s.cast(pl.Int64, strict=False)
        if ints.null_count():
            return "numeric"
        lo, hi = ints.min(), ints.max()
        assert isinstance(lo, int)
        assert isinstance(hi, int)
        return "integer" if lo >= -INT4 and hi < INT4 else "bigint"
    if bool(numeric_like.all()):
        if s.str.contains(r"[eE]|(?i)nan|inf").any() and all(_float_keeps(v) for v in s.head(1000).to_list()):
            return "double precision"
        return "numeric"
    # 'epoch' and '±infinity' are dates too, when real dates stand beside them.
    dated = s.filter(~s.str.contains(_FIXED_TIME))
    dated = dated if dated.len() else s
    if _all(dated, _DATE):
        return "date" if bool(_real_date(dated).all()) else "text"
    if bool(s.str.contains(_SUB_MICRO).any()):
        return "text"  # a timestamp or time would round these to microseconds
    if _all(dated, _TSTZ) and bool(_real_date(dated).all()):
        return "timestamptz"
    if _all(dated, _TS) and bool(_real_date(dated).all()):
        return "timestamp"
    if _all(s, _TIME):
        return "time"
    if _all(s, _UUID):
        # uuid prints lower case: upper-case ids would come back changed.
        return "uuid" if bool((s == s.str.to_lowercase()).all()) else "text"
    if _all(s, r"^\s*[\[{]"):
        try:
            for v in s.head(200).to_list():
                json.loads(v)
            return "jsonb"
        except ValueError:
            return "text"
    return "text"


def _real_date(s: pl.Series) -> pl.Series:
    """Per value: its first ten characters are a date of the calendar (not 2024-02-30)."""
    return s.str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False).is_not_null()


def _fits(s: pl.Series, pg_type: str) -> pl.Series | None:
    """Per value (stripped, not null): PostgreSQL's input for `pg_type` takes it, column-wise; None
    for types checked value by value (value_converts). Relative date words never fit."""
    fixed = s.str.contains(_FIXED_TIME)
    if pg_type == "date":
        return (s.str.contains(_DATE) & _real_date(s)) | fixed
    if pg_type in ("timestamp", "timestamptz"):
        return (s.str.contains(_TS) | s.str.contains(_TSTZ)) & _real_date(s) | fixed
    patterns = {"boolean": _BOOL, "integer": _INT, "bigint": _INT, "smallint": _INT, "time": _TIME, "uuid": _UUID}
    if pg_type in patterns:
        return s.str.contains(patterns[pg_type])
    if pg_type in ("numeric", "double precision", "real"):
        return s.str.contains(_INT) | s.str.contains(_DEC) | s.str.contains(_SPECIAL_FLOAT)
    return None


def refused(values: pl.Series, pg_type: str) -> pl.Series:
    """Per value of a text column: it would not load as `pg_type` (or would load as a relative date)."""
    t = normalize_type(pg_type)
    s = values.cast(pl.String).str.strip_chars()
    fits = _fits(s, t.split("(")[0])
    if fits is None:
        return s.map_elements(lambda v: not value_converts(v, t), return_dtype=pl.Boolean).fill_null(False)
    return ~fits.fill_null(True)


def is_relative(values: pl.Series) -> pl.Series:
    """Per value: holds a relative date word (core.relative_dates refuses it in date and time columns)."""
    return values.cast(pl.String).str.contains(_RELATIVE).fill_null(False)


_NEAR = (("boolean", "booleans"), ("integer", "integers"), ("numeric", "numbers"), ("date", "dates"),
         ("timestamp", "timestamps"), ("time", "times"), ("uuid", "uuids"))


def text_reason(values: pl.Series) -> str:
    """Why a text column is text when most of its values are of another type: the values that
    made it so ('' when it is text through and through)."""
    s = values.drop_nulls().cast(pl.String).str.strip_chars()
    s = s.filter(s != "")
    if s.len() < 2:
        return ""
    best: tuple[int, str, pl.Series] | None = None
    for pg_type, plural in _NEAR:
        fits = _fits(s, pg_type)
        assert fits is not None
        n = int(fits.sum())
        if best is None or n > best[0]:
            best = (n, plural, fits)
    assert best is not None
    n, plural, fits = best
    if n == s.len() and plural in ("integers", "numbers") and bool(s.str.contains(_LEADING_ZERO).any()):
        zeros = s.filter(s.str.contains(_LEADING_ZERO)).unique(maintain_order=True)
        return f"{_shown(zeros)} made it text: leading zeros would be lost as a number"
    if n < 2 or n * 2 < s.len() or n == s.len():
        return ""
    odd = s.filter(~fits).unique(maintain_order=True)
    relative = " (relative date words are not dates)" if bool(is_relative(odd).any()) else ""
    return (f"{_shown(odd)} made it text{relative}; the other {n:,} sample value{'s' if n != 1 else ''} "
            f"{'are' if n != 1 else 'is'} {plural}")


def _shown(values: pl.Series, most: int = 3) -> str:
    shown = ", ".join(repr(str(v)[:20]) for v in values.head(most).to_list())
    return shown + (", …" if values.len() > most else "")


def infer_from_dtype(dtype: pl.DataType) -> str:
    if dtype in (pl.Int8, pl.Int16, pl.UInt8):
        return "smallint"
    if dtype in (pl.Int32, pl.UInt16):
        return "integer"
    if dtype in (pl.Int64, pl.UInt32):
        return "bigint"
    if dtype == pl.UInt64:
        return "numeric"
    if dtype == pl.Float32:
        return "real"
    if dtype == pl.Float64:
        return "double precision"
    if isinstance(dtype, pl.Decimal):
        return f"numeric({dtype.precision},{dtype.scale})" if dtype.precision else "numeric"
    if dtype == pl.Boolean:
        return "boolean"
    if dtype == pl.Date:
        return "date"
    if isinstance(dtype, pl.Datetime):
        return "timestamptz" if dtype.time_zone else "timestamp"
    if dtype == pl.Time:
        return "time"
    if isinstance(dtype, pl.Duration):
        return "interval"
    if dtype == pl.Binary:
        return "bytea"
    if isinstance(dtype, (pl.List, pl.Array, pl.Struct, pl.Object)):
        return "jsonb"
    return "text"


_ALIASES = {
    "int": "integer", "int4": "integer", "int8": "bigint", "int2": "smallint", "float8": "double precision",
    "float4": "real", "bool": "boolean", "timestamp with time zone": "timestamptz",
    "timestamp without time zone": "timestamp", "varchar": "character varying", "decimal": "numeric",
    "time without time zone": "time",
}


def normalize_type(name: str) -> str:
    t = re.sub(r"\s+", " ", name.strip().lower())
    m = re.match(r"^([a-z ]+?)\s*(\(.*\))?$", t)
    if not m:
        return t
    base, args = m.group(1), m.group(2) or ""
    return _ALIASES.get(base, base) + args.replace(" ", "")


def value_converts(value: str, pg_type: str) -> bool:
    """Best-effort client-side check, for the mapping editor's warnings."""
    t = normalize_type(pg_type)
    base = t.split("(")[0]
    v = value.strip()
    checks = {
        "boolean": _BOOL, "integer": _INT, "bigint": _INT, "smallint": _INT, "date": _DATE,
        "timestamp": _TS + "|" + _TSTZ, "timestamptz": _TSTZ + "|" + _TS, "time": _TIME, "uuid": _UUID,
    }
    if base in checks:
        return re.match(checks[base], v) is not None
    if base in ("numeric", "double precision", "real"):
        return re.match(_DEC, v) is not None or re.match(_SPECIAL_FLOAT, v) is not None
    if base in ("json", "jsonb"):
        try:
            json.loads(value)
            return True
        except ValueError:
            return False
    if base == "character varying" and "(" in t:
        return len(value) <= int(t.split("(")[1].rstrip(")"))
    return True


# The pick-list of the mapping editor's type column (any other type name can still be typed).
COMMON_TYPES = (
    "text", "integer", "bigint", "smallint", "numeric", "double precision", "real", "boolean", "date",
    "timestamp", "timestamptz", "time", "interval", "uuid", "jsonb", "json", "bytea", "character varying(255)",
    "inet",
)


_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")


def widened_type(pg_type: str, value: str | None) -> str | None:
    """The type a new table's column takes instead of `pg_type` (inferred from the file's first
    rows) to hold `value` as well, which it refused: an integer column a decimal or a larger
    number (numeric), any other text; None when the column is text already."""
    t = normalize_type(pg_type)
    if t == "text":
        return None
    if t in ("smallint", "integer", "bigint") and value is not None and _NUMBER.fullmatch(value):
        return "numeric"
    return "text"
