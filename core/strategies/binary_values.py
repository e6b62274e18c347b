"""Text-to-Python conversion for binary COPY, column by column.

Binary COPY needs real values of each column's type. Mapped batches are text, so
each column gets a converter; values it cannot read raise BadValue with the row.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal, InvalidOperation
from typing import Any

import polars as pl
from psycopg.types.json import Jsonb

from core.errors import ConfigError


class BadValue(Exception):
    """A value the client could not convert; `row` is its index in the frame."""

    def __init__(self, row: int, column: str, value: str, reason: str) -> None:
        self.row, self.column, self.value, self.reason = row, column, value, reason
        super().__init__(reason)


_TRUE = {"t", "true", "yes", "y", "on", "1"}
_FALSE = {"f", "false", "no", "n", "off", "0"}


def _bool(v: str) -> bool:
    s = v.strip().lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    raise ValueError("not a boolean")


def _float(v: str) -> float:
    s = v.strip().lower()
    return float({"infinity": "inf", "+infinity": "inf", "-infinity": "-inf"}.get(s, s))


def _numeric(v: str) -> Decimal:
    try:
        return Decimal(v.strip())
    except InvalidOperation:
        raise ValueError("not a number") from None


def _tstz(v: str) -> datetime:
    d = datetime.fromisoformat(v.strip())
    if d.tzinfo is None:
        raise ValueError("timestamptz value without a time zone")
    return d


@dataclass(frozen=True)
class Converter:
    name: str
    wire_type: str
    fn: Callable[[str], Any] | None  # None: the text goes as it is
    vector: Callable[[pl.Series], pl.Series] | None = None  # column-wise fast path
    pg_type: str = ""  # as the table spells it, for messages

    def column(self, s: pl.Series) -> list[Any]:
        if self.vector is not None:
            out = self.vector(s)
            bad = out.is_null() & s.is_not_null()
            if bad.any():
                i = int(bad.arg_true()[0])
                raise BadValue(i, self.name, str(s[i]), f"invalid input syntax for type {self.pg_type}")
            return out.to_list()
        values = s.to_list()
        if self.fn is None:
            return values
        fn = self.fn
        out_list: list[Any] = []
        for i, v in enumerate(values):
            if v is None:
                out_list.append(None)
                continue
            try:
                out_list.append(fn(v))
            except (ValueError, TypeError, OverflowError) as exc:
                raise BadValue(i, self.name, v, f"invalid input syntax for type {self.pg_type}: {exc}") from None
        return out_list


def _int_vector(s: pl.Series) -> pl.Series:
    return s.str.strip_chars().cast(pl.Int64, strict=False)


_BASE = re.compile(r"^([a-z ]+?)\s*(\(.*\))?(\[\])?$")

_BY_TYPE: dict[str, tuple[str, Callable[[str], Any] | None]] = {
    "text": ("text", None),
    "character varying": ("varchar", None),
    "character": ("bpchar", None),
    "name": ("name", None),
    "boolean": ("bool", _bool),
    "real": ("float4", _float),
    "double precision": ("float8", _float),
    "numeric": ("numeric", _numeric),
    "date": ("date", lambda v: date.fromisoformat(v.strip())),
    "time without time zone": ("time", lambda v: time.fromisoformat(v.strip())),
    "timestamp without time zone": ("timestamp", lambda v: datetime.fromisoformat(v.strip())),
    "timestamp with time zone": ("timestamptz", _tstz),
    "uuid": ("uuid", lambda v: uuid.UUID(v.strip())),
    "jsonb": ("jsonb", lambda v: Jsonb(json.loads(v))),
}
_INTS = {"smallint": "int2", "integer": "int4", "bigint": "int8"}


def converters_for(types: list[str], columns: list[str]) -> list[Converter]:
    out = []
    for name, pg_type in zip(columns, types):
        m = _BASE.match(pg_type.strip().lower())
        base = m.group(1) if m and not m.group(3) else pg_type
        if base in _INTS:
            out.append(Converter(name, _INTS[base], None, _int_vector, pg_type))
        elif base in _BY_TYPE:
            wire, fn = _BY_TYPE[base]
            out.append(Converter(name, wire, fn, None, pg_type))
        else:
            raise ConfigError(f"copy-binary cannot send column {name!r} of type {pg_type}; use copy-csv for this table")
    return out
