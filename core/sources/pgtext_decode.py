"""PostgreSQL's text COPY format, decoded as the server reads it (CopyReadAttributesText).

A record is one line; fields are split at the delimiter (a tab); a field that is exactly the
null marker (`\\N`) is NULL, and an empty field is an empty string. A backslash escapes:
`\\b \\f \\n \\r \\t \\v`, `\\ooo` (octal, 1-3 digits) and `\\xh`/`\\xhh` (hex) give that byte,
and any other character stands for itself (`\\\\` is a backslash, `\\<tab>` a tab in the
value, `\\<newline>` a newline, which continues the record on the next line).

Whole columns are decoded by polars (the simple escapes by literal replacement); only values
holding an octal, hex or other escape are decoded one by one, with the regex below (each
escape a fixed-length match: linear in the input).
"""

from __future__ import annotations

import re
from collections import Counter

import polars as pl

_ESCAPE = re.compile(rb"\\([0-7]{1,3}|x[0-9a-fA-F]{1,2}|.|\Z)", re.S)
_LETTERS = {b"b": b"\b", b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"v": b"\v"}
_SIMPLE = (("\\b", "\b"), ("\\f", "\f"), ("\\n", "\n"), ("\\r", "\r"), ("\\t", "\t"), ("\\v", "\v"))
_HOLD = "\x00"  # stands in for an escaped backslash while the other escapes are replaced (never in text)


class BadEscape(ValueError):
    """An escape that makes no text: a NUL byte, bytes that are not UTF-8, a lone final backslash."""


def _one(m: re.Match[bytes]) -> bytes:
    esc = m.group(1)
    if not esc:
        raise BadEscape("ends in a lone backslash")
    if esc[:1].isdigit():
        return bytes([int(esc, 8) & 0xFF])
    if esc[:1] == b"x" and len(esc) > 1:
        return bytes([int(esc[1:], 16)])
    return _LETTERS.get(esc, esc)


def decode_field(raw: str) -> str:
    """One field's text as the server stores it; BadEscape when it cannot be text."""
    if "\\" not in raw:
        return raw
    data = _ESCAPE.sub(_one, raw.encode("utf-8"))
    if b"\x00" in data:
        raise BadEscape("an escape makes a NUL byte, which text cannot hold")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadEscape(f"its escapes make bytes that are not UTF-8 (0x{data[exc.start]:02x})") from None


def split_fields(record: str, delimiter: str) -> list[str]:
    """The raw fields of one record: a delimiter after an escaping backslash is data."""
    if "\\" + delimiter not in record:
        return record.split(delimiter)
    fields: list[str] = []
    start = i = 0
    n = len(record)
    while i < n:
        c = record[i]
        if c == "\\":
            i += 2
            continue
        if c == delimiter:
            fields.append(record[start:i])
            start = i + 1
        i += 1
    fields.append(record[start:])
    return fields


def continues(line: bytes) -> bool:
    """True when the line ends in an escaping backslash: its newline is data (the record goes on)."""
    run = len(line) - len(line.rstrip(b"\\"))
    return run % 2 == 1


def unescape_column(series: pl.Series) -> tuple[pl.Series, dict[int, str]]:
    """A column of raw fields decoded, column-wise; {row: why} for values that make no text."""
    has = series.str.contains("\\", literal=True)
    if not has.any():
        return series, {}
    e = series.str.replace_all("\\\\", _HOLD, literal=True)
    for escape, char in _SIMPLE:
        e = e.str.replace_all(escape, char, literal=True)
    bad: dict[int, str] = {}
    rest = e.str.contains("\\", literal=True).fill_null(False)
    e = e.str.replace_all(_HOLD, "\\", literal=True)
    if rest.any():
        idx = rest.arg_true().to_list()
        values: list[str | None] = []
        for i in idx:
            try:
                values.append(decode_field(series[i]))
            except BadEscape as why:
                bad[i] = str(why)
                values.append(None)
        e = e.scatter(idx, pl.Series(values, dtype=pl.String))
    return e.alias(series.name), bad


# -- sniffing ---------------------------------------------------------------------------------

_NULL_FIELD = re.compile(rb"(?m)(?:^|\t)\\N(?=\t|\r?$)")
_ESCAPED = re.compile(rb"\\[\\tnrbfv]|\\[0-7]{3}")
_NAME = re.compile(r"[^\W\d][\w $.-]{0,62}")  # a column name as people write them
_IDENT = re.compile(r"[a-z_][a-z0-9_$]{0,62}")  # one PostgreSQL folds to itself (no quotes needed)


def looks_pgtext(head: bytes) -> bool:
    """A sample that shows PostgreSQL's text COPY format: tab-separated lines of one width (in
    its first 64 kB), with `\\N` fields or backslash escapes anywhere (which no CSV or plain TSV
    writer produces; a catalog's export may show its first one after hundreds of kB), or, with
    no backslash and no empty field at all, quotes inside fields and none around one: a CSV or
    TSV writer quotes a field that holds a quote, PostgreSQL's text format never does (its export
    of a jsonb column). (An empty field is NULL to a TSV of other writers, text here.)"""
    cut = head.rfind(b"\n")
    text = head[: cut + 1] if cut > 0 else head
    if b"\t" not in text:
        return False
    escapes = b"\\" in text and bool(_NULL_FIELD.search(text) or _ESCAPED.search(text))
    bare_quotes = (b"\\" not in text and b'"' in text and not _QUOTED_FIELD.search(text)
                   and not _EMPTY_FIELD.search(text))
    if not (escapes or bare_quotes):
        return False
    cut = text.rfind(b"\n", 0, 1 << 16)
    lines = [ln for ln in text[: cut + 1 if cut > 0 else len(text)].split(b"\n")[:500] if ln.strip()]
    widths = Counter(len(split_fields(ln.decode("utf-8", "replace"), "\t")) for ln in lines)
    width, count = widths.most_common(1)[0]
    return width >= 2 and count >= len(lines) - max(1, len(lines) // 10)  # a ragged record is the reader's to name


_QUOTED_FIELD = re.compile(rb'(?m)(?:^|\t)"')  # a field that starts with a quote: a CSV writer's quoting
_EMPTY_FIELD = re.compile(rb"(?m)(?:^|\t)(?=\t|\r?\n)")


def sniff_header(lines: list[list[str]]) -> bool:
    """Whether the first record names the columns. Only when the sample proves it: every field
    of the first record a distinct name, and some column whose other values are never names of
    that kind (numbers, dates, NULLs, JSON...; or, under lower-case identifiers such as
    PostgreSQL's own, values that are not one: 'Alice' under 'name'). PostgreSQL writes no
    header unless asked to."""
    if len(lines) < 2:
        return False
    first, rest = lines[0], [r for r in lines[1:] if len(r) == len(lines[0])]
    if not rest or len(set(first)) != len(first) or not all(_NAME.fullmatch(f) for f in first):
        return False
    kinds = (_NAME, _IDENT) if all(_IDENT.fullmatch(f) for f in first) else (_NAME,)
    for i in range(len(first)):
        values = [r[i] for r in rest if r[i] != "\\N"]
        if values and any(not any(kind.fullmatch(v) for v in values) for kind in kinds):
            return True
    return False
