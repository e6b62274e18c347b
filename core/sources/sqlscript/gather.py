"""Find whole INSERT statements in a block of text by quote parity.

A statement that starts with a head the careful parser already accepted ends at the
first ";\\n" after which the count of quotes is even. That can be fooled (an E'\\''
string, a comment holding a quote); bulk_values then refuses the statement's shape and
the caller reads it again the careful way, so a wrong guess costs time, never a wrong
row. The work is str.split and polars column operations: linear, and no Python loop
per statement unless quotes are unbalanced.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

OCDN = " ON CONFLICT DO NOTHING"
END = ";\n"


@dataclass
class Gathered:
    bodies: pl.Series  # the text after the head, without ';' or ON CONFLICT DO NOTHING
    on_conflict: pl.Series  # bool: the statement ended with ON CONFLICT DO NOTHING
    first_line: pl.Series  # 0-based line of each statement in the block
    start: pl.Series  # offset of each statement in the block (bytes, or characters for one-byte encodings)
    end: pl.Series  # offset after each statement's ";\n"
    lines: int  # lines the statements take
    checked: bool = False  # bodies are single rows, already checked (gather_rows)


def gather(text: str, head: str, *, single_byte: bool) -> Gathered | None:
    """The statements at the start of `text` that begin with `head`, or None if none ends in it."""
    parts = text.split(END)
    parts.pop()  # what follows the last ";\n": not a whole statement
    if not parts:
        return None
    s = pl.Series("s", parts, dtype=pl.String)
    odd = s.str.count_matches("'", literal=True) % 2 == 1
    if odd.any():
        parts = _merge_open_quotes(parts, odd.to_list())
        if not parts:
            return None
        s = pl.Series("s", parts, dtype=pl.String)
    bad = (~s.str.starts_with(head)).arg_true()
    if len(bad):
        s = s.head(int(bad[0]))
        if not len(s):
            return None
    size = (s.str.len_chars() if single_byte else s.str.len_bytes()).cast(pl.Int64) + len(END)
    end = size.cum_sum()
    newlines = s.str.count_matches("\n", literal=True).cast(pl.Int64) + 1
    first_line = newlines.cum_sum() - newlines
    body = s.str.slice(len(head)).str.strip_chars_start()
    oc = body.str.ends_with(OCDN)
    if oc.any():
        body = pl.select(pl.when(oc).then(body.str.strip_suffix(OCDN)).otherwise(body)).to_series()
    return Gathered(body, oc, first_line, end - size, end, int(newlines.sum()))


def gather_rows(s: pl.Series, head: str, width: int, *, single_byte: bool) -> Gathered | bool:
    """pg_dump's --inserts and --column-inserts: a block of one-row statements, found and checked in one pass.

    `s` is a block's text split at ";\\n" (what followed the last one dropped). Its statements,
    as long as they start with `head` and one space, must each be exactly one row as pg_dump
    writes it (bulk_values's Rust-regex check, which also proves the quotes balanced: a ";\\n"
    inside a string leaves two pieces that fail it). Their bodies, the rows `(...)`, come
    back already checked. Otherwise True when there is no such statement to take here (none,
    or another head first), False when the first statement does not have this shape; the
    caller then gathers the block by quote parity (gather), which takes every other shape.
    """
    from core.sources.sqlscript.bulk_values import check_rows

    if not len(s):
        return True
    lead = head + " ("  # pg_dump's "VALUES (": the body is the row itself, nothing to strip
    other = (~s.str.starts_with(lead)).arg_true()
    if len(other):
        if int(other[0]) == 0:
            return not s.str.starts_with(head).head(1).all()
        s = s.head(int(other[0]))
    body = s.str.slice(len(lead) - 1)
    if not check_rows(body, width).all():
        return False
    size = (s.str.len_chars() if single_byte else s.str.len_bytes()).cast(pl.Int64) + len(END)
    end = size.cum_sum()
    newlines = s.str.count_matches("\n", literal=True).cast(pl.Int64) + 1
    first_line = newlines.cum_sum() - newlines
    oc = pl.Series("oc", [False], dtype=pl.Boolean).extend_constant(False, len(s) - 1)
    return Gathered(body, oc, first_line, end - size, end, int(newlines.sum()), checked=True)


def _merge_open_quotes(parts: list[str], odd: list[bool]) -> list[str]:
    """Join pieces split at a ";\\n" inside a quoted string; drop an unfinished last one."""
    out: list[str] = []
    cur: list[str] = []
    open_ = False
    for part, o in zip(parts, odd):
        cur.append(part)
        open_ ^= o
        if not open_:
            out.append(END.join(cur))
            cur = []
    return out
